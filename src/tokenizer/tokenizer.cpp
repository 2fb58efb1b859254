// The tokenizer: assembles the components read from tokenizer.json (tokenizer_impl.h) with the
// added tokens and tokenizer_config.json, and runs them: added tokens split out first, then per
// section normalizer -> pre-tokenizer -> model, the post-processor's ids around the result;
// decoding through the decoder; streaming decode.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "util/error.h"
#include "util/json_failure.h"
#include "util/json_limits.h"
#include "util/mapped_file.h"

namespace hfstatic {

using json = nlohmann::json;
using namespace hfstatic::tokenizer;

namespace tokenizer {

void AddedTrie::insert(std::string_view s, int32_t token_index) {
  if (s.empty()) return;
  first_byte[static_cast<unsigned char>(s[0])] = true;
  int32_t node = 0;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    int32_t next = child(node, c);
    if (next < 0) {
      next = static_cast<int32_t>(nodes.size());
      nodes.emplace_back();
      auto& v = nodes[static_cast<size_t>(node)].next;
      v.insert(std::lower_bound(v.begin(), v.end(), std::make_pair(c, int32_t{-1})), {c, next});
    }
    node = next;
  }
  if (nodes[static_cast<size_t>(node)].token < 0) nodes[static_cast<size_t>(node)].token = token_index;
}

int32_t AddedTrie::child(int32_t node, unsigned char c) const {
  const auto& v = nodes[static_cast<size_t>(node)].next;
  auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(c, int32_t{-1}));
  return (it != v.end() && it->first == c) ? it->second : -1;
}

// ---------------------------------------------------------------------------------------------
// JSON helpers with located errors.

const json& require(const json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key)) fail(where, ": missing key \"", key, "\"");
  return obj.at(key);
}

std::string get_string(const json& obj, const char* key, const std::string& where) {
  const json& v = require(obj, key, where);
  if (!v.is_string()) fail(where, ".", key, ": expected a string");
  return v.get<std::string>();
}

bool get_bool(const json& obj, const char* key, bool fallback) {
  if (!obj.is_object() || !obj.contains(key) || !obj.at(key).is_boolean()) return fallback;
  return obj.at(key).get<bool>();
}

std::string pattern_string(const json& pattern, const std::string& where, bool* is_regex) {
  if (!pattern.is_object()) fail(where, ".pattern: expected an object with \"String\" or \"Regex\"");
  if (pattern.contains("String") && pattern["String"].is_string()) {
    *is_regex = false;
    return pattern["String"].get<std::string>();
  }
  if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
    *is_regex = true;
    return pattern["Regex"].get<std::string>();
  }
  fail(where, ".pattern: expected an object with \"String\" or \"Regex\"");
}

PrependScheme parse_prepend_scheme(const json& j, const std::string& where) {
  if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
    const std::string s = j["prepend_scheme"].get<std::string>();
    if (s == "always") return PrependScheme::kAlways;
    if (s == "first") return PrependScheme::kFirst;
    if (s == "never") return PrependScheme::kNever;
    fail(where, ".prepend_scheme: unknown value \"", s, "\"");
  }
  return get_bool(j, "add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
}
std::optional<int32_t> lookup_token(const Tokenizer::Impl& t, std::string_view s) {
  auto it = t.vocab.find(s);
  if (it != t.vocab.end()) return it->second;
  return std::nullopt;
}

char32_t cp_before(std::string_view s, size_t pos) {
  if (pos == 0) return 0;
  size_t b = pos - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  char32_t cp;
  unicode::decode(s.data() + b, s.data() + s.size(), cp);
  return cp;
}

std::string token_id_range_error(int64_t id, int64_t id_limit) {
  if (id >= kMaxTokenId) return cat("id ", id, " is out of range (ids are below ", kMaxTokenId, ")");
  return cat("id ", id, " is out of range [0, ", id_limit, ") for a file of this many vocab and added_tokens entries");
}

bool replace_all(std::string& s, std::string_view from, std::string_view to, size_t limit) {
  if (from.empty() || s.find(from) == std::string::npos) return s.size() <= limit;
  std::string out;
  out.reserve(std::min(s.size(), limit));
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    if (out.size() + (hit - pos) + to.size() > limit) return false;
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  if (out.size() + (s.size() - pos) > limit) return false;
  out.append(s, pos, std::string::npos);
  s.swap(out);
  return true;
}

