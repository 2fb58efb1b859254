// The compiled form of a Regex (regex.h): character classes and Pike VM instructions.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"

namespace hfstatic::tokenizer {

// One member of a character class: a code point range, a set of general categories, White_Space,
// word characters (L, Nl, M, Nd, Pc) or hex digits; each may be negated (\S, \P{L}, ...).
struct ClassItem {
  enum Kind : uint8_t { kRange, kCategories, kSpace, kWord, kHexDigit } kind = kRange;
  bool negate = false;
  char32_t lo = 0, hi = 0;
  uint32_t categories = 0;  // bit i: unicode::Category i
  bool matches(char32_t cp) const;
};

struct CharClass {
  std::vector<ClassItem> items;
  bool negate = false;
  uint64_t ascii[2] = {0, 0};  // membership of U+0000..U+007F, filled by finish()
  void finish();
  bool matches(char32_t cp) const {
    if (cp < 128) return (ascii[cp >> 6] >> (cp & 63)) & 1;
    return matches_slow(cp);
  }
  bool matches_slow(char32_t cp) const;
};

enum class Assertion : uint8_t {
  kLineStart,
  kLineEnd,
  kTextStart,
  kTextEnd,
  kTextEndNewline,
  kWordBoundary,
  kNotWordBoundary
};

enum class Op : uint8_t {
  kChar,       // cp
  kClass,      // x: class index
  kAny,        // any code point but \n
  kSplit,      // try x, then y
  kJmp,        // x
  kAssert,     // assertion
  kLookahead,  // x: index of the sub-program; negative
  kMatch,
};

struct Inst {
  Op op = Op::kMatch;
  Assertion assertion = Assertion::kLineStart;
  bool negative = false;
  char32_t cp = 0;
  int32_t x = 0, y = 0;
};

struct Regex::Program {
  std::vector<CharClass> classes;
  std::vector<std::vector<Inst>> code;  // code[0]: the pattern; others: lookahead bodies
  bool has_lookahead = false;
  // The program counters reachable from the start of code[0] without consuming a character, in
  // priority order, when no assertion is among them (the closure is then the same everywhere).
  std::vector<int32_t> start_closure;
  bool start_closure_fixed = false;
};

// Builds the program; throws Error naming `pattern` and the construct it cannot compile.
void compile_regex(std::string_view pattern, Regex::Program& program);

bool is_word_char(char32_t cp);  // \w: L, Nl, M, Nd, Pc

}  // namespace hfstatic::tokenizer
