#include "tokenizer/split_pattern.h"

#include <cstdint>

#include "tokenizer/unicode.h"

namespace hfstatic::tokenizer {
namespace {

namespace u = hfstatic::unicode;

// Character classes used by the patterns, precomputed once per code point.
enum : uint8_t {
  kL = 1,       // \p{L}
  kN = 2,       // \p{N}
  kS = 4,       // \s
  kNl = 8,      // \r or \n
  kUpper = 16,  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
  kLower = 32,  // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
};

uint8_t classify(char32_t cp, bool js_space) {
  if (cp < 0x80) {
    if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return cp >= 'a' ? (kL | kLower) : (kL | kUpper);
    if (cp >= '0' && cp <= '9') return kN;
    if (cp == '\r' || cp == '\n') return kS | kNl;
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return kS;
    return 0;
  }
  // \s is Unicode White_Space (Oniguruma). js_space: JavaScript's \s instead, which drops U+0085
  // and adds U+FEFF.
  const bool space = js_space ? ((u::is_whitespace(cp) && cp != 0x85) || cp == 0xFEFF) : u::is_whitespace(cp);
  uint8_t f = space ? kS : 0;
  const u::Category c = u::category(cp);
  if (u::is_letter(c)) f |= kL;
  if (u::is_number(c)) f |= kN;
  if (c == u::Lu || c == u::Lt || c == u::Lm || c == u::Lo || u::is_mark(c)) f |= kUpper;
  if (c == u::Ll || c == u::Lm || c == u::Lo || u::is_mark(c)) f |= kLower;
  return f;
}

struct Text : u::CodePoints {
  std::vector<uint8_t> cls;

