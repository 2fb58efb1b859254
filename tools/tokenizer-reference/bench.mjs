// Encode throughput of the reference (@huggingface/tokenizers) on the same text as
// bench/tokenizer/bench_tokenizer: the corpus files concatenated, repeated to ~2 MB.
// usage: node bench.mjs CORPUS_DIR [MODEL...]
import fs from "node:fs";
import path from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { MODELS, loadModel } from "./models.mjs";

const corpusDir = process.argv[2];
const wanted = process.argv.slice(3);
const corpus = fs
  .readdirSync(corpusDir)
  .sort()
  .map((f) => fs.readFileSync(path.join(corpusDir, f)))
  .reduce((a, b) => Buffer.concat([a, b]), Buffer.alloc(0))
  .toString("utf8");
let text = "";
while (Buffer.byteLength(text, "utf8") < 2 << 20) text += corpus;
const bytes = Buffer.byteLength(text, "utf8");
console.log(`corpus ${(bytes / 1e6).toFixed(2)} MB`);
for (const model of MODELS) {
  if (wanted.length && !wanted.includes(model.name)) continue;
  const m = loadModel(model);
  const tok = new Tokenizer(m.tokenizerJson, m.tokenizerConfig);
  tok.encode(corpus);
  let best = 0;
  let n = 0;
  for (let rep = 0; rep < 3; rep++) {
    const t0 = process.hrtime.bigint();
    n = tok.encode(text).ids.length;
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    best = Math.max(best, bytes / 1e6 / s);
  }
  console.log(`${model.name.padEnd(14)} ${best.toFixed(2).padStart(8)} MB/s  (${n} tokens)`);
}