void fail_growth(const std::string& what, size_t input_bytes) {
  fail(what, ": the output grows past ", growth_limit(input_bytes), " bytes (", kGrowthFactor, " x the ", input_bytes,
       " bytes of input + ", kGrowthSlack, ", at most ", kMaxGrownBytes, ")");
}

}  // namespace tokenizer

namespace {

std::string token_content(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return {};
}

bool is_word_char(char32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') || cp == '_';
  const auto c = unicode::category(cp);
  return unicode::is_letter(c) || unicode::is_number(c) || unicode::is_mark(c) || c == unicode::Pc;
}
char32_t cp_at(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  char32_t cp;
  unicode::decode(s.data() + pos, s.data() + s.size(), cp);
  return cp;
}

json parse_json_text(const std::string& text, const char* name) {
  std::string why;
  const json root = parse_json_limited(text, name, kMaxJsonDepth, &why);
  if (root.is_discarded()) {
    if (std::string number = json_number_error(text, name); !number.empty()) throw Error(number);
    fail(name, ": invalid JSON ", why);
  }
  if (!root.is_object()) fail(name, ": expected a JSON object at the top level");
  return root;
}

// Checks the added tokens; returns the largest id among them and `max_id`.
int32_t added_tokens_max_id(const json& added_json, int32_t max_id, int64_t id_limit) {
  for (size_t i = 0; i < added_json.size(); ++i) {
    const json& a = added_json[i];
    if (!a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") || !a["content"].is_string())
      fail("tokenizer.json: added_tokens[", i, "]: needs integer \"id\" and string \"content\"");
    const int64_t id = a["id"].get<int64_t>();
    if (id < 0 || id >= id_limit) fail("tokenizer.json: added_tokens[", i, "]: ", token_id_range_error(id, id_limit));
    max_id = std::max(max_id, static_cast<int32_t>(id));
  }
  return max_id;
}

// Added tokens: they also become vocabulary entries.
void parse_added_tokens(Tokenizer::Impl& t, const json& added_json) {
  for (size_t i = 0; i < added_json.size(); ++i) {
    const json& a = added_json[i];
    AddedToken tok;
    tok.id = a["id"].get<int32_t>();
    tok.content = a["content"].get<std::string>();
    if (tok.content.empty()) fail("tokenizer.json: added_tokens[", i, "]: empty content");
    tok.special = get_bool(a, "special", false);
    tok.lstrip = get_bool(a, "lstrip", false);
    tok.rstrip = get_bool(a, "rstrip", false);
    tok.single_word = get_bool(a, "single_word", false);
    tok.normalized = get_bool(a, "normalized", !tok.special);
    t.id_to_token[static_cast<size_t>(tok.id)] = tok.content;
    t.vocab[tok.content] = tok.id;
    t.added_kind[static_cast<size_t>(tok.id)] = tok.special ? 2 : 1;
    const auto index = static_cast<int32_t>(t.added.size());
    t.added.push_back(tok);
    t.trie_all.insert(tok.content, index);
    if (!tok.special) t.trie_nonspecial.insert(tok.content, index);
  }
}

// The normalizer, pre-tokenizer, decoder and post-processor; returns whether there is a post-processor.
bool parse_components(Tokenizer::Impl& t, const json& root) {
  if (root.contains("normalizer") && !root["normalizer"].is_null())
    t.normalizer = parse_normalizer(root["normalizer"], "tokenizer.json: normalizer");
  if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null())
    t.pre_tokenizer = parse_pre_tokenizer(root["pre_tokenizer"], "tokenizer.json: pre_tokenizer");
  if (root.contains("decoder") && !root["decoder"].is_null())
    t.decoder = parse_decoder(root["decoder"], "tokenizer.json: decoder");
  const bool has_post = root.contains("post_processor") && !root["post_processor"].is_null();
  if (has_post) parse_post_processor(t, root["post_processor"], "tokenizer.json: post_processor");
  return has_post;
}

// "a number", "a list"... for errors.
std::string json_type_name(const json& v) {
  if (v.is_number()) return "a number";
  if (v.is_boolean()) return "a boolean";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "a list";
  if (v.is_null()) return "null";
  return "a string";
}

// A string, or a list of {"name", "template"} of which the one named "default" is used; null is none.
std::string config_chat_template(const json& ct) {
  const char* where = "tokenizer_config.json: chat_template";
  if (ct.is_null()) return {};
  if (ct.is_string()) return ct.get<std::string>();
  if (!ct.is_array()) fail(where, " is ", json_type_name(ct), ", not a string");
  std::optional<std::string> found;
  for (size_t i = 0; i < ct.size(); ++i) {
    const json& entry = ct[i];
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("template") ||
        !entry["template"].is_string())
      fail(where, "[", i, "]: expected an object with string \"name\" and \"template\"");
    if (entry["name"] == "default") found = entry["template"].get<std::string>();
  }
  if (!found) fail(where, " is a list of named templates without one named \"default\"");
  return *found;
}

