#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "util/error.h"
#include "util/json_limits.h"

namespace hfstatic {

using json = nlohmann::json;
using namespace hfstatic::tokenizer;

namespace tokenizer {

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
      if (s.key != kEmpty) insert(static_cast<int32_t>(s.key >> 32), static_cast<int32_t>(s.key & 0xffffffffu), s.rank, s.merged);
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

}  // namespace tokenizer

namespace {

// ---------------------------------------------------------------------------------------------
// Byte-level alphabet (GPT-2's bytes_to_unicode).

struct ByteLevelTables {
  char utf8[256][3];
  uint8_t len[256];
  int16_t char_to_byte[0x200];  // mapped code points are all below U+0200
  ByteLevelTables() {
    std::fill(std::begin(char_to_byte), std::end(char_to_byte), int16_t{-1});
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      std::string s;
      unicode::append_utf8(s, cp);
      len[b] = static_cast<uint8_t>(s.size());
      std::copy(s.begin(), s.end(), utf8[b]);
      char_to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelTables& byte_level() {
  static const ByteLevelTables tables;
  return tables;
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

Normalizer parse_normalizer(const json& j, const std::string& where) {
  const std::string type = get_string(j, "type", where);
  Normalizer n{};
  if (type == "Sequence") {
    n.type = NormalizerType::kSequence;
    const json& list = require(j, "normalizers", where);
    if (!list.is_array()) fail(where, ".normalizers: expected an array");
    for (size_t i = 0; i < list.size(); ++i) n.children.push_back(parse_normalizer(list[i], cat(where, ".normalizers[", i, "]")));
  } else if (type == "NFC") {
    n.type = NormalizerType::kNfc;
  } else if (type == "NFD") {
    n.type = NormalizerType::kNfd;
  } else if (type == "Replace") {
    n.type = NormalizerType::kReplace;
    bool is_regex = false;
    n.pattern = pattern_string(require(j, "pattern", where), where, &is_regex);
    if (is_regex) fail(where, ": Replace normalizer with a Regex pattern is not supported");
    if (n.pattern.empty()) fail(where, ".pattern: empty String pattern");
    n.content = get_string(j, "content", where);
  } else if (type == "Prepend") {
    n.type = NormalizerType::kPrepend;
    n.content = get_string(j, "prepend", where);
  } else if (type == "Strip") {
    n.type = NormalizerType::kStrip;
    n.strip_left = get_bool(j, "strip_left", true);
    n.strip_right = get_bool(j, "strip_right", true);
  } else {
    fail(where, ": unsupported normalizer type \"", type, "\"");
  }
  return n;
}

PreTokenizer parse_pre_tokenizer(const json& j, const std::string& where) {
  const std::string type = get_string(j, "type", where);
  PreTokenizer p{};
  if (type == "Sequence") {
    p.type = PreTokenizerType::kSequence;
    const json& list = require(j, "pretokenizers", where);
    if (!list.is_array()) fail(where, ".pretokenizers: expected an array");
    for (size_t i = 0; i < list.size(); ++i)
      p.children.push_back(parse_pre_tokenizer(list[i], cat(where, ".pretokenizers[", i, "]")));
  } else if (type == "ByteLevel") {
    p.type = PreTokenizerType::kByteLevel;
    p.add_prefix_space = get_bool(j, "add_prefix_space", false);
    p.use_regex = get_bool(j, "use_regex", true);
    p.regex = SplitPattern::kGpt2;
  } else if (type == "Split") {
    p.type = PreTokenizerType::kSplit;
    bool is_regex = false;
    const std::string pattern = pattern_string(require(j, "pattern", where), where, &is_regex);
    if (is_regex) {
      p.regex = recognize_split_regex(pattern);
      if (!p.regex) fail(where, ": unsupported Split regex \"", pattern, "\"");
    } else {
      if (pattern.empty()) fail(where, ".pattern: empty String pattern");
      p.literal = pattern;
    }
    const std::string behavior = get_string(j, "behavior", where);
    if (behavior == "Removed") p.behavior = SplitBehavior::kRemoved;
    else if (behavior == "Isolated") p.behavior = SplitBehavior::kIsolated;
    else if (behavior == "MergedWithPrevious") p.behavior = SplitBehavior::kMergedWithPrevious;
    else if (behavior == "MergedWithNext") p.behavior = SplitBehavior::kMergedWithNext;
    else if (behavior == "Contiguous") p.behavior = SplitBehavior::kContiguous;
    else fail(where, ".behavior: unknown split behavior \"", behavior, "\"");
    p.invert = get_bool(j, "invert", false);
  } else if (type == "Metaspace") {
    p.type = PreTokenizerType::kMetaspace;
    p.replacement = j.contains("replacement") && j["replacement"].is_string() ? j["replacement"].get<std::string>()
                                                                              : std::string("\xE2\x96\x81");
    p.prepend_scheme = parse_prepend_scheme(j, where);
    p.split = get_bool(j, "split", true);
  } else {
    fail(where, ": unsupported pre_tokenizer type \"", type, "\"");
  }
  return p;
}

Decoder parse_decoder(const json& j, const std::string& where) {
  const std::string type = get_string(j, "type", where);
  Decoder d{};
  if (type == "Sequence") {
    d.type = DecoderType::kSequence;
    const json& list = require(j, "decoders", where);
    if (!list.is_array()) fail(where, ".decoders: expected an array");
    for (size_t i = 0; i < list.size(); ++i) d.children.push_back(parse_decoder(list[i], cat(where, ".decoders[", i, "]")));
  } else if (type == "ByteLevel") {
    d.type = DecoderType::kByteLevel;
  } else if (type == "Replace") {
    d.type = DecoderType::kReplace;
    bool is_regex = false;
    d.pattern = pattern_string(require(j, "pattern", where), where, &is_regex);
    if (is_regex) fail(where, ": Replace decoder with a Regex pattern is not supported");
    if (d.pattern.empty()) fail(where, ".pattern: empty String pattern");
    d.content = get_string(j, "content", where);
  } else if (type == "ByteFallback") {
    d.type = DecoderType::kByteFallback;
  } else if (type == "Fuse") {
    d.type = DecoderType::kFuse;
  } else if (type == "Strip") {
    d.type = DecoderType::kStrip;
    d.content = get_string(j, "content", where);
    d.start = j.value("start", size_t{0});
    d.stop = j.value("stop", size_t{0});
  } else if (type == "Metaspace") {
    d.type = DecoderType::kMetaspace;
    d.replacement = j.contains("replacement") && j["replacement"].is_string() ? j["replacement"].get<std::string>()
                                                                              : std::string("\xE2\x96\x81");
    d.prepend_scheme = parse_prepend_scheme(j, where);
  } else {
    fail(where, ": unsupported decoder type \"", type, "\"");
  }
  return d;
}

std::optional<int32_t> lookup_token(const Tokenizer::Impl& t, std::string_view s) {
  auto it = t.vocab.find(s);
  if (it != t.vocab.end()) return it->second;
  return std::nullopt;
}

int32_t special_token_id(const Tokenizer::Impl& t, const std::string& token, const std::string& where) {
  auto id = lookup_token(t, token);
  if (!id) fail(where, ": token \"", token, "\" is not in the vocabulary");
  return *id;
}

void parse_post_processor(Tokenizer::Impl& t, const json& j, const std::string& where) {
  const std::string type = get_string(j, "type", where);
  if (type == "Sequence") {
    const json& list = require(j, "processors", where);
    if (!list.is_array()) fail(where, ".processors: expected an array");
    for (size_t i = 0; i < list.size(); ++i) parse_post_processor(t, list[i], cat(where, ".processors[", i, "]"));
  } else if (type == "ByteLevel") {
    // Only adjusts offsets; ids are unchanged.
  } else if (type == "TemplateProcessing") {
    const json& single = require(j, "single", where);
    if (!single.is_array()) fail(where, ".single: expected an array");
    const json specials = j.contains("special_tokens") ? j["special_tokens"] : json::object();
    bool seen_sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
      const json& item = single[i];
      const std::string iw = cat(where, ".single[", i, "]");
      if (item.contains("Sequence")) {
        if (seen_sequence) fail(iw, ": more than one Sequence in the single template");
        seen_sequence = true;
      } else if (item.contains("SpecialToken")) {
        const std::string id = get_string(item["SpecialToken"], "id", iw + ".SpecialToken");
        std::vector<int32_t> ids;
        if (specials.contains(id) && specials[id].contains("ids")) {
          for (const json& v : specials[id]["ids"]) {
            if (!v.is_number_integer()) fail(where, ".special_tokens.", id, ".ids: expected integers");
            ids.push_back(v.get<int32_t>());
          }
        } else {
          ids.push_back(special_token_id(t, id, iw));
        }
        auto& dst = seen_sequence ? t.post_suffix : t.post_prefix;
        dst.insert(dst.end(), ids.begin(), ids.end());
      } else {
        fail(iw, ": expected a Sequence or SpecialToken item");
      }
    }
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    const json& cls = require(j, "cls", where);
    const json& sep = require(j, "sep", where);
    if (!cls.is_array() || cls.size() != 2 || !sep.is_array() || sep.size() != 2)
      fail(where, ": cls and sep must be [token, id] pairs");
    t.post_prefix.push_back(cls[1].get<int32_t>());
    t.post_suffix.push_back(sep[1].get<int32_t>());
  } else {
    fail(where, ": unsupported post_processor type \"", type, "\"");
  }
}

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

char32_t cp_before(std::string_view s, size_t pos) {
  if (pos == 0) return 0;
  size_t b = pos - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  char32_t cp;
  unicode::decode(s.data() + b, s.data() + s.size(), cp);
  return cp;
}

char32_t cp_at(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  char32_t cp;
  unicode::decode(s.data() + pos, s.data() + s.size(), cp);
  return cp;
}

// Replaces every occurrence of `from` by `to`.
void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty() || s.find(from) == std::string::npos) return;
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

std::string nfd(std::string_view s);

void apply_normalizer(const Normalizer& n, std::string& s) {
  switch (n.type) {
    case NormalizerType::kSequence:
      for (const auto& c : n.children) apply_normalizer(c, s);
      break;
    case NormalizerType::kNfc:
      s = unicode::nfc(s);
      break;
    case NormalizerType::kNfd:
      s = nfd(s);
      break;
    case NormalizerType::kReplace:
      replace_all(s, n.pattern, n.content);
      break;
    case NormalizerType::kPrepend:
      if (!s.empty()) s.insert(0, n.content);
      break;
    case NormalizerType::kStrip: {
      size_t b = 0, e = s.size();
      while (n.strip_left && b < e) {
        char32_t cp;
        const size_t len = unicode::decode(s.data() + b, s.data() + e, cp);
        if (!unicode::is_whitespace(cp)) break;
        b += len;
      }
      while (n.strip_right && e > b) {
        const char32_t cp = cp_before(std::string_view(s).substr(0, e), e);
        if (!unicode::is_whitespace(cp)) break;
        size_t k = e - 1;
        while (k > b && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
        e = k;
      }
      s = s.substr(b, e - b);
      break;
    }
  }
}

std::string nfd(std::string_view s) {
  // NFD through NFC data: not used by the supported model families; kept simple.
  return unicode::nfc(s);
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenization works on one buffer and a list of [begin, end) pieces in it.

struct Pieces {
  std::string buf;
  std::vector<std::pair<size_t, size_t>> ranges;
};

void split_pieces(const PreTokenizer& p, Pieces& in, Pieces& out) {
  out.buf.swap(in.buf);  // splitting never changes the bytes
  out.ranges.clear();
  thread_local std::vector<std::pair<size_t, size_t>> matches;
  thread_local std::vector<std::pair<std::pair<size_t, size_t>, bool>> segs;  // (range, is_delimiter)
  for (const auto& [b, e] : in.ranges) {
    const std::string_view piece(out.buf.data() + b, e - b);
    matches.clear();
    if (p.regex) {
      find_pattern_matches(*p.regex, piece, matches, p.js_space);
    } else {
      for (size_t pos = 0, hit; (hit = piece.find(p.literal, pos)) != std::string_view::npos; pos = hit + p.literal.size())
        matches.emplace_back(hit, hit + p.literal.size());
    }
    segs.clear();
    size_t pos = 0;
    for (const auto& [mb, me] : matches) {
      if (mb > pos) segs.push_back({{b + pos, b + mb}, p.invert});
      segs.push_back({{b + mb, b + me}, !p.invert});
      pos = me;
    }
    if (pos < piece.size()) segs.push_back({{b + pos, b + piece.size()}, p.invert});

    switch (p.behavior) {
      case SplitBehavior::kIsolated:
        for (const auto& s : segs) out.ranges.push_back(s.first);
        break;
      case SplitBehavior::kRemoved:
        for (const auto& s : segs)
          if (!s.second) out.ranges.push_back(s.first);
        break;
      case SplitBehavior::kMergedWithPrevious: {
        bool prev_open = false;
        for (const auto& s : segs) {
          if (s.second && prev_open) out.ranges.back().second = s.first.second;
          else out.ranges.push_back(s.first);
          prev_open = !s.second;
        }
        break;
      }
      case SplitBehavior::kMergedWithNext: {
        bool pending = false;
        for (const auto& s : segs) {
          if (pending) out.ranges.back().second = s.first.second;
          else out.ranges.push_back(s.first);
          pending = s.second;
        }
        break;
      }
      case SplitBehavior::kContiguous: {
        bool prev_delim = false;
        for (const auto& s : segs) {
          if (s.second && prev_delim) out.ranges.back().second = s.first.second;
          else out.ranges.push_back(s.first);
          prev_delim = s.second;
        }
        break;
      }
    }
  }
}

void byte_level_pieces(const PreTokenizer& p, Pieces& in, Pieces& out) {
  const ByteLevelTables& bl = byte_level();
  Pieces* src = &in;
  thread_local Pieces split_tmp;
  if (p.add_prefix_space) {
    // Prefix each piece that does not start with a space.
    Pieces& tmp = split_tmp;
    tmp.buf.clear();
    tmp.ranges.clear();
    for (const auto& [b, e] : in.ranges) {
      const size_t nb = tmp.buf.size();
      if (e == b || in.buf[b] != ' ') tmp.buf.push_back(' ');
      tmp.buf.append(in.buf, b, e - b);
      tmp.ranges.emplace_back(nb, tmp.buf.size());
    }
    std::swap(in, tmp);
  }
  if (p.use_regex) {
    PreTokenizer splitter{};
    splitter.type = PreTokenizerType::kSplit;
    splitter.regex = SplitPattern::kGpt2;
    splitter.behavior = SplitBehavior::kIsolated;
    splitter.js_space = true;
    split_pieces(splitter, in, split_tmp);
    src = &split_tmp;
  }
  out.buf.clear();
  out.ranges.clear();
  for (const auto& [b, e] : src->ranges) {
    const size_t nb = out.buf.size();
    for (size_t i = b; i < e; ++i) {
      const auto c = static_cast<unsigned char>(src->buf[i]);
      out.buf.append(bl.utf8[c], bl.len[c]);
    }
    if (out.buf.size() > nb) out.ranges.emplace_back(nb, out.buf.size());
  }
  if (src == &split_tmp) in.buf.swap(split_tmp.buf);
}

void metaspace_pieces(const PreTokenizer& p, bool first_section, Pieces& in, Pieces& out) {
  out.buf.clear();
  out.ranges.clear();
  for (size_t k = 0; k < in.ranges.size(); ++k) {
    const auto [b, e] = in.ranges[k];
    std::string s = in.buf.substr(b, e - b);
    replace_all(s, " ", p.replacement);
    const bool prepend = p.prepend_scheme == PrependScheme::kAlways ||
                         (p.prepend_scheme == PrependScheme::kFirst && first_section && k == 0);
    if (prepend && s.compare(0, p.replacement.size(), p.replacement) != 0) s.insert(0, p.replacement);
    const size_t base = out.buf.size();
    out.buf += s;
    if (!p.split) {
      if (!s.empty()) out.ranges.emplace_back(base, out.buf.size());
      continue;
    }
    // MergedWithNext on the replacement character.
    size_t start = 0;
    for (size_t pos = 0, hit; (hit = s.find(p.replacement, pos)) != std::string::npos; pos = hit + p.replacement.size()) {
      if (hit > start) {
        out.ranges.emplace_back(base + start, base + hit);
        start = hit;
      }
    }
    if (start < s.size()) out.ranges.emplace_back(base + start, base + s.size());
  }
}

void apply_pre_tokenizer(const PreTokenizer& p, bool first_section, Pieces& in, Pieces& out) {
  switch (p.type) {
    case PreTokenizerType::kSequence: {
      Pieces* a = &in;
      Pieces* b = &out;
      for (const auto& c : p.children) {
        apply_pre_tokenizer(c, first_section, *a, *b);
        std::swap(a, b);
      }
      if (a != &out) std::swap(out, *a);
      break;
    }
    case PreTokenizerType::kSplit:
      split_pieces(p, in, out);
      break;
    case PreTokenizerType::kByteLevel:
      byte_level_pieces(p, in, out);
      break;
    case PreTokenizerType::kMetaspace:
      metaspace_pieces(p, first_section, in, out);
      break;
  }
}

std::string clean_up_tokenization(std::string s) {
  static const std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) replace_all(s, from, to);
  return s;
}

// Decoders work on a list of token strings.
void apply_decoder(const Decoder& d, std::vector<std::string>& tokens) {
  switch (d.type) {
    case DecoderType::kSequence:
      for (const auto& c : d.children) apply_decoder(c, tokens);
      break;
    case DecoderType::kByteLevel: {
      const ByteLevelTables& bl = byte_level();
      std::string bytes;
      for (const std::string& t : tokens) {
        const size_t mark = bytes.size();
        bool ok = true;
        const char* p = t.data();
        const char* end = p + t.size();
        while (p < end) {
          char32_t cp;
          p += unicode::decode(p, end, cp);
          if (cp < 0x200 && bl.char_to_byte[cp] >= 0) {
            bytes.push_back(static_cast<char>(bl.char_to_byte[cp]));
          } else {
            ok = false;
            break;
          }
        }
        if (!ok) {
          bytes.resize(mark);
          bytes += t;
        }
      }
      tokens.assign(1, unicode::to_valid_utf8(bytes));
      break;
    }
    case DecoderType::kReplace:
      for (auto& t : tokens) replace_all(t, d.pattern, d.content);
      break;
    case DecoderType::kByteFallback: {
      std::vector<std::string> out;
      std::string pending;
      size_t pending_count = 0;
      auto flush = [&] {
        if (pending_count == 0) return;
        if (unicode::is_valid_utf8(pending)) {
          out.push_back(pending);
        } else {
          std::string rep;
          for (size_t i = 0; i < pending_count; ++i) rep += "\xEF\xBF\xBD";
          out.push_back(rep);
        }
        pending.clear();
        pending_count = 0;
      };
      auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
      };
      for (auto& t : tokens) {
        if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && hex(t[3]) >= 0 && hex(t[4]) >= 0) {
          pending.push_back(static_cast<char>(hex(t[3]) * 16 + hex(t[4])));
          ++pending_count;
        } else {
          flush();
          out.push_back(std::move(t));
        }
      }
      flush();
      tokens.swap(out);
      break;
    }
    case DecoderType::kFuse: {
      std::string all;
      for (const auto& t : tokens) all += t;
      tokens.assign(1, std::move(all));
      break;
    }
    case DecoderType::kStrip:
      for (auto& t : tokens) {
        size_t b = 0, e = t.size();
        for (size_t i = 0; i < d.start && e - b >= d.content.size() && t.compare(b, d.content.size(), d.content) == 0; ++i)
          b += d.content.size();
        for (size_t i = 0; i < d.stop && e - b >= d.content.size() &&
                           t.compare(e - d.content.size(), d.content.size(), d.content) == 0;
             ++i)
          e -= d.content.size();
        t = t.substr(b, e - b);
      }
      break;
    case DecoderType::kMetaspace:
      for (size_t i = 0; i < tokens.size(); ++i) {
        replace_all(tokens[i], d.replacement, " ");
        if (i == 0 && d.prepend_scheme != PrependScheme::kNever && !tokens[i].empty() && tokens[i][0] == ' ')
          tokens[i].erase(0, 1);
      }
      break;
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open ", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BPE

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
    int32_t rank, merged;
    merges.find(c.left, c.right, rank, merged);
    syms[i] = merged;
    syms[j] = -1;
    next[i] = next[j];
    if (next[j] >= 0) prev[static_cast<size_t>(next[j])] = static_cast<int32_t>(i);
    push(prev[i]);
    push(static_cast<int32_t>(i));
  }
  size_t w = 0;
  for (int32_t k = 0; k >= 0 && static_cast<size_t>(k) < n; k = next[static_cast<size_t>(k)]) syms[w++] = syms[static_cast<size_t>(k)];
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
      } else if (byte_fallback && has_byte_fallback_ids &&
                 std::all_of(p, p + len, [&](char b) { return byte_fallback_ids[static_cast<unsigned char>(b)] >= 0; })) {
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
  if (word.size() > kMaxCachedWordBytes) return;  // long words (e.g. whole SentencePiece sections) are not worth caching
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (cache.size() >= kMaxCachedWords) cache.clear();
  cache.emplace(std::string(word), syms);
}

void Tokenizer::Impl::encode_section(std::string_view text, bool first_section, std::vector<int32_t>& out) const {
  thread_local Pieces a, b;
  a.buf.assign(text);
  if (normalizer) apply_normalizer(*normalizer, a.buf);
  a.ranges.clear();
  if (!a.buf.empty()) a.ranges.emplace_back(0, a.buf.size());
  Pieces* result = &a;
  if (pre_tokenizer) {
    apply_pre_tokenizer(*pre_tokenizer, first_section, a, b);
    result = &b;
  }
  for (const auto& [s, e] : result->ranges) bpe_word(std::string_view(result->buf.data() + s, e - s), out);
}

std::vector<int32_t> Tokenizer::encode(std::string_view input, bool add_special_tokens, bool parse_special) const {
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
    if (mb > section_start) t.encode_section(input.substr(section_start, mb - section_start), section_start == 0, ids);
    ids.push_back(tok.id);
    section_start = i = me;
  }
  if (section_start < n) t.encode_section(input.substr(section_start), section_start == 0, ids);
  if (add_special_tokens) ids.insert(ids.end(), t.post_suffix.begin(), t.post_suffix.end());
  return ids;
}

std::string Tokenizer::Impl::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    const int32_t id = ids[k];
    if (id < 0 || static_cast<size_t>(id) >= id_to_token.size()) fail("decode: token id ", id, " at index ", k, " is out of range [0, ", id_to_token.size(), ")");
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
  json root;
  try {
    root = parse_json_limited(tokenizer_json, "tokenizer.json");
    if (root.is_discarded()) root = json::parse(tokenizer_json);  // for the parser's message
  } catch (const json::exception& e) {
    fail("tokenizer.json: invalid JSON: ", e.what());
  }
  if (!root.is_object()) fail("tokenizer.json: expected a JSON object at the top level");
  auto impl = std::make_unique<Impl>();
  Impl& t = *impl;

