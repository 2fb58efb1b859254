// The regex engine of the Split pre-tokenizer: hand-computed matches under Oniguruma's
// leftmost-first semantics, refusal of unsupported constructs, and agreement with the
// hand-written matchers of the GPT-2 / Llama 3 / Qwen2 / Mistral Nemo patterns on the corpus.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "test_helpers.h"
#include "tokenizer/regex.h"
#include "tokenizer/split_pattern.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic::tokenizer {
namespace {

using testing::HasSubstr;

std::vector<std::string> matches(const std::string& pattern, const std::string& text) {
  std::vector<std::pair<size_t, size_t>> ranges;
  Regex(pattern).find_all(text, ranges);
  std::vector<std::string> out;
  for (const auto& [b, e] : ranges) out.push_back(text.substr(b, e - b));
  return out;
}

using Strings = std::vector<std::string>;

TEST(TokenizerRegex, QuantifiersAndAlternationAreLeftmostFirst) {
  EXPECT_EQ(matches(R"(\p{N}{1,3})", "12345 6"), (Strings{"123", "45", "6"}));
  EXPECT_EQ(matches("a|ab", "ab"), (Strings{"a"}));  // the first alternative wins, not the longest
  EXPECT_EQ(matches("ab|a", "ab"), (Strings{"ab"}));
  EXPECT_EQ(matches("a+?", "aaa"), (Strings{"a", "a", "a"}));
  EXPECT_EQ(matches("a{2,3}?", "aaaaa"), (Strings{"aa", "aa"}));
  EXPECT_EQ(matches("a{2,}", "a aa aaaa"), (Strings{"aa", "aaaa"}));
  EXPECT_EQ(matches("x*", "axxb"), (Strings{"xx"}));  // empty matches are skipped
  EXPECT_EQ(matches("(?:ab)+c?", "ababcab"), (Strings{"ababc", "ab"}));
  EXPECT_EQ(matches("a{,2}", "aaa"), (Strings{"aa", "a"}));
  EXPECT_EQ(matches("a{x}", "a{x}"), (Strings{"a{x}"}));  // not a quantifier: literal braces
}

TEST(TokenizerRegex, LookaheadKeepsTheLastSpaceForTheNextWord) {
  EXPECT_EQ(matches(R"(\s+(?!\S)|\s+)", "a   b  "), (Strings{"  ", " ", "  "}));
  EXPECT_EQ(matches(R"(\w+(?=!))", "hi! yo"), (Strings{"hi"}));
  EXPECT_EQ(matches(R"(\w+(?!!)\b)", "hi! yo"), (Strings{"yo"}));
  EXPECT_EQ(matches(R"(a(?=b(?!c)))", "abc ab"), (Strings{"a"}));
}

TEST(TokenizerRegex, ClassesEscapesAndUnicodeProperties) {
  EXPECT_EQ(matches("[\r\n]+", "a\r\n\nb"), (Strings{"\r\n\n"}));
  EXPECT_EQ(matches(R"([\r\n]+)", "a\r\n\nb"), (Strings{"\r\n\n"}));
  EXPECT_EQ(matches(R"([^\r\n\p{L}\p{N}]?\p{L}+)", "¿Qué? x1"), (Strings{"¿Qué", " x"}));
  EXPECT_EQ(matches("[一-龥]+", "abc日本語def"), (Strings{"日本語"}));
  EXPECT_EQ(matches(R"(\p{Lu}\p{Ll}+)", "Hello World ÉTÉ Été"), (Strings{"Hello", "World", "Été"}));
  EXPECT_EQ(matches(R"(\P{L}+)", "ab12cd!?"), (Strings{"12", "!?"}));
  EXPECT_EQ(matches(R"(\p{^L}+)", "ab12"), (Strings{"12"}));
  EXPECT_EQ(matches(R"(\d+)", "a12٣4b"), (Strings{"12٣4"}));  // \d is Unicode Nd
  EXPECT_EQ(matches(R"(\D+)", "a12b"), (Strings{"a", "b"}));
  EXPECT_EQ(matches(R"(\S+)", "a\u3000b"), (Strings{"a", "b"}));
  EXPECT_EQ(matches(R"(\w+)", "naïve_1 ok"), (Strings{"naïve_1", "ok"}));
  EXPECT_EQ(matches(R"([\p{P}\p{S}]+)", "a+b=c!"), (Strings{"+", "=", "!"}));
  EXPECT_EQ(matches(R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+)", "x.foo [bar"), (Strings{".foo", "[bar"}));
  EXPECT_EQ(matches(R"(\x41\u0042\x{43}\t)", "ABC\t"), (Strings{"ABC\t"}));
  EXPECT_EQ(matches(R"([\-a]+)", "-a-b"), (Strings{"-a-"}));
  EXPECT_EQ(matches("[a-]+", "a-b"), (Strings{"a-"}));
  EXPECT_EQ(matches(".+", "ab\ncd"), (Strings{"ab", "cd"}));
  // BLOOM's Split pattern: a nested class is a union inside the outer (negated) class.
  EXPECT_EQ(matches(R"( ?[^(\s|[.,!?…。，、।۔،])]+)", "Hello, world! (x|y)。z"),
            (Strings{"Hello", " world", "x", "y", "z"}));
}

TEST(TokenizerRegex, CaseInsensitiveGroupsAndAnchors) {
  EXPECT_EQ(matches("(?i:'s|'t)", "It'S 'T"), (Strings{"'S", "'T"}));
  EXPECT_EQ(matches("(?i)ab|c", "AB C c"), (Strings{"AB", "C", "c"}));
  EXPECT_EQ(matches("(?i:k)", "kK\u212A"), (Strings{"k", "K", "\u212A"}));  // KELVIN SIGN folds to k
  EXPECT_EQ(matches("^a", "a\na"), (Strings{"a", "a"}));                    // Ruby syntax: ^ and $ are line anchors
  EXPECT_EQ(matches(R"(\Aa)", "a\na"), (Strings{"a"}));
  EXPECT_EQ(matches("a$", "a\nba"), (Strings{"a", "a"}));
  EXPECT_EQ(matches(R"(a\z)", "a\na"), (Strings{"a"}));
  EXPECT_EQ(matches(R"(\bfoo\b)", "foo food foo"), (Strings{"foo", "foo"}));
  EXPECT_EQ(matches(R"(\Bo+)", "foo o"), (Strings{"oo"}));
}

std::string compile_error(const std::string& pattern) {
  try {
    Regex r(pattern);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenizerRegex, UnsupportedConstructsAreNamedErrors) {
  EXPECT_THAT(compile_error("a++"), HasSubstr("unsupported possessive quantifier"));
  EXPECT_THAT(compile_error("(?>a)"), HasSubstr("unsupported atomic group"));
  EXPECT_THAT(compile_error("(?<=a)b"), HasSubstr("unsupported lookbehind"));
  EXPECT_THAT(compile_error(R"((a)\1)"), HasSubstr("unsupported backreference"));
  EXPECT_THAT(compile_error(R"(\p{Han})"), HasSubstr("unsupported property \\p{Han}"));
  EXPECT_THAT(compile_error("[[:alpha:]]"), HasSubstr("unsupported POSIX bracket class"));
  EXPECT_THAT(compile_error("[a[^b]]"), HasSubstr("unsupported negated nested character class"));
  EXPECT_THAT(compile_error("(?x)a"), HasSubstr("unsupported group option 'x'"));
  EXPECT_THAT(compile_error("(?i:é)"), HasSubstr("case-insensitive matching of non-ASCII letters"));
  EXPECT_THAT(compile_error("(?<=a)b"), HasSubstr("regex \"(?<=a)b\""));  // names the pattern
  EXPECT_THAT(compile_error("(a"), HasSubstr("missing ')'"));
  EXPECT_THAT(compile_error("[a"), HasSubstr("missing ']'"));
  EXPECT_THAT(compile_error("a{3,1}"), HasSubstr("m > n"));
  EXPECT_THAT(compile_error("a)"), HasSubstr("unmatched ')'"));
  EXPECT_THAT(compile_error("*a"), HasSubstr("quantifier without an operand"));
}

// The general engine and the hand-written matchers agree on every corpus string (Oniguruma \s).
TEST(TokenizerRegex, AgreesWithTheHandWrittenMatchersOnTheCorpus) {
  const std::vector<std::pair<std::string, SplitPattern>> patterns = {
      {gpt2_regex(), SplitPattern::kGpt2},
      {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       SplitPattern::kLlama3},
      {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       SplitPattern::kQwen2},
      {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       SplitPattern::kNemo},
  };
  std::vector<std::string> texts = {"It'S  don't\u2028 x\r\n\r\n  y 12345 ſ'K", "   ", "a\u0085 b\u00A0 c"};
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(HFSTATIC_SOURCE_DIR) + "/tests/tokenizer/corpus"))
    texts.push_back(unicode::to_valid_utf8(test::read_file(e.path().string())));
  size_t compared = 0;
  for (const auto& [source, builtin] : patterns) {
    ASSERT_EQ(recognize_split_regex(source), builtin) << source;
    const Regex regex(source);
    for (const std::string& text : texts) {
      std::vector<std::pair<size_t, size_t>> want, got;
      find_pattern_matches(builtin, text, want);
      regex.find_all(text, got);
      EXPECT_EQ(got, want) << source << " on " << text.substr(0, 40);
      compared += want.size();
    }
  }
  EXPECT_GT(compared, 1000u);
}

}  // namespace
}  // namespace hfstatic::tokenizer
