// Pre-tokenizers: Sequence, ByteLevel, Split (a literal, a built-in matcher or a compiled regex),
// Metaspace, and the character-set splitters Punctuation, Digits, WhitespaceSplit, BertPreTokenizer,
// CharDelimiterSplit, with Whitespace as a regex.
#include <algorithm>
#include <iterator>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic::tokenizer {

using json = nlohmann::json;

ByteLevelTables::ByteLevelTables() {
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

const ByteLevelTables& byte_level() {
  static const ByteLevelTables tables;
  return tables;
}

namespace {

SplitBehavior parse_behavior(const json& j, const std::string& where, SplitBehavior fallback) {
  if (!j.contains("behavior")) return fallback;
  const std::string behavior = get_string(j, "behavior", where);
  if (behavior == "Removed") return SplitBehavior::kRemoved;
  if (behavior == "Isolated") return SplitBehavior::kIsolated;
  if (behavior == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (behavior == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (behavior == "Contiguous") return SplitBehavior::kContiguous;
  fail(where, ".behavior: unknown split behavior \"", behavior, "\"");
}

PreTokenizer char_splitter(CharSet set, SplitBehavior behavior) {
  PreTokenizer p{};
  p.type = PreTokenizerType::kSplit;
  p.char_set = set;
  p.behavior = behavior;
  return p;
}

std::shared_ptr<const Regex> compile_split_regex(const std::string& pattern, const std::string& where) {
  try {
    return std::make_shared<const Regex>(pattern);
  } catch (const Error& e) {
    fail(where, ".pattern: unsupported Split regex: ", e.what());
  }
}

PreTokenizer parse_split(const json& j, const std::string& where) {
  PreTokenizer p{};
  p.type = PreTokenizerType::kSplit;
  bool is_regex = false;
  const std::string pattern = pattern_string(require(j, "pattern", where), where, &is_regex);
  if (is_regex) {
    p.regex = recognize_split_regex(pattern);
    if (!p.regex) p.general_regex = compile_split_regex(pattern, where);
  } else {
    if (pattern.empty()) fail(where, ".pattern: empty String pattern");
    p.literal = pattern;
  }
  if (!j.contains("behavior")) get_string(j, "behavior", where);  // names the missing key
  p.behavior = parse_behavior(j, where, SplitBehavior::kIsolated);
  p.invert = get_bool(j, "invert", false);
  return p;
}

}  // namespace

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
    p = parse_split(j, where);
  } else if (type == "Punctuation") {
    p = char_splitter(CharSet::kPunctuation, parse_behavior(j, where, SplitBehavior::kIsolated));
  } else if (type == "Digits") {
    const bool individual = get_bool(j, "individual_digits", false);
    p = char_splitter(CharSet::kNumeric, individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
  } else if (type == "WhitespaceSplit") {
    p = char_splitter(CharSet::kWhitespace, SplitBehavior::kRemoved);
  } else if (type == "BertPreTokenizer") {
    p.type = PreTokenizerType::kSequence;
    p.children.push_back(char_splitter(CharSet::kWhitespace, SplitBehavior::kRemoved));
    p.children.push_back(char_splitter(CharSet::kPunctuation, SplitBehavior::kIsolated));
  } else if (type == "CharDelimiterSplit") {
    const std::string d = get_string(j, "delimiter", where);
    char32_t cp = 0;
    if (d.empty() || unicode::decode(d.data(), d.data() + d.size(), cp) != d.size())
      fail(where, ".delimiter: expected a single character");
    p = char_splitter(CharSet::kOneChar, SplitBehavior::kRemoved);
    p.delimiter = cp;
  } else if (type == "Whitespace") {
    p.type = PreTokenizerType::kSplit;
    p.general_regex = compile_split_regex(R"(\w+|[^\w\s]+)", where);
    p.behavior = SplitBehavior::kRemoved;
    p.invert = true;
  } else if (type == "Metaspace") {
    p.type = PreTokenizerType::kMetaspace;
    p.replacement = j.contains("replacement") && j["replacement"].is_string() ? j["replacement"].get<std::string>()
                                                                              : std::string("\xE2\x96\x81");
    // One character, as in Hugging Face: each space becomes it, a string would multiply the text.
    char32_t cp;
    if (p.replacement.empty() || !unicode::is_valid_utf8(p.replacement) ||
        unicode::decode(p.replacement.data(), p.replacement.data() + p.replacement.size(), cp) != p.replacement.size())
      fail(where, ".replacement: expected one character, not ", p.replacement.size(), " bytes");
    p.prepend_scheme = parse_prepend_scheme(j, where);
    p.split = get_bool(j, "split", true);
  } else {
    fail(where, ": unsupported pre_tokenizer type \"", type, "\"");
  }
  return p;
}

namespace {

bool in_char_set(const PreTokenizer& p, char32_t cp) {
  switch (p.char_set) {
    case CharSet::kPunctuation:
      if (cp < 0x80)
        return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
               (cp >= 0x7B && cp <= 0x7E);
      return unicode::is_punct(unicode::category(cp));
    case CharSet::kNumeric:
      if (cp < 0x80) return cp >= '0' && cp <= '9';
      return unicode::is_number(unicode::category(cp));
    case CharSet::kWhitespace: return unicode::is_whitespace(cp);
    case CharSet::kOneChar: return cp == p.delimiter;
    case CharSet::kNone: break;
  }
  return false;
}

// Every character of the set is a match of its own.
void char_matches(const PreTokenizer& p, std::string_view piece, std::vector<std::pair<size_t, size_t>>& matches) {
  const char* base = piece.data();
  const char* end = base + piece.size();
  for (const char* q = base; q < end;) {
    char32_t cp;
    const size_t len = unicode::decode(q, end, cp);
    if (in_char_set(p, cp)) matches.emplace_back(q - base, q - base + len);
    q += len;
  }
}

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
    } else if (p.general_regex) {
      p.general_regex->find_all(piece, matches);
    } else if (p.char_set != CharSet::kNone) {
      char_matches(p, piece, matches);
    } else {
      for (size_t pos = 0, hit; (hit = piece.find(p.literal, pos)) != std::string_view::npos;
           pos = hit + p.literal.size())
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
          if (s.second && prev_open)
            out.ranges.back().second = s.first.second;
          else
            out.ranges.push_back(s.first);
          prev_open = !s.second;
        }
        break;
      }
      case SplitBehavior::kMergedWithNext:
        // A delimiter joins the piece after it unless that piece is a delimiter too.
        for (size_t k = 0; k < segs.size(); ++k) {
          if (segs[k].second && k + 1 < segs.size() && !segs[k + 1].second) {
            out.ranges.emplace_back(segs[k].first.first, segs[k + 1].first.second);
            ++k;
          } else {
            out.ranges.push_back(segs[k].first);
          }
        }
        break;
      case SplitBehavior::kContiguous: {
        bool prev_delim = false;
        for (const auto& s : segs) {
          if (s.second && prev_delim)
            out.ranges.back().second = s.first.second;
          else
            out.ranges.push_back(s.first);
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
    for (size_t pos = 0, hit; (hit = s.find(p.replacement, pos)) != std::string::npos;
         pos = hit + p.replacement.size()) {
      if (hit > start) {
        out.ranges.emplace_back(base + start, base + hit);
        start = hit;
      }
    }
    if (start < s.size()) out.ranges.emplace_back(base + start, base + s.size());
  }
}

}  // namespace

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
    case PreTokenizerType::kSplit: split_pieces(p, in, out); break;
    case PreTokenizerType::kByteLevel: byte_level_pieces(p, in, out); break;
    case PreTokenizerType::kMetaspace: metaspace_pieces(p, first_section, in, out); break;
  }
}

}  // namespace hfstatic::tokenizer
