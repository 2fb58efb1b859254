// A hand-made byte-level BPE tokenizer.json whose encodings are known by construction.
#pragma once
#include <string>

namespace hfstatic::test {

// vocab: h e l o Ġ w r d he ll hell hello Ġw, added: <|end|> (13, special), <|bos|> (14, special),
// <extra> (15, not special). merges: "h e", "l l", "he ll", "hell o", "Ġ w".
// "hello world" -> hello | Ġw o r l d = [11, 12, 3, 6, 2, 7]; with special tokens [14, ...].
inline std::string tiny_tokenizer_json(const std::string& model_override = "",
                                       const std::string& merges_override = "") {
  const std::string merges = merges_override.empty() ? R"(["h e", "l l", "he ll", "hell o", "Ġ w"])" : merges_override;
  const std::string model =
      model_override.empty()
          ? R"({"type": "BPE", "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "Ġ": 4, "w": 5, "r": 6, "d": 7,
        "he": 8, "ll": 9, "hell": 10, "hello": 11, "Ġw": 12}, "merges": )" +
                merges + "}"
          : model_override;
  return R"({
    "version": "1.0",
    "added_tokens": [
      {"id": 13, "content": "<|end|>", "special": true, "lstrip": false, "rstrip": false, "normalized": false, "single_word": false},
      {"id": 14, "content": "<|bos|>", "special": true, "lstrip": false, "rstrip": false, "normalized": false, "single_word": false},
      {"id": 15, "content": "<extra>", "special": false, "lstrip": false, "rstrip": false, "normalized": false, "single_word": false}
    ],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<|bos|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [], "special_tokens": {"<|bos|>": {"id": "<|bos|>", "ids": [14], "tokens": ["<|bos|>"]}}},
    "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
    "model": )" +
         model + "}";
}

}  // namespace hfstatic::test
