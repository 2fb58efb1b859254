// Hostile tokenizer files: ids that would make loading allocate gigabytes, chat templates of the
// wrong type, paths that are not regular files, and messages that are not UTF-8.
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

}  // namespace
}  // namespace hfstatic
