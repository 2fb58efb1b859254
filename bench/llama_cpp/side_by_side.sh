#!/bin/bash
# hfstatic against llama.cpp on the same random weights and the same bits, in one run: float16
# against F16, int8 against Q8_0, int4 against Q4_0 (llama-quantize --pure, so the embedding
# and logits head are Q4_0 too, as hfstatic's int4 quantizes them). Prints, per thread count and
# weight type, prompt tokens/s for 16 and 128 tokens (the prompt from an empty cache) and decode
# tokens/s over 64 tokens, each the median of -r 5, and their ratios (docs/performance.md).
#
# Then decode again in PAIRED_ROUNDS rounds (default 5; 0 skips them): each round one 64-token
# decode of each program back to back, in alternating order, and the ratio of the pair; the
# median and range of those ratios hold up on a host whose speed moves between minutes, where
# the first table's medians, taken minutes apart, need not.
#
# usage: bench/llama_cpp/side_by_side.sh LLAMA_CPP_SRC [PRESET (smollm2-135m)] [THREADS ("1 2")]
#   LLAMA_CPP_SRC: a llama.cpp source tree (a fetched snapshot; nothing is downloaded here).
#   It is built once (llama-bench and llama-quantize, -DGGML_NATIVE=ON) under the work folder;
#   LLAMA_CPP_COMMIT names its commit in the report when the tree is not a git checkout.
# Needs build/hfstatic and Debian's /usr/bin/python3 (NumPy; and python3-sentencepiece, which the
# gguf-py of trees before mid-2025 imports); writes under ${TMPDIR:-/tmp}/hfstatic-llama-cpp.
# Not part of CI. Run it twice, dropping the page cache before each run (docs/performance.md,
# "Preparation"): the first run times freshly written files, which are only partly in huge pages.
set -euo pipefail
[ $# -ge 1 ] || { sed -n '13,20p' "$0" >&2; exit 2; }
src=$(cd "$1" && pwd)
preset=${2:-smollm2-135m}
threads=${3:-"1 2"}
rounds=${PAIRED_ROUNDS:-5}
[[ "$rounds" =~ ^[0-9]+$ ]] || { echo "side_by_side.sh: PAIRED_ROUNDS is '$rounds', not a count of rounds" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
tool="$here/build/hfstatic"
py=/usr/bin/python3
work="${TMPDIR:-/tmp}/hfstatic-llama-cpp"
[ -x "$tool" ] || { echo "side_by_side.sh: $tool is missing (scripts/build.sh first)" >&2; exit 1; }
# llama-bench sits under tools/ since mid-2025 and under examples/ before.
if [ -f "$src/tools/llama-bench/llama-bench.cpp" ]; then tools_flags=(-DLLAMA_BUILD_EXAMPLES=OFF)
elif [ -f "$src/examples/llama-bench/llama-bench.cpp" ]; then tools_flags=(-DLLAMA_BUILD_EXAMPLES=ON)
else echo "side_by_side.sh: $src is not a llama.cpp tree (no tools/ or examples/llama-bench)" >&2; exit 1; fi
mkdir -p "$work"

if [ ! -x "$work/llama-build/bin/llama-bench" ]; then
  cmake -S "$src" -B "$work/llama-build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF "${tools_flags[@]}" -DLLAMA_BUILD_SERVER=OFF > "$work/cmake.log"
  cmake --build "$work/llama-build" -j"$(nproc)" --target llama-bench llama-quantize > "$work/build.log"
fi
llama_commit=${LLAMA_CPP_COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo "(commit unknown)")}

ckpt="$work/$preset"
[ -f "$ckpt/config.json" ] || "$tool" make-checkpoint --preset "$preset" --seed 1 -o "$ckpt"
[ -f "$work/$preset-f16.gguf" ] ||
  PYTHONPATH="$src/gguf-py" "$py" "$here/bench/llama_cpp/hf_to_gguf.py" "$ckpt" "$work/$preset-f16.gguf"
for q in Q8_0 Q4_0; do
  [ -f "$work/$preset-$q.gguf" ] ||
    "$work/llama-build/bin/llama-quantize" --pure "$work/$preset-f16.gguf" "$work/$preset-$q.gguf" "$q" > "$work/quantize.log" 2>&1
done
declare -A gguf=([float16]=f16 [int8]=Q8_0 [int4]=Q4_0)
for weights in float16 int8 int4; do
  [ -f "$work/$preset-$weights.hfs" ] || "$tool" export "$ckpt" -o "$work/$preset-$weights.hfs" --prefill-len 128 \
    --max-context 1024 --cache-dtype float16 --weights-dtype "$weights" -q
done

results="$work/results.jsonl"
: > "$results"
for t in $threads; do
  for weights in float16 int8 int4; do
    echo "== -t $t, $weights against ${gguf[$weights]}" >&2
    p16=$("$tool" bench -m "$work/$preset-$weights.hfs" -p 16 -n 0 -t "$t" -r 5 --json --no-ceilings)
    p128=$("$tool" bench -m "$work/$preset-$weights.hfs" -p 128 -n 64 -t "$t" -r 5 --json)
    llama=$("$work/llama-build/bin/llama-bench" -m "$work/$preset-${gguf[$weights]}.gguf" -p 16,128 -n 64 -t "$t" \
      -r 5 -o json 2> /dev/null)
    printf '{"threads": %s, "weights": "%s", "p16": %s, "p128": %s, "llama": %s}\n' "$t" "$weights" \
      "$(echo "$p16" | tr -d '\n')" "$(echo "$p128" | tr -d '\n')" "$(echo "$llama" | tr -d '\n')" >> "$results"
  done
done

cpu="$(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p'))"
"$py" - "$results" "$preset" "$llama_commit" "$cpu" <<'EOF'
import json, sys
path, preset, commit, cpu = sys.argv[1:5]
first = json.loads(open(path).readline())
print("%s, random weights, %s, hfstatic kernels %s; llama.cpp %s." % (preset, cpu, first["p128"]["isa"], commit))
print("tokens/s, median of 5; ratio = hfstatic / llama.cpp")
print("hfstatic: --prefill-len 128, float16 cache; llama.cpp: llama-bench defaults (float16 cache)\n")
print("| threads | weights | pp16 | llama.cpp pp16 | ratio | pp128 | llama.cpp pp128 | ratio | tg64 | llama.cpp tg64 | ratio | tg64 of read pass |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for line in open(path):
    r = json.loads(line)
    ll = {(x["n_prompt"], x["n_gen"]): x["avg_ts"] for x in r["llama"]}
    ours = [r["p16"]["pp"]["tokens_per_s"]["median"], r["p128"]["pp"]["tokens_per_s"]["median"],
            r["p128"]["tg"]["tokens_per_s"]["median"]]
    theirs = [ll[(16, 0)], ll[(128, 0)], ll[(0, 64)]]
    cells = []
    for a, b in zip(ours, theirs):
        cells += ["%.1f" % a, "%.1f" % b, "%.2fx" % (a / b)]
    read = r["p128"]["tg"].get("fraction_of_bandwidth_paired", {}).get("median")
    cells.append("%.0f%%" % (100 * read) if read else "-")
    print("| %d | %s | %s |" % (r["threads"], r["weights"], " | ".join(cells)))
EOF

[ "$rounds" -gt 0 ] || exit 0
paired="$work/paired.jsonl"
: > "$paired"
ours() { "$tool" bench -m "$work/$preset-$1.hfs" -p 16 -n 64 -t "$2" -r 1 --json | tr -d '\n'; }
theirs() {
  "$work/llama-build/bin/llama-bench" -m "$work/$preset-${gguf[$1]}.gguf" -p 0 -n 64 -t "$2" -r 1 -o json 2> /dev/null |
    tr -d '\n'
}
for t in $threads; do
  for weights in float16 int8 int4; do
    echo "== paired decode, -t $t, $weights against ${gguf[$weights]}, $rounds rounds" >&2
    for r in $(seq "$rounds"); do
      if [ $((r % 2)) -eq 1 ]; then a=$(ours "$weights" "$t"); b=$(theirs "$weights" "$t")
      else b=$(theirs "$weights" "$t"); a=$(ours "$weights" "$t"); fi
      printf '{"threads": %s, "weights": "%s", "ours": %s, "llama": %s}\n' "$t" "$weights" "$a" "$b" >> "$paired"
    done
  done
done
"$py" - "$paired" "$rounds" <<'EOF'
import json, statistics, sys
path, rounds = sys.argv[1], sys.argv[2]
runs = {}
for line in open(path):
    r = json.loads(line)
    ours, theirs = r["ours"]["tg"]["tokens_per_s"]["median"], r["llama"][0]["avg_ts"]
    read = r["ours"]["tg"].get("fraction_of_bandwidth_paired", {}).get("median")
    runs.setdefault((r["threads"], r["weights"]), []).append((ours, theirs, ours / theirs, read))
def cell(xs, fmt):
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(xs), min(xs), max(xs))
print("\ndecode in %s paired rounds (a 64-token decode of each program back to back): median (range)\n" % rounds)
print("| threads | weights | tg64 | llama.cpp tg64 | ratio of each pair | tg64 of read pass |")
print("|---|---|---|---|---|---|")
for (t, weights), rs in runs.items():
    reads = [100 * x[3] for x in rs if x[3]]
    print("| %d | %s | %s | %s | %s | %s |" % (t, weights, cell([x[0] for x in rs], "%.1f"),
          cell([x[1] for x in rs], "%.1f"), cell([x[2] for x in rs], "%.2fx"),
          cell(reads, "%.0f%%") if reads else "-"))
EOF
