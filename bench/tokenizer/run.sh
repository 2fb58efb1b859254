#!/usr/bin/env bash
# Prints encode throughput of the C++ tokenizer next to the JS reference on the same text.
# usage: bench/tokenizer/run.sh [BUILD_DIR]   (default: build; builds bench_tokenizer there)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
"$root/scripts/install-test-references.sh" >/dev/null
if ! cmake --build "$build" --target bench_tokenizer >/dev/null; then
  echo "cannot build bench_tokenizer in $build (is bench/ added to the top-level CMakeLists.txt?)" >&2
  exit 1
fi
exe="$(find "$build" -name bench_tokenizer -type f -perm -u+x | head -n1)"
cpp="$("$exe")"
ref="$(cd "$root/tools/tokenizer-reference" && node bench.mjs "$root/tests/tokenizer/corpus")"
printf '%-14s %12s %12s %8s\n' model "C++ MB/s" "JS MB/s" ratio
join <(echo "$cpp" | awk '/MB\/s/ {print $1, $2}' | sort) <(echo "$ref" | awk '/MB\/s/ {print $1, $2}' | sort) |
  awk '{printf "%-14s %12.2f %12.2f %7.1fx\n", $1, $2, $3, $2 / $3}'
