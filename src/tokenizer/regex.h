// A small regular-expression engine for the patterns of tokenizer.json (Split pre-tokenizers,
// Replace normalizers and decoders), with the leftmost-first semantics of Oniguruma (what Hugging
// Face tokenizers uses): a Pike VM over code points, linear in the text for each match attempt,
// with a step budget that bounds the whole search. Supported: literals and escapes, `.`, classes
// with ranges, negation and nested (union) classes, \s \S \d \D \w \W \h \H and \p{..} / \P{..}
// general categories, alternation, (?: ) ( ) (?i: ) (?i) groups, greedy and lazy ? * + {m,n},
// lookahead (?= ) (?! ), anchors ^ $ \A \z \Z \b \B. Anything else (possessive quantifiers, atomic
// groups, lookbehind, backreferences, scripts) is refused at compile time with an error naming the
// construct.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hfstatic::tokenizer {

class Regex {
 public:
  // Throws Error "regex \"PATTERN\": unsupported CONSTRUCT" (or a syntax error) when it cannot compile.
  explicit Regex(std::string_view pattern);
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // Appends the byte ranges [begin, end) of every non-empty, non-overlapping match in `text`
  // (valid UTF-8), leftmost-first, in order. Throws Error when the step budget is exhausted.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const;
  // Replaces every match with `content`; false, `out` unspecified, when it would pass `limit` bytes.
  bool replace_all(std::string_view text, std::string_view content, std::string& out, size_t limit = SIZE_MAX) const;
  const std::string& pattern() const { return pattern_; }

  struct Program;

 private:
  std::string pattern_;
  std::unique_ptr<Program> program_;
};

}  // namespace hfstatic::tokenizer
