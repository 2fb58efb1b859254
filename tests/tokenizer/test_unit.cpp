// Unit tests of the tokenizer pieces that do not need the reference packages.
#include <gtest/gtest.h>

#include "tiny_tokenizer.h"
#include "tokenizer/split_pattern.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic {
namespace {

using V = std::vector<int32_t>;

std::string load_error(const std::string& json, const std::string& config = "") {
  try {
    Tokenizer::from_json(json, config);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenizerUnit, TinyByteLevelBpeEncodesByConstruction) {
  const Tokenizer t = Tokenizer::from_json(test::tiny_tokenizer_json(), "");
  EXPECT_EQ(t.encode("hello world"), (V{14, 11, 12, 3, 6, 2, 7}));
  EXPECT_EQ(t.encode("hello world", false), (V{11, 12, 3, 6, 2, 7}));
  EXPECT_EQ(t.decode({14, 11, 12, 3, 6, 2, 7}), "<|bos|>hello world");
  EXPECT_EQ(t.decode({14, 11, 12, 3, 6, 2, 7}, true), "hello world");
  EXPECT_EQ(t.vocab_size(), 16);
  EXPECT_TRUE(t.is_special(13));
  EXPECT_FALSE(t.is_special(15));
  EXPECT_FALSE(t.is_special(11));
  EXPECT_EQ(t.token_id("hello"), 11);
  EXPECT_FALSE(t.token_id("nope").has_value());
}

TEST(TokenizerUnit, SpecialTokensCanBeTreatedAsText) {
  const Tokenizer t = Tokenizer::from_json(test::tiny_tokenizer_json(), "");
  EXPECT_EQ(t.encode("hello<|end|>hello", false), (V{11, 13, 11}));
  // Not parsed: pieces "hello" "<|" "end" "|>" "hello"; '<', '|', '>' and 'n' are not in the
  // tiny vocabulary (which has no unk), so "end" leaves e, d. The non-special added token is
  // still recognised.
  EXPECT_EQ(t.encode("hello<|end|>hello", false, false), (V{11, 1, 7, 11}));
  EXPECT_EQ(t.encode("hello<extra>hello", false, false), (V{11, 15, 11}));
}

TEST(TokenizerUnit, InvalidUtf8IsReplacedNotFatal) {
  const Tokenizer t = Tokenizer::from_json(test::tiny_tokenizer_json(), "");
  const std::string bad = std::string("hello\xff\xc3") + " world";
  EXPECT_EQ(t.encode(bad, false), t.encode("hello\xEF\xBF\xBD\xEF\xBF\xBD world", false));
  EXPECT_EQ(unicode::to_valid_utf8("a\xe2\x82"
                                   "b"),
            "a\xEF\xBF\xBD"
            "b");                                                                             // truncated: one U+FFFD
  EXPECT_EQ(unicode::to_valid_utf8("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate: per byte
  EXPECT_EQ(unicode::to_valid_utf8("\xf0\x9f\x98"), "\xEF\xBF\xBD");
  EXPECT_TRUE(unicode::is_valid_utf8("\xe2\x82\xac"));
  EXPECT_FALSE(unicode::is_valid_utf8("\xc0\xaf"));
}

TEST(TokenizerUnit, DecodeRejectsOutOfRangeIds) {
  const Tokenizer t = Tokenizer::from_json(test::tiny_tokenizer_json(), "");
  try {
    t.decode({11, 99});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("99"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("index 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.decode({-1}), Error);
}

TEST(TokenizerUnit, LoadErrorsNameTheProblem) {
  EXPECT_NE(load_error("{not json").find("invalid JSON"), std::string::npos);
  EXPECT_NE(load_error(R"({"version": "1.0"})").find("missing key \"model\""), std::string::npos);
  EXPECT_NE(load_error(test::tiny_tokenizer_json(R"({"type": "WordPiece", "vocab": {}})")).find("WordPiece"),
            std::string::npos);
  EXPECT_NE(load_error(test::tiny_tokenizer_json(R"({"type": "BPE", "merges": []})")).find("vocab"), std::string::npos);
  const std::string bad_merge = load_error(test::tiny_tokenizer_json("", R"(["h e", "x y"])"));
  EXPECT_NE(bad_merge.find("merges[1]"), std::string::npos) << bad_merge;
  EXPECT_NE(bad_merge.find("\"x\""), std::string::npos) << bad_merge;
  const std::string malformed = load_error(test::tiny_tokenizer_json("", R"(["h e", "hell"])"));
  EXPECT_NE(malformed.find("merges[1]"), std::string::npos) << malformed;
  const std::string not_pair = load_error(test::tiny_tokenizer_json("", R"([["h", "e", "l"]])"));
  EXPECT_NE(not_pair.find("merges[0]"), std::string::npos) << not_pair;
  std::string json = test::tiny_tokenizer_json();
  const std::string unknown_pre = load_error(json.replace(json.find("\"ByteLevel\""), 11, "\"FixedLength\""));
  EXPECT_NE(unknown_pre.find("pre_tokenizer"), std::string::npos) << unknown_pre;
  EXPECT_NE(unknown_pre.find("FixedLength"), std::string::npos) << unknown_pre;
  EXPECT_NE(load_error(test::tiny_tokenizer_json(), "[1]").find("tokenizer_config.json"), std::string::npos);
  EXPECT_THROW(Tokenizer::from_file("/nonexistent/tokenizer.json"), Error);
}

TEST(TokenizerUnit, UnsupportedSplitRegexIsAnError) {
  std::string json = test::tiny_tokenizer_json();
  const std::string pre =
      R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true})";
  json.replace(json.find(pre), pre.size(),
               R"J({"type": "Split", "pattern": {"Regex": "(?<=x)[a-z]+"}, "behavior": "Isolated", "invert": false})J");
  const std::string err = load_error(json);
  EXPECT_NE(err.find("unsupported Split regex"), std::string::npos) << err;
  EXPECT_NE(err.find("(?<=x)[a-z]+"), std::string::npos) << err;
  EXPECT_NE(err.find("lookbehind"), std::string::npos) << err;
}

TEST(TokenizerUnit, SentencePieceStyleBpeWithByteFallback) {
  // Llama-2 style: Prepend + Replace normalizer, byte fallback, Strip decoder.
  const std::string json = R"({
    "added_tokens": [{"id": 1, "content": "<s>", "special": true, "normalized": false}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": null,
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [1]}}},
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
      "vocab": {"<unk>": 0, "<s>": 1, "▁": 2, "h": 3, "i": 4, "▁h": 5, "▁hi": 6, )" +
                           [] {
                             std::string v;
                             for (int b = 0; b < 256; ++b) {
                               char name[16];
                               std::snprintf(name, sizeof name, "\"<0x%02X>\": %d, ", b, 7 + b);
                               v += name;
                             }
                             return v;
                           }() +
                           R"("end": 300},
      "merges": [["▁", "h"], ["▁h", "i"]]}})";
  const Tokenizer t = Tokenizer::from_json(json, "");
  // "hi é": ▁hi | ▁ | é -> bytes C3 A9 -> <0xC3> <0xA9> = 7+0xC3, 7+0xA9
  EXPECT_EQ(t.encode("hi é"), (V{1, 6, 2, 7 + 0xC3, 7 + 0xA9}));
  EXPECT_EQ(t.decode({1, 6, 2, 7 + 0xC3, 7 + 0xA9}, true), "hi é");
  EXPECT_EQ(t.decode({6, 7 + 0xC3}), "hi\xEF\xBF\xBD");  // a lone lead byte decodes to U+FFFD
  StreamDecoder s(t);
  EXPECT_EQ(s.push(6), "hi");
  EXPECT_EQ(s.push(2), " ");
  EXPECT_EQ(s.push(7 + 0xC3), "");  // incomplete UTF-8 is held back
  EXPECT_EQ(s.push(7 + 0xA9), "é");
  EXPECT_EQ(s.flush(), "");
}

