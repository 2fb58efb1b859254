// The BPE model: vocabulary, merges, unknown token, byte fallback, subword prefix and suffix, and
// the merging of each pre-tokenized word (cached per tokenizer).
#include <algorithm>
#include <cstdio>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic {
namespace tokenizer {

using json = nlohmann::json;

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  slots_.assign(cap, Slot{kEmpty, 0, 0});
  mask_ = cap - 1;
  count_ = 0;
}

void MergeTable::insert(int32_t a, int32_t b, int32_t rank, int32_t merged) {
  if ((count_ + 1) * 2 > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    reserve(std::max<size_t>(count_ + 1, old.size()));
    for (const Slot& s : old)
      if (s.key != kEmpty)
        insert(static_cast<int32_t>(s.key >> 32), static_cast<int32_t>(s.key & 0xffffffffu), s.rank, s.merged);
  }
  const uint64_t key = pack(a, b);
  for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) return;  // the first (lowest-rank) definition wins
    if (s.key == kEmpty) {
      s = Slot{key, rank, merged};
      ++count_;
      return;
    }
  }
}

ModelType parse_model_type(const json& model) {
  std::string model_type = model.contains("type") && model["type"].is_string() ? model["type"].get<std::string>() : "";
  if (model_type.empty() && model.contains("merges")) model_type = "BPE";
  if (model_type.empty() && model.contains("vocab") && model["vocab"].is_array()) model_type = "Unigram";
  if (model_type.empty() && model.contains("continuing_subword_prefix")) model_type = "WordPiece";
  if (model_type == "BPE") return ModelType::kBpe;
  if (model_type == "WordPiece") return ModelType::kWordPiece;
  if (model_type == "Unigram") return ModelType::kUnigram;
  fail("tokenizer.json: model.type \"", model_type, "\" is not supported (BPE, WordPiece and Unigram are)");
}

int32_t vocab_max_id(const json& model, int64_t id_limit) {
  if (parse_model_type(model) == ModelType::kUnigram) return unigram_vocab_max_id(model, id_limit);
  const json& vocab = require(model, "vocab", "tokenizer.json: model");
  if (!vocab.is_object()) fail("tokenizer.json: model.vocab: expected an object of token -> id");
  int32_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer())
      fail("tokenizer.json: model.vocab[\"", it.key(), "\"]: expected an integer id");
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= id_limit)
      fail("tokenizer.json: model.vocab[\"", it.key(), "\"]: ", token_id_range_error(id, id_limit));
    max_id = std::max(max_id, static_cast<int32_t>(id));
  }
  return max_id;
}

namespace {

// Merges: "a b" strings or [a, b] pairs.
void parse_merges(Tokenizer::Impl& t, const json& merges) {
  if (!merges.is_array()) fail("tokenizer.json: model.merges: expected an array");
  t.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    std::string a, b;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        fail("tokenizer.json: model.merges[", i, "]: \"", s, "\" is not two tokens separated by one space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      fail("tokenizer.json: model.merges[", i, "]: expected \"a b\" or [\"a\", \"b\"]");
    }
    auto ia = t.vocab.find(a), ib = t.vocab.find(b), im = t.vocab.find(a + b);
    if (ia == t.vocab.end()) fail("tokenizer.json: model.merges[", i, "]: token \"", a, "\" is not in the vocabulary");
    if (ib == t.vocab.end()) fail("tokenizer.json: model.merges[", i, "]: token \"", b, "\" is not in the vocabulary");
    if (im == t.vocab.end())
      fail("tokenizer.json: model.merges[", i, "]: merged token \"", a + b, "\" is not in the vocabulary");
    t.merges.insert(ia->second, ib->second, static_cast<int32_t>(i), im->second);
  }
}

}  // namespace

void parse_bpe_model(Tokenizer::Impl& t, const json& model, size_t added_count) {
  const json& vocab = model["vocab"];
  t.vocab.reserve(vocab.size() + added_count);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const auto id = it.value().get<int32_t>();
    t.id_to_token[static_cast<size_t>(id)] = it.key();
    t.vocab.emplace(it.key(), id);
  }
  if (model.contains("merges")) parse_merges(t, model["merges"]);
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = t.vocab.find(model["unk_token"].get<std::string>());
    if (it == t.vocab.end())
      fail("tokenizer.json: model.unk_token \"", model["unk_token"].get<std::string>(), "\" is not in the vocabulary");
    t.unk_id = it->second;
  }
  t.fuse_unk = get_bool(model, "fuse_unk", false);
  t.byte_fallback = get_bool(model, "byte_fallback", false);
  t.ignore_merges = get_bool(model, "ignore_merges", false);
  if (model.contains("continuing_subword_prefix") && model["continuing_subword_prefix"].is_string())
    t.continuing_subword_prefix = model["continuing_subword_prefix"].get<std::string>();
  if (model.contains("end_of_word_suffix") && model["end_of_word_suffix"].is_string())
    t.end_of_word_suffix = model["end_of_word_suffix"].get<std::string>();
  if (model.contains("dropout") && model["dropout"].is_number() && model["dropout"].get<double>() > 0)
    fail("tokenizer.json: model.dropout: BPE dropout is not supported");
  if (t.byte_fallback) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      auto it = t.vocab.find(std::string_view(name));
      t.byte_fallback_ids[b] = it == t.vocab.end() ? -1 : it->second;
      t.has_byte_fallback_ids = t.has_byte_fallback_ids || it != t.vocab.end();
    }
  }

  t.bmp_char_ids.assign(0x10000, -1);
  for (const auto& [token, id] : t.vocab) {
    if (token.empty() || !unicode::is_valid_utf8(token)) continue;
    char32_t cp;
    const size_t len = unicode::decode(token.data(), token.data() + token.size(), cp);
    if (len == token.size() && cp < 0x10000) t.bmp_char_ids[cp] = id;
  }
}

}  // namespace tokenizer

