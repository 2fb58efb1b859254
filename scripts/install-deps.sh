#!/usr/bin/env bash
# Installs every Debian package that hfstatic's build, tests, benchmarks and tools need.
# Run as root (or with sudo) on Debian 12. Safe to run again.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
packages=(
  build-essential cmake ninja-build pkg-config   # toolchain
  libgtest-dev libgmock-dev googletest           # unit tests
  nlohmann-json3-dev                             # JSON headers, program and checkpoint metadata
  python3 python3-numpy                          # independent NumPy reference of the HF forward pass
)
# Node.js (with npm) runs the Hugging Face tokenizer reference; keep a Node.js that is already
# installed (some come with their own npm, which conflicts with Debian's npm package).
command -v node >/dev/null || packages+=(nodejs npm)
$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