// tokenizer_config.json: bos and eos tokens, clean-up of spaces, the chat template.
void parse_config(Tokenizer::Impl& t, const json& config) {
  if (config.contains("bos_token")) t.bos_token = token_content(config["bos_token"]);
  if (config.contains("eos_token")) t.eos_token = token_content(config["eos_token"]);
  if (!t.bos_token.empty()) t.bos_id = lookup_token(t, t.bos_token);
  if (!t.eos_token.empty()) t.eos_id = lookup_token(t, t.eos_token);
  t.clean_up_tokenization_spaces = get_bool(config, "clean_up_tokenization_spaces", false);
  if (config.contains("chat_template")) t.chat_template = config_chat_template(config["chat_template"]);
}

}  // namespace

void Tokenizer::Impl::model_word(std::string_view word, std::vector<int32_t>& out) const {
  switch (model_type) {
    case ModelType::kBpe: bpe_word(word, out); break;
    case ModelType::kWordPiece: wordpiece_word(word, out); break;
    case ModelType::kUnigram: unigram_word(word, out); break;
  }
}

namespace {

// The buffers of a thread's encodes, given back after a large text rather than kept for the
// thread's life.
struct SectionBuffers {
  Pieces a, b;
  void trim() {
    constexpr size_t kKeepBytes = size_t{1} << 20;
    for (Pieces* p : {&a, &b}) {
      if (p->buf.capacity() > kKeepBytes) std::string().swap(p->buf);
      if (p->ranges.capacity() * sizeof(p->ranges[0]) > kKeepBytes) decltype(p->ranges)().swap(p->ranges);
    }
  }
};

struct TrimOnExit {
  SectionBuffers& buffers;
  ~TrimOnExit() { buffers.trim(); }
};

}  // namespace

