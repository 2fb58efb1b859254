#!/usr/bin/env bash
# Builds the whole project with AddressSanitizer + UndefinedBehaviorSanitizer (GCC: libraries -O1, tests -Og, line tables) in
# build-asan and runs the test suite there. Any sanitizer report fails the test that caused it.
# Usage: scripts/test-sanitizers.sh [extra ctest arguments]
# Excluded (see docs/reliability.md): nothing by default; set HFSTATIC_SANITIZE_EXCLUDE to a
# ctest -E regular expression to skip tests (e.g. the slow tokenizer parity corpus).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${HFSTATIC_JOBS:-$(nproc)}"
build="${HFSTATIC_ASAN_BUILD:-build-asan}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHFSTATIC_SANITIZE=address,undefined \
  -DHFSTATIC_BUILD_BENCH=OFF
cmake --build "$build" -j"$jobs"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
exclude=()
[ -z "${HFSTATIC_SANITIZE_EXCLUDE:-}" ] || exclude=(-E "$HFSTATIC_SANITIZE_EXCLUDE")
ctest --test-dir "$build" --output-on-failure -j"$jobs" "${exclude[@]}" "$@"
