#!/usr/bin/env bash
# Installs every Debian package that hfstatic's build, tests, benchmarks and tools need.
# Run as root (or with sudo) on Debian 12. Safe to run again.
set -euo pipefail
# --train: also what tools/train-demo/train.py needs (PyTorch, the text it trains on, a fast BLAS).
train=0
for arg in "$@"; do
  case "$arg" in
    --train) train=1 ;;
    *) echo "usage: $0 [--train]" >&2; exit 2 ;;
  esac
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
packages=(
  build-essential cmake ninja-build pkg-config   # toolchain
  libgtest-dev libgmock-dev googletest           # unit tests
  nlohmann-json3-dev                             # JSON headers, program and checkpoint metadata
  libcpp-httplib-dev                             # HTTP server of hfstatic serve
  python3 python3-numpy                          # independent NumPy reference of the HF forward pass
  python3-jinja2                                 # Python Jinja2: the chat templates' second reference (tests/chat)
  python3-dev pybind11-dev python3-pytest        # the Python module (python/) and its tests (tests/python)
  python3-pip python3-venv                       # pip install of the Python module (README.md, "Python")
  clang libclang-rt-14-dev llvm                  # fuzz/ (libFuzzer) and sanitizer runtimes
  clang-format                                   # scripts/check-format.sh (CI)
)
# Node.js (with npm) runs the Hugging Face tokenizer reference; keep a Node.js that is already
# installed (some come with their own npm, which conflicts with Debian's npm package).
command -v node >/dev/null || packages+=(nodejs npm)
train_packages=(
  python3-torch                                  # trains the demo model (models/demo)
  bible-kjv bible-kjv-text                       # its text: the King James Bible, and the program that decodes it
  libopenblas0-pthread                           # Debian's torch uses the system BLAS; the reference one is ~10x slower
)
[ "$train" -eq 0 ] || packages+=("${train_packages[@]}")
$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