// ---------------------------------------------------------------------------------------------
// Merging

namespace {

struct MergeCandidate {
  int32_t rank;
  uint32_t pos;  // left symbol index
  int32_t left, right;
  bool operator>(const MergeCandidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

void Tokenizer::Impl::merge_symbols(std::vector<int32_t>& syms) const {
  const size_t n = syms.size();
  thread_local std::vector<int32_t> prev, next;
  thread_local std::vector<MergeCandidate> heap;
  prev.resize(n);
  next.resize(n);
  heap.clear();
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  const auto cmp = std::greater<MergeCandidate>();
  auto push = [&](int32_t i) {
    if (i < 0 || next[static_cast<size_t>(i)] < 0) return;
    const int32_t a = syms[static_cast<size_t>(i)], b = syms[static_cast<size_t>(next[static_cast<size_t>(i)])];
    int32_t rank, merged;
    if (merges.find(a, b, rank, merged)) {
      heap.push_back({rank, static_cast<uint32_t>(i), a, b});
      std::push_heap(heap.begin(), heap.end(), cmp);
    }
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int32_t>(i));
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), cmp);
    const MergeCandidate c = heap.back();
    heap.pop_back();
    const auto i = static_cast<size_t>(c.pos);
    if (syms[i] != c.left || next[i] < 0) continue;  // stale: symbol changed or removed
    const auto j = static_cast<size_t>(next[i]);
    if (syms[j] != c.right) continue;
    int32_t rank = 0, merged = 0;
    merges.find(c.left, c.right, rank, merged);
    syms[i] = merged;
    syms[j] = -1;
    next[i] = next[j];
    if (next[j] >= 0) prev[static_cast<size_t>(next[j])] = static_cast<int32_t>(i);
    push(prev[i]);
    push(static_cast<int32_t>(i));
  }
  size_t w = 0;
  for (int32_t k = 0; k >= 0 && static_cast<size_t>(k) < n; k = next[static_cast<size_t>(k)])
    syms[w++] = syms[static_cast<size_t>(k)];
  syms.resize(w);
}

void Tokenizer::Impl::bpe_word(std::string_view word, std::vector<int32_t>& out) const {
  constexpr size_t kMaxCachedWordBytes = 256, kMaxCachedWords = 200000;
  if (word.empty()) return;
  if (word.size() <= kMaxCachedWordBytes) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache.find(word);
    if (it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  thread_local std::vector<int32_t> syms;
  syms.clear();
  if (ignore_merges) {
    if (auto it = vocab.find(word); it != vocab.end()) syms.push_back(it->second);
  }
  if (syms.empty()) {
    const char* p = word.data();
    const char* end = p + word.size();
    bool last_unk = false;
    thread_local std::string scratch;
    while (p < end) {
      char32_t cp;
      const size_t len = unicode::decode(p, end, cp);
      std::string_view ch(p, len);
      const bool first = p == word.data();
      const bool last = p + len == end;
      decltype(vocab.end()) it;
      if (continuing_subword_prefix.empty() && end_of_word_suffix.empty()) {
        if (cp < 0x10000) {
          const int32_t id = bmp_char_ids[cp];
          if (id >= 0) {
            syms.push_back(id);
            last_unk = false;
            p += len;
            continue;
          }
        }
        it = vocab.find(ch);
      } else {
        scratch.clear();
        if (!first) scratch += continuing_subword_prefix;
        scratch += ch;
        if (last) scratch += end_of_word_suffix;
        it = vocab.find(std::string_view(scratch));
      }
      if (it != vocab.end()) {
        syms.push_back(it->second);
        last_unk = false;
      } else if (byte_fallback && has_byte_fallback_ids && std::all_of(p, p + len, [&](char b) {
                   return byte_fallback_ids[static_cast<unsigned char>(b)] >= 0;
                 })) {
        for (size_t k = 0; k < len; ++k) syms.push_back(byte_fallback_ids[static_cast<unsigned char>(p[k])]);
        last_unk = false;
      } else if (unk_id) {
        if (!(fuse_unk && last_unk)) syms.push_back(*unk_id);
        last_unk = true;
      }
      p += len;
    }
    // Merge the lowest-ranked adjacent pair, leftmost first, one occurrence at a time (a merge
    // can create a pair that ranks below other occurrences of the pair just merged).
    if (syms.size() > 1) merge_symbols(syms);
  }
  out.insert(out.end(), syms.begin(), syms.end());
  if (word.size() > kMaxCachedWordBytes)
    return;  // long words (e.g. whole SentencePiece sections) are not worth caching
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (cache.size() >= kMaxCachedWords) cache.clear();
  cache.emplace(std::string(word), syms);
}

}  // namespace hfstatic
