#!/usr/bin/env bash
# Installs every dependency (Debian packages, the npm references of the tokenizer tests),
# builds hfstatic with its tests and runs the whole suite. HFSTATIC_WERROR=ON (as CI runs it) fails
# the build on any compiler warning.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ -f scripts/install-test-references.sh ]; then bash scripts/install-test-references.sh; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHFSTATIC_WERROR="${HFSTATIC_WERROR:-OFF}"
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
