// Pre-tokenizers, normalizers, decoders and models of the BERT and SentencePiece families on
// hand-computed examples (Hugging Face semantics, including where the JS reference differs:
// Digits splits every Unicode number, Punctuation honours its behavior).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "util/error.h"

namespace hfstatic::tokenizer {
namespace {

using json = nlohmann::json;
using Strings = std::vector<std::string>;

Strings pre_tokenize(const std::string& config, const std::string& text) {
  const PreTokenizer p = parse_pre_tokenizer(json::parse(config), "test");
  Pieces in, out;
  in.buf = text;
  in.ranges.emplace_back(0, text.size());
  apply_pre_tokenizer(p, true, in, out);
  Strings pieces;
  for (const auto& [b, e] : out.ranges) pieces.push_back(out.buf.substr(b, e - b));
  return pieces;
}

std::string normalize(const std::string& config, std::string text) {
  apply_normalizer(parse_normalizer(json::parse(config), "test"), text);
  return text;
}

std::string decode(const std::string& config, Strings tokens) {
  apply_decoder(parse_decoder(json::parse(config), "test"), tokens);
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

TEST(TokenizerComponents, PunctuationHonoursEveryBehavior) {
  const std::string text = "Hey, you!!";
  auto with = [&](const char* behavior) {
    return pre_tokenize(std::string(R"({"type": "Punctuation", "behavior": ")") + behavior + "\"}", text);
  };
  EXPECT_EQ(pre_tokenize(R"({"type": "Punctuation"})", text), (Strings{"Hey", ",", " you", "!", "!"}));
  EXPECT_EQ(with("Isolated"), (Strings{"Hey", ",", " you", "!", "!"}));
  EXPECT_EQ(with("Removed"), (Strings{"Hey", " you"}));
  EXPECT_EQ(with("MergedWithPrevious"), (Strings{"Hey,", " you!", "!"}));
  EXPECT_EQ(with("MergedWithNext"), (Strings{"Hey", ", you", "!", "!"}));
  EXPECT_EQ(with("Contiguous"), (Strings{"Hey", ",", " you", "!!"}));
  EXPECT_EQ(pre_tokenize(R"({"type": "Punctuation"})", "a¿b«c"), (Strings{"a", "¿", "b", "«", "c"}));
}

TEST(TokenizerComponents, DigitsSplitEveryUnicodeNumber) {
  const std::string text = "abc123 ٤٥½";
  EXPECT_EQ(pre_tokenize(R"({"type": "Digits", "individual_digits": true})", text),
            (Strings{"abc", "1", "2", "3", " ", "٤", "٥", "½"}));
  EXPECT_EQ(pre_tokenize(R"({"type": "Digits", "individual_digits": false})", text),
            (Strings{"abc", "123", " ", "٤٥½"}));
}

TEST(TokenizerComponents, WhitespaceAndBertSplits) {
  EXPECT_EQ(pre_tokenize(R"({"type": "WhitespaceSplit"})", "  hello\u3000world \t"), (Strings{"hello", "world"}));
  EXPECT_EQ(pre_tokenize(R"({"type": "BertPreTokenizer"})", " Hello, world!! "),
            (Strings{"Hello", ",", "world", "!", "!"}));
  EXPECT_EQ(pre_tokenize(R"({"type": "CharDelimiterSplit", "delimiter": "|"})", "a|b||c"), (Strings{"a", "b", "c"}));
  EXPECT_EQ(pre_tokenize(R"({"type": "Whitespace"})", "Hey friend!  How are you?!?"),
            (Strings{"Hey", "friend", "!", "How", "are", "you", "?!?"}));
  EXPECT_EQ(pre_tokenize(R"({"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated"})", "a12345"),
            (Strings{"a", "123", "45"}));
  EXPECT_EQ(pre_tokenize(R"({"type": "Split", "pattern": {"Regex": "-"}, "behavior": "MergedWithNext"})", "a-b--c"),
            (Strings{"a", "-b", "-", "-c"}));
}

TEST(TokenizerComponents, UnicodeNormalizers) {
  EXPECT_EQ(normalize(R"({"type": "NFKC"})", "\uFB01\u2460\uFF21e\u0301"), "fi1A\u00E9");
  EXPECT_EQ(normalize(R"({"type": "NFKD"})", "x\u00E9\uFB01"), "xe\u0301fi");
  EXPECT_EQ(normalize(R"({"type": "NFD"})", "\u00C5\uFB01"), "A\u030A\uFB01");
  EXPECT_EQ(normalize(R"({"type": "NFKC"})", "\uAC00\u1100\u1161"), "\uAC00\uAC00");  // Hangul composes
  EXPECT_EQ(normalize(R"({"type": "Lowercase"})", "\u00C0\u03A3\u0130Z"), "\u00E0\u03C3i\u0307z");
  EXPECT_EQ(normalize(R"({"type": "StripAccents"})", "e\u0301\u00E9"), "e\u00E9");  // only marks go
  EXPECT_EQ(normalize(R"({"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]})", "\u00E9"),
            "e");
  EXPECT_EQ(normalize(R"({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})", "a   b  c d"),
            "a b c d");
}

TEST(TokenizerComponents, BertNormalizer) {
  const std::string text = "H\u00E9llo\tWorld\u0007\u4E2D\u000B!";
  EXPECT_EQ(normalize(R"({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                          "strip_accents": null, "lowercase": true})",
                      text),
            "hello world \u4E2D !");
  EXPECT_EQ(normalize(R"({"type": "BertNormalizer", "clean_text": false, "handle_chinese_chars": false,
                          "strip_accents": false, "lowercase": false})",
                      text),
            text);
  EXPECT_EQ(normalize(R"({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": false,
                          "strip_accents": true, "lowercase": false})",
                      text),
            "Hello World\u4E2D!");
}