void Tokenizer::Impl::encode_section(std::string_view text, bool first_section, std::vector<int32_t>& out,
                                     size_t max_tokens) const {
  thread_local SectionBuffers buffers;
  const TrimOnExit trim{buffers};
  Pieces& a = buffers.a;
  Pieces& b = buffers.b;
  a.buf.assign(text);
  if (normalizer) apply_normalizer(*normalizer, a.buf);
  a.ranges.clear();
  if (!a.buf.empty()) a.ranges.emplace_back(0, a.buf.size());
  Pieces* result = &a;
  if (pre_tokenizer) {
    apply_pre_tokenizer(*pre_tokenizer, first_section, a, b);
    result = &b;
  }
  for (const auto& [s, e] : result->ranges) {
    // A piece longer than the remaining tokens can stand for is refused before the model runs.
    const size_t room = max_tokens - std::min(max_tokens, out.size());
    if (max_piece_bytes_per_token > 0 && (e - s) / max_piece_bytes_per_token > room) throw TokenLimitError(max_tokens);
    model_word(std::string_view(result->buf.data() + s, e - s), out);
    if (out.size() > max_tokens) throw TokenLimitError(max_tokens);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view input, bool add_special_tokens, bool parse_special,
                                       size_t max_tokens) const {
  const Impl& t = *impl_;
  std::string repaired;
  if (!unicode::is_valid_utf8(input)) {
    repaired = unicode::to_valid_utf8(input);
    input = repaired;
  }
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = t.post_prefix;
  const AddedTrie& trie = parse_special ? t.trie_all : t.trie_nonspecial;

  size_t section_start = 0;  // start of pending ordinary text
  size_t i = 0;
  const size_t n = input.size();
  while (i < n) {
    const auto c0 = static_cast<unsigned char>(input[i]);
    if (!trie.first_byte[c0]) {
      ++i;
      continue;
    }
    // Longest added token starting at i.
    int32_t node = 0, best = -1;
    size_t best_end = 0;
    for (size_t k = i; k < n; ++k) {
      node = trie.child(node, static_cast<unsigned char>(input[k]));
      if (node < 0) break;
      if (trie.nodes[static_cast<size_t>(node)].token >= 0) {
        best = trie.nodes[static_cast<size_t>(node)].token;
        best_end = k + 1;
      }
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const AddedToken& tok = t.added[static_cast<size_t>(best)];
    if (tok.single_word && (is_word_char(cp_before(input, i)) || is_word_char(cp_at(input, best_end)))) {
      ++i;
      continue;
    }
    size_t mb = i, me = best_end;
    if (tok.lstrip) {
      while (mb > section_start) {
        const char32_t cp = cp_before(input, mb);
        if (!unicode::is_whitespace(cp)) break;
        --mb;
        while (mb > section_start && (static_cast<unsigned char>(input[mb]) & 0xC0) == 0x80) --mb;
      }
    }
    if (tok.rstrip) {
      while (me < n) {
        char32_t cp;
        const size_t len = unicode::decode(input.data() + me, input.data() + n, cp);
        if (!unicode::is_whitespace(cp)) break;
        me += len;
      }
    }
    if (mb > section_start)
      t.encode_section(input.substr(section_start, mb - section_start), section_start == 0, ids, max_tokens);
    ids.push_back(tok.id);
    if (ids.size() > max_tokens) throw TokenLimitError(max_tokens);
    section_start = i = me;
  }
  if (section_start < n) t.encode_section(input.substr(section_start), section_start == 0, ids, max_tokens);
  if (add_special_tokens) ids.insert(ids.end(), t.post_suffix.begin(), t.post_suffix.end());
  if (ids.size() > max_tokens) throw TokenLimitError(max_tokens);
  return ids;
}

std::string Tokenizer::Impl::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    const int32_t id = ids[k];
    if (id < 0 || static_cast<size_t>(id) >= id_to_token.size())
      fail("decode: token id ", id, " at index ", k, " is out of range [0, ", id_to_token.size(), ")");
    if (skip_special && added_kind[static_cast<size_t>(id)] == 2) continue;
    tokens.push_back(id_to_token[static_cast<size_t>(id)]);
  }
  if (decoder) apply_decoder(*decoder, tokens);
  std::string text;
  for (const auto& s : tokens) text += s;
  if (clean_up_tokenization_spaces) text = clean_up_tokenization(std::move(text));
  return unicode::to_valid_utf8(text);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  return impl_->decode(ids, skip_special);
}

// ---------------------------------------------------------------------------------------------
// Loading