  const json& model = require(root, "model", "tokenizer.json");
  std::string model_type = model.contains("type") && model["type"].is_string() ? model["type"].get<std::string>() : "";
  if (model_type.empty() && model.contains("merges")) model_type = "BPE";
  if (model_type != "BPE") fail("tokenizer.json: model.type \"", model_type, "\" is not supported (only BPE)");

  const json& vocab = require(model, "vocab", "tokenizer.json: model");
  if (!vocab.is_object()) fail("tokenizer.json: model.vocab: expected an object of token -> id");
  int32_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer()) fail("tokenizer.json: model.vocab[\"", it.key(), "\"]: expected an integer id");
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id > 50000000) fail("tokenizer.json: model.vocab[\"", it.key(), "\"]: id ", id, " out of range");
    max_id = std::max(max_id, static_cast<int32_t>(id));
  }
  const json added_json = root.contains("added_tokens") && root["added_tokens"].is_array() ? root["added_tokens"] : json::array();
  for (size_t i = 0; i < added_json.size(); ++i) {
    const json& a = added_json[i];
    if (!a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") || !a["content"].is_string())
      fail("tokenizer.json: added_tokens[", i, "]: needs integer \"id\" and string \"content\"");
    const int64_t id = a["id"].get<int64_t>();
    if (id < 0 || id > 50000000) fail("tokenizer.json: added_tokens[", i, "]: id ", id, " out of range");
    max_id = std::max(max_id, static_cast<int32_t>(id));
  }
  t.id_to_token.assign(static_cast<size_t>(max_id + 1), std::string());
  t.added_kind.assign(static_cast<size_t>(max_id + 1), 0);
  t.vocab.reserve(vocab.size() + added_json.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const auto id = it.value().get<int32_t>();
    t.id_to_token[static_cast<size_t>(id)] = it.key();
    t.vocab.emplace(it.key(), id);
  }

  // Merges: "a b" strings or [a, b] pairs.
  if (model.contains("merges")) {
    const json& merges = model["merges"];
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
      if (im == t.vocab.end()) fail("tokenizer.json: model.merges[", i, "]: merged token \"", a + b, "\" is not in the vocabulary");
      t.merges.insert(ia->second, ib->second, static_cast<int32_t>(i), im->second);
    }
  }
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = t.vocab.find(model["unk_token"].get<std::string>());
    if (it == t.vocab.end()) fail("tokenizer.json: model.unk_token \"", model["unk_token"].get<std::string>(), "\" is not in the vocabulary");
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

  // Added tokens: they also become vocabulary entries.
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

  if (root.contains("normalizer") && !root["normalizer"].is_null())
    t.normalizer = parse_normalizer(root["normalizer"], "tokenizer.json: normalizer");
  if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null())
    t.pre_tokenizer = parse_pre_tokenizer(root["pre_tokenizer"], "tokenizer.json: pre_tokenizer");
  if (root.contains("decoder") && !root["decoder"].is_null())
    t.decoder = parse_decoder(root["decoder"], "tokenizer.json: decoder");
  const bool has_post = root.contains("post_processor") && !root["post_processor"].is_null();
  if (has_post) parse_post_processor(t, root["post_processor"], "tokenizer.json: post_processor");

  // tokenizer_config.json
  json config = json::object();
  if (!tokenizer_config_json.empty()) {
    try {
      config = parse_json_limited(tokenizer_config_json, "tokenizer_config.json");
      if (config.is_discarded()) config = json::parse(tokenizer_config_json);  // for the parser's message
    } catch (const json::exception& e) {
      fail("tokenizer_config.json: invalid JSON: ", e.what());
    }
    if (!config.is_object()) fail("tokenizer_config.json: expected a JSON object at the top level");
  }
  if (config.contains("bos_token")) t.bos_token = token_content(config["bos_token"]);
  if (config.contains("eos_token")) t.eos_token = token_content(config["eos_token"]);
  if (!t.bos_token.empty()) t.bos_id = lookup_token(t, t.bos_token);
  if (!t.eos_token.empty()) t.eos_id = lookup_token(t, t.eos_token);
  t.clean_up_tokenization_spaces = get_bool(config, "clean_up_tokenization_spaces", false);
  if (config.contains("chat_template")) {
    const json& ct = config["chat_template"];
    if (ct.is_string()) {
      t.chat_template = ct.get<std::string>();
    } else if (ct.is_array()) {
      for (const json& entry : ct)
        if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") && entry["template"].is_string())
          t.chat_template = entry["template"].get<std::string>();
    }
  }
  if (!has_post) {
    // Files without a post-processor follow the config's add_bos_token / add_eos_token.
    if (get_bool(config, "add_bos_token", false) && t.bos_id) t.post_prefix.push_back(*t.bos_id);
    if (get_bool(config, "add_eos_token", false) && t.eos_id) t.post_suffix.push_back(*t.eos_id);
  }
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  const std::string json_text = read_file(path);
  std::string config_text;
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? std::string(".") : path.substr(0, slash);
  std::ifstream probe(dir + "/tokenizer_config.json", std::ios::binary);
  if (probe) {
    std::ostringstream ss;
    ss << probe.rdbuf();
    config_text = ss.str();
  }
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
  return id >= 0 && static_cast<size_t>(id) < impl_->added_kind.size() && impl_->added_kind[static_cast<size_t>(id)] == 2;
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

std::string StreamDecoder::push(int32_t id) {
  ids_.push_back(id);
  std::string text = tokenizer_->decode(ids_, skip_special_);
  if (text.size() <= prefix_.size() || text.compare(0, prefix_.size(), prefix_) != 0) return {};
  if (text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0) return {};
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
    if (text.size() > prefix_.size() && text.compare(0, prefix_.size(), prefix_) == 0) out = text.substr(prefix_.size());
  }
  ids_.clear();
  prefix_.clear();
  prefix_index_ = 0;
  return out;
}

}  // namespace hfstatic