  void load(std::string_view s, bool js_space) {
    CodePoints::load(s);
    cls.resize(n);
    for (size_t i = 0; i < n; ++i) cls[i] = classify(cp[i], js_space);
  }
  bool is(size_t i, uint8_t f) const { return i < n && (cls[i] & f); }
  bool other(size_t i) const { return i < n && !(cls[i] & (kL | kN | kS)); }    // [^\s\p{L}\p{N}]
  bool prefix(size_t i) const { return i < n && !(cls[i] & (kL | kN | kNl)); }  // [^\r\n\p{L}\p{N}]
  size_t run(size_t i, uint8_t f) const {
    while (i < n && (cls[i] & f)) ++i;
    return i;
  }
};

// Contractions: returns the match end or 0.
size_t contraction(const Text& t, size_t i, bool ignore_case) {
  if (t.cp[i] != '\'' || i + 1 >= t.n) return 0;
  auto lower = [&](size_t k) -> char32_t {
    if (k >= t.n) return 0;
    char32_t c = t.cp[k];
    if (!ignore_case) return c;
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c == 0x17F) return 's';   // LATIN SMALL LETTER LONG S folds to s
    if (c == 0x212A) return 'k';  // KELVIN SIGN folds to k
    return c;
  };
  const char32_t a = lower(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  const char32_t b = lower(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return 0;
}

// \s+(?!\S) then \s+ : the shared whitespace tail of every pattern.
size_t whitespace(const Text& t, size_t i) {
  if (!t.is(i, kS)) return 0;
  const size_t j = t.run(i, kS);
  if (j == t.n) return j;
  if (j - 1 > i) return j - 1;
  return j;
}

size_t match_gpt2(const Text& t, size_t i) {
  if (size_t e = contraction(t, i, false)) return e;
  const size_t k = (t.cp[i] == ' ') ? i + 1 : i;
  if (t.is(k, kL)) return t.run(k, kL);
  if (t.is(k, kN)) return t.run(k, kN);
  if (t.other(k)) {
    size_t j = k;
    while (t.other(j)) ++j;
    return j;
  }
  return whitespace(t, i);
}

size_t match_llama(const Text& t, size_t i, size_t max_digits) {
  if (size_t e = contraction(t, i, true)) return e;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (t.prefix(i) && t.is(i + 1, kL)) return t.run(i + 1, kL);
  if (t.is(i, kL)) return t.run(i, kL);
  // \p{N}{1,N}
  if (t.is(i, kN)) {
    size_t j = i;
    while (j < t.n && j - i < max_digits && t.is(j, kN)) ++j;
    return j;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  {
    const size_t k = (t.cp[i] == ' ' && t.other(i + 1)) ? i + 1 : i;
    if (t.other(k)) {
      size_t j = k;
      while (t.other(j)) ++j;
      return t.run(j, kNl);
    }
  }
  // \s*[\r\n]+
  if (t.is(i, kS)) {
    const size_t j = t.run(i, kS);
    for (size_t k = j; k > i; --k)
      if (t.is(k - 1, kNl)) return k;
  }
  return whitespace(t, i);
}

size_t nemo_letters(const Text& t, size_t a) {
  // [UP]*[LO]+
  const size_t b = t.run(a, kUpper);
  for (size_t k = b + 1; k-- > a;) {
    if (t.is(k, kLower)) return t.run(k, kLower);
  }
  return 0;
}

size_t nemo_letters2(const Text& t, size_t a) {
  // [UP]+[LO]*
  const size_t b = t.run(a, kUpper);
  if (b == a) return 0;
  return t.run(b, kLower);
}

size_t match_nemo(const Text& t, size_t i) {
  if (t.prefix(i)) {
    if (size_t e = nemo_letters(t, i + 1)) return e;
  }
  if (size_t e = nemo_letters(t, i)) return e;
  if (t.prefix(i)) {
    if (size_t e = nemo_letters2(t, i + 1)) return e;
  }
  if (size_t e = nemo_letters2(t, i)) return e;
  if (t.is(i, kN)) return i + 1;
  {
    const size_t k = (t.cp[i] == ' ' && t.other(i + 1)) ? i + 1 : i;
    if (t.other(k)) {
      size_t j = k;
      while (t.other(j)) ++j;
      while (j < t.n && (t.is(j, kNl) || t.cp[j] == '/')) ++j;
      return j;
    }
  }
  if (t.is(i, kS)) {
    const size_t j = t.run(i, kS);
    for (size_t k = j; k > i; --k)
      if (t.is(k - 1, kNl)) return k;
  }
  return whitespace(t, i);
}

constexpr std::string_view kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kNemo =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

}  // namespace

const char* gpt2_regex() { return kGpt2.data(); }

std::optional<SplitPattern> recognize_split_regex(std::string_view regex) {
  if (regex == kGpt2) return SplitPattern::kGpt2;
  if (regex == kLlama3) return SplitPattern::kLlama3;
  if (regex == kQwen2) return SplitPattern::kQwen2;
  if (regex == kNemo) return SplitPattern::kNemo;
  // Some exports spell the case-insensitive contractions without the inline group.
  static const std::string kLlama3Explicit =
      R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (regex == kLlama3Explicit) return SplitPattern::kLlama3;
  return std::nullopt;
}

void find_pattern_matches(SplitPattern pattern, std::string_view text, std::vector<std::pair<size_t, size_t>>& matches,
                          bool js_space) {
  thread_local Text t;
  t.load(text, js_space);
  size_t i = 0;
  while (i < t.n) {
    size_t e = 0;
    switch (pattern) {
      case SplitPattern::kGpt2: e = match_gpt2(t, i); break;
      case SplitPattern::kLlama3: e = match_llama(t, i, 3); break;
      case SplitPattern::kQwen2: e = match_llama(t, i, 1); break;
      case SplitPattern::kNemo: e = match_nemo(t, i); break;
    }
    if (e <= i) {  // no alternative matches here: leave the character to the gap
      ++i;
      continue;
    }
    matches.emplace_back(t.offset[i], t.offset[e]);
    i = e;
  }
}

}  // namespace hfstatic::tokenizer
