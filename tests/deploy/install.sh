#!/usr/bin/env bash
# Installs what tests/deploy/haproxy_check.sh needs beyond scripts/install-deps.sh: Debian's
# haproxy package (2.6 on Debian 12) and the OpenAI client for Node.js (the openai npm package),
# exactly as pinned in tests/deploy/package-lock.json. Run as root (or with sudo); needs Debian's
# archive and the npm registry. Safe to run again: npm does nothing when node_modules already
# matches the lock file.
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! command -v haproxy >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # The package enables haproxy.service with Debian's sample configuration; the check runs its
  # own haproxy in the foreground and needs no service.
  $SUDO apt-get install -y -qq --no-install-recommends haproxy >/dev/null
fi
haproxy -v | sed -n 1p
"$dir/../../scripts/npm-ci-pinned.sh" "$dir" "the openai package"
