// Prints the reference encodings/decodings of the corpus for every model as JSON on stdout.
// usage: node reference.mjs CORPUS_DIR
// Input bytes are turned into a JS string with Buffer#toString("utf8"), which replaces each
// maximal ill-formed UTF-8 subsequence by U+FFFD (what the C++ tokenizer does too).
import { Tokenizer } from "@huggingface/tokenizers";
import { MODELS, loadModel, loadCorpus } from "./models.mjs";

const corpusDir = process.argv[2];
if (!corpusDir) {
  console.error("usage: node reference.mjs CORPUS_DIR");
  process.exit(2);
}
const cases = loadCorpus(corpusDir);
const out = {
  cases: cases.map((c) => ({ name: c.name, hex: c.bytes.toString("hex") })),
  models: [],
};
for (const model of MODELS) {
  const m = loadModel(model);
  const tok = new Tokenizer(m.tokenizerJson, m.tokenizerConfig);
  // Hugging Face's Unigram (Rust) fuses consecutive unknown characters into one unk token; this
  // reference emits one per character, so its runs of unk_id are fused here.
  const unk = m.tokenizerJson.model.type === "Unigram" ? m.tokenizerJson.model.unk_id : undefined;
  const fuse = (ids) => (unk === undefined ? ids : ids.filter((id, i) => !(id === unk && ids[i - 1] === unk)));
  const results = cases.map((c) => {
    const text = c.bytes.toString("utf8");
    const ids = fuse(tok.encode(text).ids);
    const idsPlain = fuse(tok.encode(text, { add_special_tokens: false }).ids);
    return {
      ids,
      ids_no_special: idsPlain,
      decode: tok.decode(ids),
      decode_skip_special: tok.decode(ids, { skip_special_tokens: true }),
    };
  });
  const entry = { name: model.name, tokenizer: m.tokenizerPath, results };
  // Assembled files travel with the output: a cached output must not depend on node_modules.
  if (model.build) {
    entry.tokenizer_json = JSON.stringify(m.tokenizerJson);
    entry.tokenizer_config_json = JSON.stringify(m.tokenizerConfig);
  }
  out.models.push(entry);
}
process.stdout.write(JSON.stringify(out));
