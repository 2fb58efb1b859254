#!/usr/bin/env bash
# npm-ci-pinned.sh DIR WHAT: installs DIR's npm packages exactly as its package-lock.json pins
# them (npm ci), unless DIR/node_modules already matches the lock file (a stamp of its hash).
# WHAT names them in the messages. Needs Node.js and npm (scripts/install-deps.sh) and access
# to the npm registry.
set -euo pipefail
dir="$1" what="$2"
command -v npm >/dev/null || { echo "npm not found: run scripts/install-deps.sh first" >&2; exit 1; }
stamp="$dir/node_modules/.hfstatic-lock.sha256"
want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "$what: up to date ($dir/node_modules)"
  exit 0
fi
cd "$dir"
npm ci --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
echo "$what: installed in $dir/node_modules"
