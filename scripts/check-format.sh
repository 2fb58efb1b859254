#!/usr/bin/env bash
# Fails when a C++ source in the tree differs from what clang-format (.clang-format at the
# root, Debian's clang-format) makes of it; prints the files. Usage: scripts/check-format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format not found: run scripts/install-deps.sh" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.inc' | grep -v '^src/tokenizer/unicode_tables.inc$')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" -gt 0 ]; then
  printf 'not formatted (scripts/check-format.sh --fix): %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "formatted: ${#files[@]} files"