TEST(TokenizerUnit, MetaspacePreTokenizerPrependsOnTheFirstSectionOnly) {
  // Mistral v0.3 style: Metaspace(prepend_scheme=first, split=false), Metaspace decoder.
  const std::string json = R"({
    "added_tokens": [{"id": 1, "content": "<s>", "special": true, "normalized": false}],
    "normalizer": null,
    "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
    "post_processor": null,
    "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true,
      "vocab": {"<unk>": 0, "<s>": 1, "▁": 2, "a": 3, "b": 4, "▁a": 5, "▁b": 6},
      "merges": ["▁ a", "▁ b"]}})";
  const Tokenizer t = Tokenizer::from_json(json, "");
  EXPECT_EQ(t.encode("a b"), (V{5, 6}));            // "▁a▁b"
  EXPECT_EQ(t.encode("a<s>a b"), (V{5, 1, 3, 6}));  // no ▁ after the special token
  EXPECT_EQ(t.encode("a c"), (V{5, 2, 0}));         // unknown 'c' -> <unk>
  EXPECT_EQ(t.decode({5, 6}), "a b");
}

TEST(TokenizerUnit, SplitPatternsFollowTheRegexSemantics) {
  auto split = [](tokenizer::SplitPattern p, const std::string& s) {
    std::vector<std::pair<size_t, size_t>> m;
    tokenizer::find_pattern_matches(p, s, m);
    std::vector<std::string> out;
    for (auto [b, e] : m) out.push_back(s.substr(b, e - b));
    return out;
  };
  using S = std::vector<std::string>;
  EXPECT_EQ(split(tokenizer::SplitPattern::kGpt2, "Hello world's  end 123!!"),
            (S{"Hello", " world", "'s", " ", " end", " 123", "!!"}));
  EXPECT_EQ(split(tokenizer::SplitPattern::kLlama3, "I'LL pay 12345\n\n  x"),
            (S{"I", "'LL", " pay", " ", "123", "45", "\n\n", " ", " x"}));
  EXPECT_EQ(split(tokenizer::SplitPattern::kQwen2, "a1234"), (S{"a", "1", "2", "3", "4"}));
  EXPECT_EQ(split(tokenizer::SplitPattern::kNemo, "HelloWORLD fooBar"), (S{"Hello", "WORLD", " foo", "Bar"}));
  EXPECT_EQ(split(tokenizer::SplitPattern::kLlama3, "x.\n\ny"), (S{"x", ".\n\n", "y"}));
}

