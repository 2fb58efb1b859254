// Hugging Face tokenizer.json runtime: BPE models (byte-level and SentencePiece-style), added and
// special tokens, normalizers, pre-tokenizers, post-processors, decoders and streaming decode.
// See README.md in this folder for the supported formats and the input policy.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace hfstatic {

// Thrown by Tokenizer::encode when the text makes more tokens than its max_tokens.
class TokenLimitError : public Error {
 public:
  explicit TokenLimitError(size_t max_tokens)
      : Error(cat("more than ", max_tokens, " tokens")), max_tokens_(max_tokens) {}
  size_t max_tokens() const { return max_tokens_; }

 private:
  size_t max_tokens_;
};

class Tokenizer {
 public:
  // tokenizer_config_json may be empty. Throws Error naming the offending key on bad input.
  static Tokenizer from_json(const std::string& tokenizer_json, const std::string& tokenizer_config_json);
  // Reads tokenizer.json at `path`; a sibling tokenizer_config.json is used when present.
  static Tokenizer from_file(const std::string& path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Invalid UTF-8 in `text` is replaced by U+FFFD per maximal ill-formed subsequence first.
  // add_special_tokens: apply the post-processor (bos/eos...). parse_special: recognise special
  // added tokens written in the text; when false they are tokenized as ordinary text.
  // max_tokens: throws TokenLimitError ("more than N tokens") as soon as the ids would pass it,
  // having tokenized little more than the text of those tokens: callers that can only take so
  // many (a model's context) pass that many.
  static constexpr size_t kNoTokenLimit = SIZE_MAX;
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true, bool parse_special = true,
                              size_t max_tokens = kNoTokenLimit) const;
  // Ids outside [0, vocab_size()) throw Error. Output is always valid UTF-8.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const;

  bool is_special(int32_t id) const;
  std::optional<int32_t> token_id(std::string_view token) const;
  // Token string of an id (vocabulary form, e.g. "Ġhello" or "▁hello"); throws when out of range.
  const std::string& token(int32_t id) const;
  int32_t vocab_size() const;
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  const std::string& bos_token() const;  // empty when none
  const std::string& eos_token() const;

  // The chat template from tokenizer_config.json ("default" one when it is a list); empty if none.
  // Rendering it is the chat module's (chat/chat_template.h).
  const std::string& chat_template() const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class StreamDecoder;
};

// Incremental decoding: push ids one at a time. Returned pieces never end inside a UTF-8
// sequence, and the concatenation of all pushes plus flush() equals decode(all ids).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false);
  // Decodes what comes next as the continuation of `context` (the ids before it, e.g. a prompt;
  // the last few are kept), not as the start of a text: a SentencePiece-style decoder strips the
  // space of a text's first word, not of the word that follows a prompt. Before the first push.
  void continue_after(std::span<const int32_t> context);
  std::string push(int32_t id);
  // Emits whatever is still held back (e.g. an incomplete byte sequence, as U+FFFD) and resets.
  std::string flush();

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  std::string prefix_;
  size_t prefix_index_ = 0;
};

}  // namespace hfstatic
