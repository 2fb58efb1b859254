// The WordPiece model (BERT): each word is split greedily into the longest vocabulary entries,
// continuations carrying continuing_subword_prefix; a word with an unknown part, or longer than
// max_input_chars_per_word, becomes unk_token.
#include <algorithm>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic {
namespace tokenizer {

void parse_wordpiece_model(Tokenizer::Impl& t, const nlohmann::json& model, size_t added_count) {
  const nlohmann::json& vocab = model["vocab"];
  t.vocab.reserve(vocab.size() + added_count);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const auto id = it.value().get<int32_t>();
    t.id_to_token[static_cast<size_t>(id)] = it.key();
    t.vocab.emplace(it.key(), id);
    t.max_token_bytes = std::max(t.max_token_bytes, it.key().size());
  }
  const std::string unk = get_string(model, "unk_token", "tokenizer.json: model (WordPiece)");
  auto it = t.vocab.find(unk);
  if (it == t.vocab.end()) fail("tokenizer.json: model.unk_token \"", unk, "\" is not in the vocabulary");
  t.unk_id = it->second;
  t.continuing_subword_prefix = "##";
  if (model.contains("continuing_subword_prefix") && model["continuing_subword_prefix"].is_string())
    t.continuing_subword_prefix = model["continuing_subword_prefix"].get<std::string>();
  if (model.contains("max_input_chars_per_word")) {
    const nlohmann::json& m = model["max_input_chars_per_word"];
    if (!m.is_number_unsigned())
      fail("tokenizer.json: model.max_input_chars_per_word: expected a non-negative integer");
    t.max_input_chars_per_word = m.get<size_t>();
  }
}

}  // namespace tokenizer

void Tokenizer::Impl::wordpiece_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  thread_local std::vector<size_t> bounds;  // byte offset of each code point, plus the end
  bounds.clear();
  const char* end = word.data() + word.size();
  for (size_t i = 0; i < word.size();) {
    bounds.push_back(i);
    char32_t cp;
    i += unicode::decode(word.data() + i, end, cp);
  }
  bounds.push_back(word.size());
  if (bounds.size() - 1 > max_input_chars_per_word) {
    out.push_back(*unk_id);
    return;
  }
  const size_t mark = out.size();
  thread_local std::string candidate;
  size_t start = 0;  // index into bounds
  while (start + 1 < bounds.size()) {
    // Ends further than the longest vocabulary entry cannot match.
    const auto limit = std::upper_bound(bounds.begin() + static_cast<std::ptrdiff_t>(start), bounds.end(),
                                        bounds[start] + max_token_bytes);
    size_t stop = static_cast<size_t>(limit - bounds.begin()) - 1;
    int32_t found = -1;
    for (; stop > start; --stop) {
      const std::string_view piece = word.substr(bounds[start], bounds[stop] - bounds[start]);
      if (start > 0) {
        candidate.assign(continuing_subword_prefix).append(piece);
        if (auto it = vocab.find(std::string_view(candidate)); it != vocab.end()) found = it->second;
      } else if (auto it = vocab.find(piece); it != vocab.end()) {
        found = it->second;
      }
      if (found >= 0) break;
    }
    if (found < 0) {
      out.resize(mark);
      out.push_back(*unk_id);
      return;
    }
    out.push_back(found);
    start = stop;
  }
}

}  // namespace hfstatic