TEST(TokenizerUnit, UnicodeTablesAndNfc) {
  EXPECT_EQ(unicode::category(U'A'), unicode::Lu);
  EXPECT_EQ(unicode::category(U'ж'), unicode::Ll);
  EXPECT_EQ(unicode::category(U'中'), unicode::Lo);
  EXPECT_EQ(unicode::category(U'٣'), unicode::Nd);
  EXPECT_EQ(unicode::category(0x301), unicode::Mn);
  EXPECT_EQ(unicode::category(U'€'), unicode::Sc);
  EXPECT_TRUE(unicode::is_whitespace(0x3000));
  EXPECT_FALSE(unicode::is_whitespace(0x200B));
  EXPECT_EQ(unicode::nfc("e\xCC\x81"), "\xC3\xA9");                     // e + acute -> é
  EXPECT_EQ(unicode::nfc("o\xCC\xA3\xCC\x82"), "\xE1\xBB\x99");         // o + dot below + circumflex -> ộ
  EXPECT_EQ(unicode::nfc("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");  // Hangul jamo -> 가
  EXPECT_EQ(unicode::nfc("abc"), "abc");
  // Only the stretch around the combining mark changes; text on both sides is copied as is.
  EXPECT_EQ(unicode::nfc("\xE6\x97\xA5x e\xCC\x81\xCC\x81 \xE4\xB8\xAD A\xCC\x8A\xCC\x81!"),
            "\xE6\x97\xA5x \xC3\xA9\xCC\x81 \xE4\xB8\xAD \xC7\xBA!");
}

}  // namespace
}  // namespace hfstatic
