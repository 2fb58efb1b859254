// The Unigram model (SentencePiece conversions such as T5): the segmentation of each word with
// the highest total piece score (Viterbi over a byte trie of the pieces), a character no piece
// covers scoring as unk (the lowest score minus 10); consecutive unknown characters fuse into one
// unk, or become <0xXX> byte tokens with byte_fallback. Memory is linear in the word.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic {
namespace tokenizer {

int32_t unigram_vocab_max_id(const nlohmann::json& model, int64_t id_limit) {
  const nlohmann::json& vocab = require(model, "vocab", "tokenizer.json: model");
  if (!vocab.is_array()) fail("tokenizer.json: model.vocab: expected a list of [piece, score] for a Unigram model");
  if (static_cast<int64_t>(vocab.size()) > id_limit)
    fail("tokenizer.json: model.vocab: ", token_id_range_error(static_cast<int64_t>(vocab.size()) - 1, id_limit));
  for (size_t i = 0; i < vocab.size(); ++i) {
    const nlohmann::json& e = vocab[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
      fail("tokenizer.json: model.vocab[", i, "]: expected [piece, score]");
    if (!std::isfinite(e[1].get<double>())) fail("tokenizer.json: model.vocab[", i, "]: the score is not finite");
  }
  return static_cast<int32_t>(vocab.size()) - 1;
}

void parse_unigram_model(Tokenizer::Impl& t, const nlohmann::json& model, size_t added_count) {
  const nlohmann::json& vocab = model["vocab"];
  t.vocab.reserve(vocab.size() + added_count);
  t.scores.assign(vocab.size(), 0.0);
  double min_score = 0;
  for (size_t i = 0; i < vocab.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    std::string piece = vocab[i][0].get<std::string>();
    t.scores[i] = vocab[i][1].get<double>();
    min_score = i == 0 ? t.scores[i] : std::min(min_score, t.scores[i]);
    t.pieces.insert(piece, id);
    t.vocab.emplace(piece, id);
    t.id_to_token[i] = std::move(piece);
  }
  t.unk_score = min_score - 10.0;
  if (model.contains("unk_id") && !model["unk_id"].is_null()) {
    const nlohmann::json& u = model["unk_id"];
    if (!u.is_number_unsigned() || u.get<uint64_t>() >= vocab.size())
      fail("tokenizer.json: model.unk_id: expected an index into model.vocab (", vocab.size(), " entries)");
    t.unk_id = u.get<int32_t>();
    t.scores[static_cast<size_t>(*t.unk_id)] = t.unk_score;
  }
  t.byte_fallback = get_bool(model, "byte_fallback", false);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = t.vocab.find(std::string_view(name));
    t.byte_fallback_ids[b] = it == t.vocab.end() ? -1 : it->second;
  }
}

}  // namespace tokenizer

namespace {

struct Best {
  double score = 0;
  size_t start = 0;  // byte offset where the last piece begins
  int32_t id = -1;   // -1: an unknown character; -2: not reached
};

}  // namespace

void Tokenizer::Impl::unigram_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  const size_t n = word.size();
  thread_local std::vector<Best> best;
  best.assign(n + 1, Best{0, 0, -2});
  best[0].id = -1;
  const char* end = word.data() + n;
  for (size_t b = 0; b < n;) {
    if (best[b].id == -2) fail("unigram: unreachable position ", b);  // cannot happen: every character is covered
    char32_t cp;
    const size_t char_len = unicode::decode(word.data() + b, end, cp);
    bool single = false;
    auto relax = [&](size_t e, double score, int32_t id) {
      const double total = best[b].score + score;
      if (best[e].id == -2 || total > best[e].score) best[e] = Best{total, b, id};
    };
    int32_t node = 0;
    for (size_t k = b; k < n; ++k) {
      node = pieces.child(node, static_cast<unsigned char>(word[k]));
      if (node < 0) break;
      const int32_t id = pieces.nodes[static_cast<size_t>(node)].token;
      if (id < 0) continue;
      relax(k + 1, scores[static_cast<size_t>(id)], id);
      single = single || k + 1 == b + char_len;
    }
    if (!single) relax(b + char_len, unk_score, -1);
    b += char_len;
  }
  // Walk back; fuse consecutive unknown characters.
  thread_local std::vector<std::pair<size_t, int32_t>> path;  // (start, id)
  path.clear();
  for (size_t e = n; e > 0;) {
    const Best& s = best[e];
    if (s.id < 0 && !path.empty() && path.back().second < 0) {
      path.back().first = s.start;
    } else {
      path.emplace_back(s.start, s.id);
    }
    e = s.start;
  }
  std::reverse(path.begin(), path.end());
  for (size_t k = 0; k < path.size(); ++k) {
    const auto [start, id] = path[k];
    const size_t piece_end = k + 1 < path.size() ? path[k + 1].first : n;
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    const std::string_view unknown = word.substr(start, piece_end - start);
    if (auto it = vocab.find(unknown); it != vocab.end()) {
      out.push_back(it->second);
      continue;
    }
    if (byte_fallback && std::all_of(unknown.begin(), unknown.end(),
                                     [&](char c) { return byte_fallback_ids[static_cast<unsigned char>(c)] >= 0; })) {
      for (char c : unknown) out.push_back(byte_fallback_ids[static_cast<unsigned char>(c)]);
      continue;
    }
    if (!unk_id)
      fail(
          "tokenizer.json: model.unk_id: the text has a piece that is not in the Unigram vocabulary, and the model "
          "has no unk_id");
    out.push_back(*unk_id);
  }
}

}  // namespace hfstatic
