// Normalizers: Sequence, NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, BertNormalizer, Precompiled
// (precompiled.cpp), Replace (a string or a regex), Prepend and Strip.
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic::tokenizer {

using json = nlohmann::json;

namespace {

std::shared_ptr<const Regex> compile_normalizer_regex(const std::string& pattern, const std::string& where) {
  try {
    return std::make_shared<const Regex>(pattern);
  } catch (const Error& e) {
    fail(where, ".pattern: ", e.what());
  }
}

// What a Replace or Prepend inserts, refused past kMaxInsertBytes.
std::string insert_string(const json& j, const char* key, const std::string& where) {
  std::string content = get_string(j, key, where);
  if (content.size() > kMaxInsertBytes)
    fail(where, ".", key, ": ", content.size(), " bytes; what a normalizer inserts is at most ", kMaxInsertBytes,
         " bytes");
  return content;
}

// Bytes out per byte in, at most: compatibility decompositions make up to 18 code points of one,
// canonical ones and case mappings a few bytes of two.
double growth_factor(const Normalizer& n) {
  switch (n.type) {
    case NormalizerType::kNfkc:
    case NormalizerType::kNfkd: return 18;
    case NormalizerType::kNfc:
    case NormalizerType::kNfd: return 4;
    case NormalizerType::kLowercase: return 2;
    case NormalizerType::kBert: return 2 * (n.strip_accents ? 4 : 1) * (n.lowercase ? 2 : 1);
    case NormalizerType::kReplace:
      // Regex matches are never empty: each replaces at least one byte.
      return std::max<double>(1, double(n.content.size()) / double(n.regex ? 1 : n.pattern.size()));
    default: return 1;
  }
}

void parse_bert_normalizer(Normalizer& n, const json& j) {
  n.type = NormalizerType::kBert;
  n.clean_text = get_bool(j, "clean_text", true);
  n.handle_chinese_chars = get_bool(j, "handle_chinese_chars", true);
  n.lowercase = get_bool(j, "lowercase", true);
  n.strip_accents = get_bool(j, "strip_accents", n.lowercase);  // null follows lowercase
}

}  // namespace

Normalizer parse_normalizer(const json& j, const std::string& where) {
  const std::string type = get_string(j, "type", where);
  Normalizer n{};
  if (type == "Sequence") {
    n.type = NormalizerType::kSequence;
    const json& list = require(j, "normalizers", where);
    if (!list.is_array()) fail(where, ".normalizers: expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      n.children.push_back(parse_normalizer(list[i], cat(where, ".normalizers[", i, "]")));
      n.growth *= n.children.back().growth;
      if (n.growth > kMaxChainGrowth)
        fail(n.children.back().name, ": the normalizers up to this one may make ", n.growth, " bytes of one; at most ",
             kMaxChainGrowth, " is accepted");
    }
  } else if (type == "NFC") {
    n.type = NormalizerType::kNfc;
  } else if (type == "NFD") {
    n.type = NormalizerType::kNfd;
  } else if (type == "NFKC") {
    n.type = NormalizerType::kNfkc;
  } else if (type == "NFKD") {
    n.type = NormalizerType::kNfkd;
  } else if (type == "Lowercase") {
    n.type = NormalizerType::kLowercase;
  } else if (type == "StripAccents") {
    n.type = NormalizerType::kStripAccents;
  } else if (type == "BertNormalizer") {
    parse_bert_normalizer(n, j);
  } else if (type == "Precompiled") {
    n.type = NormalizerType::kPrecompiled;
    n.charsmap = parse_precompiled_charsmap(j, where);
  } else if (type == "Replace") {
    n.type = NormalizerType::kReplace;
    bool is_regex = false;
    n.pattern = pattern_string(require(j, "pattern", where), where, &is_regex);
    if (is_regex)
      n.regex = compile_normalizer_regex(n.pattern, where);
    else if (n.pattern.empty())
      fail(where, ".pattern: empty String pattern");
    n.content = insert_string(j, "content", where);
  } else if (type == "Prepend") {
    n.type = NormalizerType::kPrepend;
    n.content = insert_string(j, "prepend", where);
  } else if (type == "Strip") {
    n.type = NormalizerType::kStrip;
    n.strip_left = get_bool(j, "strip_left", true);
    n.strip_right = get_bool(j, "strip_right", true);
  } else {
    fail(where, ": unsupported normalizer type \"", type, "\"");
  }
  n.name = cat(where, " (", type, ")");
  if (n.type != NormalizerType::kSequence) n.growth = growth_factor(n);
  return n;
}

namespace {

bool is_chinese_char(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Removes nonspacing marks (Mn), as Hugging Face's StripAccents.
std::string strip_nonspacing_marks(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const char* p = s.data();
  const char* end = p + s.size();
  while (p < end) {
    char32_t cp;
    const size_t len = unicode::decode(p, end, cp);
    if (cp < 0x300 || unicode::category(cp) != unicode::Mn) out.append(p, len);
    p += len;
  }
  return out;
}

// BertNormalizer: clean_text drops NUL, U+FFFD and other controls and turns whitespace into ' ';
// Chinese characters get a space on each side; then accents are stripped and text lowercased.
void apply_bert(const Normalizer& n, std::string& s) {
  if (n.clean_text || n.handle_chinese_chars) {
    std::string out;
    out.reserve(s.size());
    const char* p = s.data();
    const char* end = p + s.size();
    while (p < end) {
      char32_t cp;
      const size_t len = unicode::decode(p, end, cp);
      const std::string_view ch(p, len);
      p += len;
      if (n.clean_text) {
        if (cp == 0 || cp == 0xFFFD) continue;
        const unicode::Category c = unicode::category(cp);
        const bool control =
            c == unicode::Cc || c == unicode::Cf || c == unicode::Cn || c == unicode::Co || c == unicode::Cs;
        if (control && cp != '\t' && cp != '\n' && cp != '\r') continue;
        if (unicode::is_whitespace(cp)) {
          out.push_back(' ');
          continue;
        }
      }
      if (n.handle_chinese_chars && is_chinese_char(cp)) {
        out.push_back(' ');
        out.append(ch);
        out.push_back(' ');
        continue;
      }
      out.append(ch);
    }
    s.swap(out);
  }
  if (n.strip_accents) s = strip_nonspacing_marks(unicode::normalize(s, unicode::Form::kNfd));
  if (n.lowercase) s = unicode::lowercase(s);
}

void apply_strip(const Normalizer& n, std::string& s) {
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
}

}  // namespace

namespace {

// Every step's output stays within `limit` (what the chain's input allows): the steps that can
// grow without bound stop as they pass it, the others grow their input a few times at most.
void apply_bounded(const Normalizer& n, std::string& s, size_t limit, size_t input_bytes) {
  bool fits = true;
  switch (n.type) {
    case NormalizerType::kSequence:
      for (const auto& c : n.children) apply_bounded(c, s, limit, input_bytes);
      return;
    case NormalizerType::kNfc: s = unicode::nfc(s); break;
    case NormalizerType::kNfd: s = unicode::normalize(s, unicode::Form::kNfd); break;
    case NormalizerType::kNfkc: s = unicode::normalize(s, unicode::Form::kNfkc); break;
    case NormalizerType::kNfkd: s = unicode::normalize(s, unicode::Form::kNfkd); break;
    case NormalizerType::kLowercase: s = unicode::lowercase(s); break;
    case NormalizerType::kStripAccents: s = strip_nonspacing_marks(s); break;
    case NormalizerType::kBert: apply_bert(n, s); break;
    case NormalizerType::kPrecompiled: {
      std::string out;
      fits = apply_precompiled(*n.charsmap, s, out, limit);
      if (fits) s.swap(out);
      break;
    }
    case NormalizerType::kReplace:
      if (n.regex) {
        std::string out;
        fits = n.regex->replace_all(s, n.content, out, limit);
        if (fits) s.swap(out);
      } else {
        fits = replace_all(s, n.pattern, n.content, limit);
      }
      break;
    case NormalizerType::kPrepend:
      fits = s.size() + n.content.size() <= limit;
      if (fits && !s.empty()) s.insert(0, n.content);
      break;
    case NormalizerType::kStrip: apply_strip(n, s); break;
  }
  if (!fits || s.size() > limit) fail_growth(n.name, input_bytes);
}

}  // namespace

void apply_normalizer(const Normalizer& n, std::string& s) { apply_bounded(n, s, growth_limit(s.size()), s.size()); }

}  // namespace hfstatic::tokenizer