// A one-key darts-clone trie mapping "a" to "b": root offset 256, the unit for 'a' at 256 ^ 0x61
// with a leaf whose value (offset 0 into "b\0") sits at that position ^ 1.
std::string one_key_charsmap() {
  std::vector<uint32_t> units(354, 0);
  units[0] = 256u << 10;
  units[353] = (1u << 10) | (1u << 8) | 0x61;
  units[352] = 0;
  std::string blob;
  auto put = [&](uint32_t v) {
    for (int k = 0; k < 4; ++k) blob.push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
  };
  put(static_cast<uint32_t>(units.size() * 4));
  for (uint32_t u : units) put(u);
  blob += std::string("b\0", 2);
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (size_t i = 0; i < blob.size(); i += 3) {
    uint32_t v = static_cast<unsigned char>(blob[i]) << 16;
    if (i + 1 < blob.size()) v |= static_cast<unsigned char>(blob[i + 1]) << 8;
    if (i + 2 < blob.size()) v |= static_cast<unsigned char>(blob[i + 2]);
    b64 += kAlphabet[(v >> 18) & 63];
    b64 += kAlphabet[(v >> 12) & 63];
    b64 += i + 1 < blob.size() ? kAlphabet[(v >> 6) & 63] : '=';
    b64 += i + 2 < blob.size() ? kAlphabet[v & 63] : '=';
  }
  return b64;
}

TEST(TokenizerComponents, PrecompiledCharsmapLooksUpTheTrie) {
  const std::string config = R"({"type": "Precompiled", "precompiled_charsmap": ")" + one_key_charsmap() + "\"}";
  EXPECT_EQ(normalize(config, "cat"), "cbt");
  EXPECT_EQ(normalize(config, "ab"), "bb");
  // A short grapheme cluster is replaced as a whole by its first prefix match, as in Hugging Face.
  EXPECT_EQ(normalize(config, "xa\u0301y"), "xby");
  EXPECT_EQ(normalize(R"({"type": "Precompiled", "precompiled_charsmap": null})", "abc"), "abc");
}

TEST(TokenizerComponents, Decoders) {
  EXPECT_EQ(decode(R"({"type": "WordPiece", "prefix": "##", "cleanup": true})",
                   {"un", "##aff", "##able", ",", "world", "'", "s"}),
            "unaffable, world ' s");
  EXPECT_EQ(decode(R"({"type": "WordPiece", "prefix": "##", "cleanup": false})", {"a", ",", "##b"}), "a ,b");
  EXPECT_EQ(decode(R"({"type": "BPEDecoder", "suffix": "</w>"})", {"hel", "lo</w>", "wor", "ld</w>"}), "hello world");
  EXPECT_EQ(decode(R"({"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "|", "cleanup": true})",
                   {"<pad>", "h", "h", "e", "l", "l", "<pad>", "l", "o", "|", "w"}),
            "hello w");
  EXPECT_EQ(decode(R"({"type": "Replace", "pattern": {"Regex": "\u2581+"}, "content": " "})", {"a\u2581\u2581b"}),
            "a b");
  EXPECT_EQ(
      decode(R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never"})", {"\u2581a", "\u2581b"}),
      " a b");
  EXPECT_EQ(
      decode(R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"})", {"\u2581a", "\u2581b"}),
      "a b");
}

std::string unigram_json(bool byte_fallback) {
  return std::string(R"({"model": {"type": "Unigram", "unk_id": 0, "byte_fallback": )") +
         (byte_fallback ? "true" : "false") +
         R"(, "vocab": [["<unk>", 0], ["a", -1], ["b", -2], ["ab", -1.5], ["c", -3], ["<0x64>", -9]]}})";
}

TEST(TokenizerComponents, UnigramPicksTheBestSegmentationAndFusesUnknowns) {
  const Tokenizer plain = Tokenizer::from_json(unigram_json(false), "");
  EXPECT_EQ(plain.encode("abc", false), (std::vector<int32_t>{3, 4}));  // ab (-1.5) + c beats a + b + c
  EXPECT_EQ(plain.encode("dd", false), (std::vector<int32_t>{0}));      // one unk for the run
  EXPECT_EQ(plain.encode("adda", false), (std::vector<int32_t>{1, 0, 1}));
  const Tokenizer bytes = Tokenizer::from_json(unigram_json(true), "");
  EXPECT_EQ(bytes.encode("add", false), (std::vector<int32_t>{1, 5, 5}));  // d = <0x64>
  EXPECT_EQ(bytes.encode("ae", false), (std::vector<int32_t>{1, 0}));      // no <0x65>: unk
}

TEST(TokenizerComponents, WordPieceLongestMatchAndLimits) {
  const std::string json =
      R"({"model": {"type": "WordPiece", "unk_token": "[UNK]", "max_input_chars_per_word": 6,
          "vocab": {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "u": 4, "##n": 5, "a": 6}},
          "pre_tokenizer": {"type": "WhitespaceSplit"}})";
  const Tokenizer tok = Tokenizer::from_json(json, "");
  EXPECT_EQ(tok.encode("un unaff unable a", false), (std::vector<int32_t>{1, 1, 2, 1, 3, 6}));
  EXPECT_EQ(tok.encode("unaffable", false), (std::vector<int32_t>{0}));  // 9 characters > 6
  EXPECT_EQ(tok.encode("unx", false), (std::vector<int32_t>{0}));        // a part is unknown
}

}  // namespace
}  // namespace hfstatic::tokenizer
