#!/usr/bin/env bash
# Installs the dependencies, builds hfstatic and runs it: with no arguments, on the default
# program linked into the tool. Arguments go to `hfstatic run` (e.g. -p "text" -n 64 --stats).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target hfstatic_cli
exec build/hfstatic run "$@"
