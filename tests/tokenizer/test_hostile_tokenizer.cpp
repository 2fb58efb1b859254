// Hostile tokenizer files: ids that would make loading allocate gigabytes, chat templates of the
// wrong type, paths that are not regular files, messages that are not UTF-8, regexes that would
// run for hours, and broken WordPiece / Unigram / Precompiled data.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "test_helpers.h"
#include "tiny_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hfstatic {
namespace {

using testing::HasSubstr;

std::string load_error(const std::string& tokenizer_json, const std::string& config_json = "") {
  try {
    Tokenizer::from_json(tokenizer_json, config_json);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The tiny tokenizer with its first added token's id replaced.
std::string with_added_id(int64_t id) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(test::tiny_tokenizer_json());
  j["added_tokens"][0]["id"] = id;
  return j.dump();
}

TEST(TokenizerHostile, IdsTheFileCannotJustifyAreRefusedBeforeAllocating) {
  // 16 entries: ids up to 2 * 16 + 1024 are accepted, 50,000,000 would be 1.6 GB of tables.
  EXPECT_THAT(load_error(with_added_id(50000000)),
              HasSubstr("tokenizer.json: added_tokens[0]: id 50000000 is out of range"));
  EXPECT_THAT(load_error(with_added_id(16777216)), HasSubstr("ids are below 16777216"));
  EXPECT_THAT(load_error(with_added_id(1056)), HasSubstr("id 1056 is out of range [0, 1056)"));
  EXPECT_EQ(Tokenizer::from_json(with_added_id(1055), "").vocab_size(), 1056);
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(test::tiny_tokenizer_json());
  j["model"]["vocab"]["h"] = 50000000;
  EXPECT_THAT(load_error(j.dump()), HasSubstr("tokenizer.json: model.vocab[\"h\"]: id 50000000 is out of range"));
}

TEST(TokenizerHostile, ChatTemplateOfTheWrongTypeIsNamed) {
  const std::string tok = test::tiny_tokenizer_json();
  EXPECT_THAT(load_error(tok, R"({"chat_template": 5})"),
              HasSubstr("tokenizer_config.json: chat_template is a number, not a string"));
  EXPECT_THAT(load_error(tok, R"({"chat_template": {"default": "x"}})"),
              HasSubstr("chat_template is an object, not a string"));
  EXPECT_THAT(load_error(tok, R"({"chat_template": [{"name": "tool_use", "template": "t"}]})"),
              HasSubstr("chat_template is a list of named templates without one named \"default\""));
  EXPECT_THAT(load_error(tok, R"({"chat_template": [{"name": "default"}]})"),
              HasSubstr("chat_template[0]: expected an object"));
  const Tokenizer named = Tokenizer::from_json(
      tok, R"({"chat_template": [{"name": "tool_use", "template": "t"}, {"name": "default", "template": "d"}]})");
  EXPECT_EQ(named.chat_template(), "d");
  EXPECT_EQ(Tokenizer::from_json(tok, R"({"chat_template": null})").chat_template(), "");
}

TEST(TokenizerHostile, PathsThatAreNotRegularFilesAreRefused) {
  const std::string dir = test::temp_dir();
  test::write_file(dir + "/tokenizer.json", test::tiny_tokenizer_json());
  // A directory used to read as an empty file ("invalid JSON").
  try {
    Tokenizer::from_file(dir);
    ADD_FAILURE() << "loaded a directory";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir + ": not a regular file (a directory)"));
  }
  // A FIFO next to tokenizer.json used to block forever waiting for a writer.
  ASSERT_EQ(::mkfifo((dir + "/tokenizer_config.json").c_str(), 0600), 0);
  try {
    Tokenizer::from_file(dir + "/tokenizer.json");
    ADD_FAILURE() << "loaded with a FIFO config";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("tokenizer_config.json: not a regular file (a FIFO)"));
  }
  const auto r = test::run_command("timeout 20 " + test::shell_quote(HFSTATIC_CLI) + " tokenize -t " +
                                   test::shell_quote(dir + "/tokenizer_config.json") + " < /dev/null 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tokenizer_config.json: not a regular file (a FIFO)"));
  std::system(("rm -rf " + test::shell_quote(dir)).c_str());
}

TEST(TokenizerHostile, MessagesThatAreNotUtf8ReadAsReplacementCharacters) {
  const Tokenizer tok =
      Tokenizer::from_json(test::tiny_tokenizer_json(),
                           R"({"chat_template": "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"})");
  // As the tokenizer's encode reads text: each maximal ill-formed subsequence becomes U+FFFD.
  EXPECT_EQ(apply_chat_template(tok, {{"system", "be \xff"}, {"user", "a\xc3(b\xe2\x82"}}, true),
            "[system]be \xEF\xBF\xBD[user]a\xEF\xBF\xBD(b\xEF\xBF\xBD");
  EXPECT_EQ(render_chat_template("{{ m }}", nlohmann::json{{"m", "\xfe!"}}), "\xEF\xBF\xBD!");
}

