#include "tokenizer/unicode.h"

#include <algorithm>
#include <vector>

namespace hfstatic::unicode {
namespace {
#include "tokenizer/unicode_tables.inc"
#include "tokenizer/unicode_tables_extra.inc"

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

int combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* end = kCombiningClass + std::size(kCombiningClass);
  const auto* it =
      std::lower_bound(kCombiningClass, end, cp, [](const uint32_t(&e)[2], char32_t v) { return e[0] < v; });
  return (it != end && (*it)[0] == cp) ? static_cast<int>((*it)[1]) : 0;
}

const uint32_t* find_decomposition(char32_t cp) {
  const auto* end = kDecomposition + std::size(kDecomposition);
  const auto* it =
      std::lower_bound(kDecomposition, end, cp, [](const uint32_t(&e)[3], char32_t v) { return e[0] < v; });
  return (it != end && (*it)[0] == cp) ? *it : nullptr;
}

char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* end = kComposition + std::size(kComposition);
  const auto* it = std::lower_bound(kComposition, end, std::pair<char32_t, char32_t>(a, b),
                                    [](const uint32_t(&e)[3], std::pair<char32_t, char32_t> v) {
                                      return e[0] != v.first ? e[0] < v.first : e[1] < v.second;
                                    });
  return (it != end && (*it)[0] == a && (*it)[1] == b) ? (*it)[2] : 0;
}

// Full compatibility decomposition when it differs from the canonical one, else nullptr.
const uint32_t* find_compat(char32_t cp, size_t& length) {
  const auto* end = kCompat + std::size(kCompat);
  const auto* it = std::lower_bound(kCompat, end, cp, [](const uint32_t(&e)[2], char32_t v) { return e[0] < v; });
  if (it == end || (*it)[0] != cp) return nullptr;
  length = (*it)[1] & 31;
  return kCompatPool + ((*it)[1] >> 5);
}

char32_t lower_simple(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  const auto* end = kLowercase + std::size(kLowercase);
  const auto* it = std::lower_bound(kLowercase, end, cp, [](const uint32_t(&e)[2], char32_t v) { return e[0] < v; });
  return (it != end && (*it)[0] == cp) ? (*it)[1] : cp;
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (const uint32_t* d = find_decomposition(cp)) {
    decompose(d[1], out);
    if (d[2]) decompose(d[2], out);
    return;
  }
  out.push_back(cp);
}

bool nfc_may_change(char32_t cp) {
  if (cp < 0x300) return false;
  const auto* end = kNfcCheckRanges + std::size(kNfcCheckRanges);
  const auto* it =
      std::upper_bound(kNfcCheckRanges, end, cp, [](char32_t v, const uint32_t(&e)[2]) { return v < e[0]; });
  if (it == kNfcCheckRanges) return false;
  --it;
  return cp >= (*it)[0] && cp <= (*it)[1];
}

}  // namespace

const char* unicode_version() { return HFSTATIC_UNICODE_VERSION; }

Category category(char32_t cp) {
  if (cp >= 0x110000) return Cn;
  return static_cast<Category>(kCatStage2[kCatStage1[cp >> 8]][cp & 0xFF]);
}

bool is_whitespace(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Number of leading bytes of s[i..] that form a valid prefix of some well-formed sequence
// (at least 1), and whether the sequence is complete. Follows Table 3-7 of the Unicode standard.
static size_t maximal_subpart(std::string_view s, size_t i, bool& complete) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = b(i);
  complete = false;
  if (b0 < 0x80) {
    complete = true;
    return 1;
  }
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF)
    need = 1;
  else if (b0 == 0xE0) {
    need = 2;
    lo = 0xA0;
  } else if (b0 >= 0xE1 && b0 <= 0xEC)
    need = 2;
  else if (b0 == 0xED) {
    need = 2;
    hi = 0x9F;
  } else if (b0 >= 0xEE && b0 <= 0xEF)
    need = 2;
  else if (b0 == 0xF0) {
    need = 3;
    lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3)
    need = 3;
  else if (b0 == 0xF4) {
    need = 3;
    hi = 0x8F;
  } else
    return 1;
  size_t k = 1;
  for (; k <= need; ++k) {
    if (i + k >= s.size()) return k;
    const unsigned char c = b(i + k);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) return k;
  }
  complete = true;
  return k;
}

