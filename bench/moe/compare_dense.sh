#!/bin/bash
# Mixture of experts against a dense model of its active size: OLMoE-1B-7B's shapes
# (preset olmoe-1b-7b: 64 experts of 1024, top 8) and a dense llama of the same active shapes
# (preset olmoe-1b-7b-dense: one MLP of 8192), random weights, both exported the same way and
# timed by `hfstatic bench` (docs/performance.md, "Mixture of experts").
#
# usage: bench/moe/compare_dense.sh [LAYERS (default 4 of 16)] [THREADS (default 2)] [WEIGHTS (default int4)]
# Needs build/hfstatic; writes checkpoints and programs under ${TMPDIR:-/tmp}/hfstatic-moe
# (about 8 GB at 4 layers). Per-token figures scale with the layers; the ratios hold at any depth.
set -euo pipefail
layers=${1:-4}
threads=${2:-2}
weights=${3:-int4}
here=$(cd "$(dirname "$0")/../.." && pwd)
tool="$here/build/hfstatic"
work="${TMPDIR:-/tmp}/hfstatic-moe"
mkdir -p "$work"
for preset in olmoe-1b-7b olmoe-1b-7b-dense; do
  ckpt="$work/$preset-$layers"
  program="$work/$preset-$layers-$weights.hfs"
  [ -f "$ckpt/config.json" ] || "$tool" make-checkpoint --preset "$preset" --num-layers "$layers" --seed 1 -o "$ckpt"
  [ -f "$program" ] || "$tool" export "$ckpt" -o "$program" --prefill-len 128 --max-context 1024 \
    --cache-dtype float16 --weights-dtype "$weights" -q
  for prompt in 16 128; do
    echo "== $preset, $layers layers, $weights, -t $threads, -p $prompt"
    "$tool" bench -m "$program" -p "$prompt" -n 64 -t "$threads" -r 5
  done
done
