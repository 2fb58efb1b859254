#!/usr/bin/env bash
# Prints encode throughput of the C++ tokenizer next to the JS reference on the same text.
# usage: bench/tokenizer/run.sh [BUILD_DIR [MODEL...]]   (default: build, every model; builds bench_tokenizer)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
shift $(($# > 0 ? 1 : 0))
"$root/scripts/install-test-references.sh" >/dev/null
if ! cmake --build "$build" --target bench_tokenizer >/dev/null; then
  echo "cannot build bench_tokenizer in $build (is bench/ added to the top-level CMakeLists.txt?)" >&2
  exit 1
fi
exe="$(find "$build" -name bench_tokenizer -type f -perm -u+x | head -n1)"
# The reference runs first: it also writes the tokenizer files that models.mjs assembles.
ref="$(cd "$root/tools/tokenizer-reference" && node bench.mjs "$root/tests/tokenizer/corpus" "$@")"
cpp="$("$exe" "$@")"
printf '%-14s %12s %12s %8s\n' model "C++ MB/s" "JS MB/s" ratio
join <(echo "$cpp" | awk '/MB\/s/ {print $1, $2}' | sort) <(echo "$ref" | awk '/MB\/s/ {print $1, $2}' | sort) |
  awk '{printf "%-14s %12.2f %12.2f %7.1fx\n", $1, $2, $3, $2 / $3}'