size_t valid_sequence_length(std::string_view s, size_t i) {
  bool complete;
  const size_t n = maximal_subpart(s, i, complete);
  return complete ? n : 0;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = valid_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string to_valid_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  size_t i = 0;
  while (i < s.size()) {
    bool complete;
    const size_t n = maximal_subpart(s, i, complete);
    if (complete)
      out.append(s.substr(i, n));
    else
      out.append("\xEF\xBF\xBD");
    i += n;
  }
  return out;
}

static std::string normalize_full(std::string_view s, bool compat, bool compose) {
  const char* p = s.data();
  const char* end = p + s.size();

  std::vector<char32_t> cps;
  cps.reserve(s.size());
  p = s.data();
  while (p < end) {
    char32_t cp;
    p += decode(p, end, cp);
    size_t length = 0;
    const uint32_t* full = compat ? find_compat(cp, length) : nullptr;
    if (full)
      cps.insert(cps.end(), full, full + length);
    else
      decompose(cp, cps);
  }
  // Canonical ordering: stable sort runs of non-starters by combining class.
  for (size_t i = 0; i < cps.size();) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  if (!compose) {
    std::string result;
    result.reserve(s.size());
    for (char32_t cp : cps) append_utf8(result, cp);
    return result;
  }
  // Canonical composition.
  std::vector<char32_t> out;
  out.reserve(cps.size());
  bool has_starter = false;
  size_t starter = 0;
  int last_cc = 0;
  for (char32_t cp : cps) {
    const int cc = combining_class(cp);
    if (has_starter) {
      const bool adjacent = out.size() == starter + 1;
      if (adjacent || (last_cc != 0 && last_cc < cc)) {
        if (const char32_t c = compose_pair(out[starter], cp)) {
          out[starter] = c;
          continue;
        }
      }
    }
    if (cc == 0) {
      starter = out.size();
      has_starter = true;
    }
    last_cc = cc;
    out.push_back(cp);
  }
  std::string result;
  result.reserve(s.size());
  for (char32_t cp : out) append_utf8(result, cp);
  return result;
}

// Only the stretches around code points that NFC may change are normalized; a code point
// outside kNfcCheckRanges is a starter that never composes with what precedes it, so it
// bounds such a stretch.
std::string nfc(std::string_view s) {
  const char* base = s.data();
  const char* end = base + s.size();
  std::string out;
  size_t copied = 0;     // bytes of s already in out
  size_t last_safe = 0;  // start of the last code point that NFC leaves alone
  bool changed = false;
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0xCC) {  // below U+0300
      last_safe = i;
      i += b0 < 0x80 ? 1 : 2;
      continue;
    }
    char32_t cp;
    const size_t len = decode(base + i, end, cp);
    if (!nfc_may_change(cp)) {
      last_safe = i;
      i += len;
      continue;
    }
    // Stretch [last_safe, j) where j is the next code point NFC leaves alone.
    size_t j = i + len;
    while (j < s.size()) {
      char32_t c2;
      const size_t l2 = decode(base + j, end, c2);
      if (c2 < 0x300 || !nfc_may_change(c2)) break;
      j += l2;
    }
    const size_t from = std::max(last_safe, copied);
    if (!changed) {
      out.reserve(s.size());
      changed = true;
    }
    out.append(s.substr(copied, from - copied));
    out += normalize_full(s.substr(from, j - from), false, true);
    copied = j;
    last_safe = j;
    i = j;
  }
  if (!changed) return std::string(s);
  out.append(s.substr(copied));
  return out;
}

std::string normalize(std::string_view s, Form form) {
  if (form == Form::kNfc) return nfc(s);
  size_t i = 0;
  while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
  if (i == s.size()) return std::string(s);
  if (i > 0) --i;  // an ASCII starter may compose with the marks after it
  return std::string(s.substr(0, i)) +
         normalize_full(s.substr(i), form == Form::kNfkc || form == Form::kNfkd, form == Form::kNfkc);
}

void CodePoints::load(std::string_view s) {
  cp.clear();
  offset.clear();
  const char* p = s.data();
  const char* end = p + s.size();
  while (p < end) {
    char32_t c;
    offset.push_back(static_cast<size_t>(p - s.data()));
    p += decode(p, end, c);
    cp.push_back(c);
  }
  offset.push_back(s.size());
  n = cp.size();
}

std::string lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const char* p = s.data();
  const char* end = p + s.size();
  while (p < end) {
    char32_t cp;
    p += decode(p, end, cp);
    if (cp == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE: i + COMBINING DOT ABOVE
      out += "i\xCC\x87";
      continue;
    }
    append_utf8(out, lower_simple(cp));
  }
  return out;
}

}  // namespace hfstatic::unicode