// The tiny tokenizer with its ByteLevel pre-tokenizer replaced by a Split on `regex`.
std::string with_split_regex(const std::string& regex) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(test::tiny_tokenizer_json());
  j["pre_tokenizer"] = {
      {"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
  return j.dump();
}

TEST(TokenizerHostile, RegexesAreBoundedInSizeNestingAndSteps) {
  EXPECT_THAT(load_error(with_split_regex("(a{1000}){1000}")), HasSubstr("over 50000 instructions"));
  EXPECT_THAT(load_error(with_split_regex(std::string(5000, '(') + "a" + std::string(5000, ')'))),
              HasSubstr("nesting deeper than 100 groups"));
  EXPECT_THAT(load_error(with_split_regex("a{1000001}")), HasSubstr("repetition count above 1000"));
  EXPECT_THAT(load_error(with_split_regex(std::string(100000, '[') + "a" + std::string(100000, ']'))),
              HasSubstr("character classes nested deeper than 100"));
  // Each match of `a*b|a` on a run of a's scans the rest of the run: quadratic, so the search
  // stops at its step budget with an error instead of running for minutes.
  const Tokenizer quadratic = Tokenizer::from_json(with_split_regex("a*b|a"), "");
  try {
    quadratic.encode(std::string(300000, 'a'), false);
    ADD_FAILURE() << "the step budget did not stop the search";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("step budget"));
    EXPECT_THAT(e.what(), HasSubstr("a*b|a"));
  }
  // The same text under a pattern of real files is linear and well inside the budget.
  const Tokenizer linear = Tokenizer::from_json(with_split_regex(R"(\p{N}{1,3}|\s+(?!\S)|\s+|[^\s\p{N}]+)"), "");
  EXPECT_NO_THROW(linear.encode(std::string(300000, 'h') + std::string(300000, ' ') + "1", false));
  EXPECT_EQ(linear.encode("hello 1", false), (std::vector<int32_t>{11}));  // only "hello" is in the vocabulary
}

TEST(TokenizerHostile, BrokenWordPieceAndUnigramModelsAreRefused) {
  EXPECT_THAT(load_error(R"({"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"a": 0}}})"),
              HasSubstr("model.unk_token \"[UNK]\" is not in the vocabulary"));
  EXPECT_THAT(load_error(R"({"model": {"type": "WordPiece", "unk_token": "u", "vocab": {"u": 0},
                                      "max_input_chars_per_word": -1}})"),
              HasSubstr("max_input_chars_per_word"));
  EXPECT_THAT(load_error(R"({"model": {"type": "Unigram", "vocab": {"a": 0}}})"), HasSubstr("[piece, score]"));
  EXPECT_THAT(load_error(R"({"model": {"type": "Unigram", "vocab": [["a", "x"]]}})"),
              HasSubstr("model.vocab[0]: expected [piece, score]"));
  EXPECT_THAT(load_error(R"({"model": {"type": "Unigram", "unk_id": 7, "vocab": [["a", -1]]}})"),
              HasSubstr("model.unk_id"));
  // Without unk_id an unknown character cannot be encoded: an error, not a crash.
  const Tokenizer no_unk = Tokenizer::from_json(R"({"model": {"type": "Unigram", "vocab": [["a", -1]]}})", "");
  EXPECT_THROW(no_unk.encode("ab", false), Error);
  // A whole section of a million characters: memory linear in the word, no recursion.
  const Tokenizer unigram = Tokenizer::from_json(R"({"model": {"type": "Unigram", "unk_id": 0,
                                                    "vocab": [["<unk>", 0], ["a", -1], ["aa", -1.5]]}})",
                                                 "");
  EXPECT_EQ(unigram.encode(std::string(1000000, 'a'), false).size(), 500000u);
  // A huge max_input_chars_per_word: the search per position is bounded by the longest entry.
  const Tokenizer wordpiece = Tokenizer::from_json(
      R"({"model": {"type": "WordPiece", "unk_token": "u", "max_input_chars_per_word": 100000000,
                    "vocab": {"u": 0, "a": 1, "##a": 2}}})",
      "");
  EXPECT_EQ(wordpiece.encode(std::string(1000000, 'a'), false).size(), 1000000u);
}

TEST(TokenizerHostile, PrecompiledCharsmapIsBoundsChecked) {
  auto precompiled = [](const std::string& charsmap) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(test::tiny_tokenizer_json());
    j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", charsmap}};
    return j.dump();
  };
  EXPECT_THAT(load_error(precompiled("////AAAA")), HasSubstr("does not fit"));  // trie size 0xFFFFFF
  EXPECT_THAT(load_error(precompiled("AA")), HasSubstr("shorter than its 4-byte header"));
  EXPECT_THAT(load_error(precompiled("!!!!")), HasSubstr("invalid base64"));
  // A trie of 0xFFFFFFFF units whose offsets point anywhere: lookups stay inside the array.
  std::string blob = std::string("\x40\x00\x00\x00", 4) + std::string(64, '\xFF') + "zz";
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (size_t i = 0; i + 2 < blob.size(); i += 3) {
    const uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(blob[i])) << 16 |
                       static_cast<uint32_t>(static_cast<unsigned char>(blob[i + 1])) << 8 |
                       static_cast<unsigned char>(blob[i + 2]);
    for (int k = 3; k >= 0; --k) b64 += kAlphabet[(v >> (6 * k)) & 63];
  }
  const Tokenizer tok = Tokenizer::from_json(precompiled(b64), "");
  EXPECT_FALSE(tok.encode("hello \xC3\xA9\xF0\x9F\x98\x80 world", false).empty());
}

}  // namespace
}  // namespace hfstatic