Tokenizer Tokenizer::from_json(const std::string& tokenizer_json, const std::string& tokenizer_config_json) {
  const json root = parse_json_text(tokenizer_json, "tokenizer.json");
  auto impl = std::make_unique<Impl>();
  Impl& t = *impl;

  const json& model = require(root, "model", "tokenizer.json");
  const json added_json =
      root.contains("added_tokens") && root["added_tokens"].is_array() ? root["added_tokens"] : json::array();
  const size_t vocab_entries =
      model.contains("vocab") && (model["vocab"].is_object() || model["vocab"].is_array()) ? model["vocab"].size() : 0;
  const int64_t id_limit = token_id_limit(vocab_entries + added_json.size());
  const int32_t vocab_max_id = tokenizer::vocab_max_id(model, id_limit);
  const int32_t max_id = added_tokens_max_id(added_json, vocab_max_id, id_limit);
  t.id_to_token.assign(static_cast<size_t>(max_id + 1), std::string());
  t.added_kind.assign(static_cast<size_t>(max_id + 1), 0);
  t.model_type = parse_model_type(model);
  switch (t.model_type) {
    case ModelType::kBpe: parse_bpe_model(t, model, added_json.size()); break;
    case ModelType::kWordPiece: parse_wordpiece_model(t, model, added_json.size()); break;
    case ModelType::kUnigram: parse_unigram_model(t, model, added_json.size()); break;
  }
  parse_added_tokens(t, added_json);
  const bool has_post = parse_components(t, root);

  const json config =
      tokenizer_config_json.empty() ? json::object() : parse_json_text(tokenizer_config_json, "tokenizer_config.json");
  parse_config(t, config);
  if (!has_post) config_post_processor(t, config);
  // A BPE token is a vocabulary entry, a byte or an unknown character (at most 4 bytes), unless
  // runs of unknown characters fuse into one.
  const bool all_bytes = t.byte_fallback && std::all_of(std::begin(t.byte_fallback_ids), std::end(t.byte_fallback_ids),
                                                        [](int32_t id) { return id >= 0; });
  if (t.model_type == ModelType::kBpe && (!t.fuse_unk || all_bytes)) {
    size_t longest = 4;
    for (const auto& token : t.id_to_token) longest = std::max(longest, token.size());
    t.max_piece_bytes_per_token = longest;
  }
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  // read_text_file refuses what is not a regular file (a FIFO would block, a directory read empty).
  const std::string json_text = read_text_file(path);
  std::string config_text;
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? std::string(".") : path.substr(0, slash);
  const std::string config_path = dir + "/tokenizer_config.json";
  if (file_exists(config_path)) config_text = read_text_file(config_path);
  try {
    return from_json(json_text, config_text);
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->added_kind.size() &&
         impl_->added_kind[static_cast<size_t>(id)] == 2;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const { return lookup_token(*impl_, token); }

const std::string& Tokenizer::token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_to_token.size())
    fail("token id ", id, " is out of range [0, ", impl_->id_to_token.size(), ")");
  return impl_->id_to_token[static_cast<size_t>(id)];
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->id_to_token.size()); }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos_id; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos_id; }
const std::string& Tokenizer::bos_token() const { return impl_->bos_token; }
const std::string& Tokenizer::eos_token() const { return impl_->eos_token; }
const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }

// ---------------------------------------------------------------------------------------------
// Streaming decode

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(&tokenizer), skip_special_(skip_special) {}

void StreamDecoder::continue_after(std::span<const int32_t> context) {
  constexpr size_t kContextIds = 8;  // enough for a word boundary or a split UTF-8 sequence
  const size_t keep = std::min(context.size(), kContextIds);
  std::vector<int32_t> ids(context.end() - static_cast<std::ptrdiff_t>(keep), context.end());
  std::string text = tokenizer_->decode(ids, skip_special_);
  // A context that ends inside a UTF-8 sequence cannot be a prefix of what follows it.
  if (text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0) return;
  ids_ = std::move(ids);
  prefix_ = std::move(text);
  prefix_index_ = ids_.size();
}

namespace {

// With a clean-up of tokenization spaces, text that ends like the start of one of its patterns
// (" ' " -> "'", " n't" -> "n't", ...) may still change when the next token arrives.
bool cleanup_may_change_end(std::string_view text) {
  static constexpr std::string_view kPatternStarts[] = {" ", " '", " 'v", " 'r", " n", " n'"};
  for (std::string_view p : kPatternStarts)
    if (text.size() >= p.size() && text.compare(text.size() - p.size(), p.size(), p) == 0) return true;
  return false;
}

}  // namespace

std::string StreamDecoder::push(int32_t id) {
  ids_.push_back(id);
  std::string text = tokenizer_->decode(ids_, skip_special_);
  if (text.size() <= prefix_.size() || text.compare(0, prefix_.size(), prefix_) != 0) return {};
  if (text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0) return {};
  if (tokenizer_->impl_->cleans_up_spaces() && cleanup_may_change_end(text)) return {};
  std::string out = text.substr(prefix_.size());
  // Keep the tokens decoded since the previous boundary as context for the next step.
  const size_t new_prefix_index = ids_.size() - prefix_index_;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_index_));
  prefix_ = tokenizer_->decode(ids_, skip_special_);
  prefix_index_ = new_prefix_index;
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  if (!ids_.empty()) {
    std::string text = tokenizer_->decode(ids_, skip_special_);
    if (text.size() > prefix_.size() && text.compare(0, prefix_.size(), prefix_) == 0)
      out = text.substr(prefix_.size());
  }
  ids_.clear();
  prefix_.clear();
  prefix_index_ = 0;
  return out;
}

}  // namespace hfstatic
