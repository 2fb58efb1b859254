#!/usr/bin/env bash
# Writes the seed corpus of every harness into OUT/<harness>/ from real files: tiny programs
# exported by the hfstatic tool, tiny checkpoints (config.json, shards, index), the demo model's
# and a generated checkpoint's tokenizer.json, the tokenizer test corpus and chat templates,
# and typical command lines. Usage: fuzz/make-seeds.sh OUT HFSTATIC_TOOL
set -euo pipefail
cd "$(dirname "$0")/.."
out="$1"
tool="$2"
root="$PWD"
rm -rf "$out"
mkdir -p "$out"/{program,checkpoint,tokenizer,quant,args}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
delim=$'\n=====hfstatic-part=====\n'   # fuzz_common.h kDelimiter

tiny() {  # tiny NAME ARGS...: a small random checkpoint in the Hugging Face layout
  local name="$1"; shift
  /usr/bin/python3 tests/reference/make_tiny_checkpoint.py "$work/$name" --hidden-size 8 --intermediate-size 16 \
    --layers 1 --heads 2 --kv-heads 1 --vocab-size 32 "$@" >/dev/null
}
tiny llama
tiny qwen3 --model-type qwen3 --dtype BF16
tiny qwen2 --model-type qwen2 --dtype F16
tiny mistral --model-type mistral --shards 2
tiny llama32 --hidden-size 32 --intermediate-size 288  # widths groups of 32 divide; 288: a block of 8, then 1

# program: exported programs, each with a small context so that one step is cheap.
"$tool" export "$work/llama" -o "$out/program/llama.hfs" --max-context 8 --prefill-len 4 -q >/dev/null
"$tool" export "$work/qwen3" -o "$out/program/qwen3-f16.hfs" --max-context 8 --prefill-len 2 --cache-dtype float16 -q >/dev/null
"$tool" export "$work/qwen2" -o "$out/program/qwen2-bf16.hfs" --max-context 6 --prefill-len 3 --weights-dtype bfloat16 -q >/dev/null
"$tool" export "$work/llama32" -o "$out/program/llama-int8.hfs" --max-context 8 --prefill-len 4 --weights-dtype int8 -q >/dev/null
"$tool" export "$work/llama32" -o "$out/program/llama-int4.hfs" --max-context 8 --prefill-len 4 --weights-dtype int4 \
  --group-size 32 -q >/dev/null
"$tool" export "$work/mistral" -o "$out/program/mistral-repeat.hfs" --max-context 8 --prefill-len 4 --repeat-state \
  --mutation-order reverse -q >/dev/null

# checkpoint: config.json, a shard and (for sharded ones) the index, split by the delimiter.
for m in llama qwen3 qwen2; do
  { cat "$work/$m/config.json"; printf '%s' "$delim"; cat "$work/$m/model.safetensors"; } > "$out/checkpoint/$m"
done
{ cat "$work/mistral/config.json"; printf '%s' "$delim"; cat "$work/mistral/model-00001-of-00002.safetensors"
  printf '%s' "$delim"; sed 's/model-0000[12]-of-00002/model-00001-of-00001/g' "$work/mistral/model.safetensors.index.json"; } \
  > "$out/checkpoint/mistral-sharded"
cp models/demo/config.json "$out/checkpoint/demo-config"
for p in $("$tool" make-checkpoint --list | awk '{print $1}' | grep tiny); do
  "$tool" make-checkpoint --preset "$p" -o "$work/preset-$p" >/dev/null
  cp "$work/preset-$p/config.json" "$out/checkpoint/preset-$p"
done

# tokenizer: 'j' tokenizer.json, 't' text, 'd' ids, 'c' chat template (fuzz_tokenizer.cpp).
{ printf 'j'; cat models/demo/tokenizer.json; } > "$out/tokenizer/j-demo"
for p in "$work"/preset-*; do
  { printf 'j'; cat "$p/tokenizer.json"; } > "$out/tokenizer/j-$(basename "$p")"
done
for f in tests/tokenizer/corpus/*; do { printf 't'; head -c 4096 "$f"; } > "$out/tokenizer/t-$(basename "$f")"; done
printf 't%s' 'In the beginning God created the heaven and the earth.' > "$out/tokenizer/t-demo"
printf 'd\x01\x00\x41\x00\x42\x01\xff\x00\x00\x01\x07\x02' > "$out/tokenizer/d-ids"
for f in tests/tokenizer/templates/*.jinja; do { printf 'c'; cat "$f"; } > "$out/tokenizer/c-$(basename "$f")"; done
/usr/bin/python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); t=c.get("chat_template"); t and sys.stdout.write("c"+(t if isinstance(t,str) else t[0]["template"]))' \
  models/demo/tokenizer_config.json > "$out/tokenizer/c-demo"
[ -s "$out/tokenizer/c-demo" ] || rm "$out/tokenizer/c-demo"
# The hostile tokenizer files and templates kept as regressions (each starts with its mode byte).
for f in tests/regressions/tokenizer/*; do cp "$f" "$out/tokenizer/r-$(basename "$f")"; done

# quant: byte 0 picks a base export (fuzz_quant.cpp), then 4-byte edits (op, a, b, c): each base
# untouched, each with a tensor moved to the end of the page, and the regressions.
for b in 0 1 2 3 4 5 6; do
  printf "\\x0$b" > "$out/quant/base-$b"
  printf "\\x0$b\\x03\\x00\\x00\\x0$b" > "$out/quant/moved-$b"
done
for f in tests/regressions/quant/*; do cp "$f" "$out/quant/r-$(basename "$f")"; done

# args: NUL-separated argv.
i=0
while IFS= read -r line; do
  i=$((i + 1))
  printf '%s' "$line" | tr ' ' '\0' > "$out/args/argv-$i"
done <<'ARGS'
ckpt -o out.hfs --max-context 512 --prefill-len=32 --cache-dtype float16 -q
--out=x.hfs --weights-dtype bfloat16 --repeat-state --mutation-order reverse dir
ckpt -o q.hfs --weights-dtype int4 --group-size 64 -q
-m q.hfs -f text.txt --ctx 64 --threads 2
-m model.hfs -p hello -n 32 --temp 0.7 --top-k 40 --top-p 0.9 --seed 7 --stats
--model=model.hfs --tokens 1,2,3 -t 2 --stop END --ignore-eos --chat --system be
-n -9223372036854775808 --temp=1e308 --top-p nan -- -p positional
ARGS
cd "$out" && for h in program checkpoint tokenizer quant args; do echo "seeds/$h: $(ls "$h" | wc -l) files"; done
