// Tests of `hfstatic tokenize` / `hfstatic detokenize`, run as a subprocess.
#include <gtest/gtest.h>

#include "format/program.h"
#include "test_helpers.h"
#include "tiny_tokenizer.h"

namespace hfstatic {
namespace {

using test::run_command;
using test::shell_quote;

class TokenizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir();
    test::write_file(dir_ + "/tokenizer.json", test::tiny_tokenizer_json());
    test::write_file(dir_ + "/text.txt", "hello world");
  }
  void TearDown() override { std::system(("rm -rf " + shell_quote(dir_)).c_str()); }
  std::string cli(const std::string& args) { return shell_quote(HFSTATIC_CLI) + " " + args; }
  std::string dir_;
};

TEST_F(TokenizeCli, TokenizePrintsIdsOnOneLine) {
  auto r = run_command(
      cli("tokenize -t " + shell_quote(dir_ + "/tokenizer.json") + " < " + shell_quote(dir_ + "/text.txt")));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "14 11 12 3 6 2 7\n");
  r = run_command(cli("tokenize --no-special -t " + shell_quote(dir_ + "/tokenizer.json") + " < " +
                      shell_quote(dir_ + "/text.txt")));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "11 12 3 6 2 7\n");
}

TEST_F(TokenizeCli, DetokenizePrintsText) {
  auto r = run_command("echo '14 11 12 3 6 2 7' | " + cli("detokenize -t " + shell_quote(dir_ + "/tokenizer.json")));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "<|bos|>hello world");
  r = run_command("echo '14 11 12 3 6 2 7' | " +
                  cli("detokenize --skip-special -t " + shell_quote(dir_ + "/tokenizer.json")));
  EXPECT_EQ(r.out, "hello world");
}

TEST_F(TokenizeCli, BadFlagsExitWithUsage) {
  EXPECT_EQ(run_command(cli("tokenize --bogus < /dev/null 2>/dev/null")).exit_code, 2);
  EXPECT_EQ(run_command(cli("tokenize < /dev/null 2>/dev/null")).exit_code, 2);
  EXPECT_EQ(run_command(cli("detokenize -t x extra < /dev/null 2>/dev/null")).exit_code, 2);
}

TEST_F(TokenizeCli, InvalidTokenizerIsAOneLineError) {
  test::write_file(dir_ + "/broken.json", R"({"version": "1.0"})");
  auto r = run_command(cli("tokenize -t " + shell_quote(dir_ + "/broken.json") + " < /dev/null 2>&1"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("model"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("broken.json"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  r = run_command(cli("tokenize -t " + shell_quote(dir_ + "/missing.json") + " < /dev/null 2>&1"));
  EXPECT_EQ(r.exit_code, 1);
  r = run_command("echo '11 abc' | " + cli("detokenize -t " + shell_quote(dir_ + "/tokenizer.json") + " 2>&1"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("abc"), std::string::npos) << r.out;
}

TEST_F(TokenizeCli, ReadsTheTokenizerEmbeddedInAProgram) {
  ProgramWriter writer(ProgramSpec{});
  writer.add_file("tokenizer.json", test::tiny_tokenizer_json());
  writer.write(dir_ + "/model.hfs");
  auto r =
      run_command(cli("tokenize -t " + shell_quote(dir_ + "/model.hfs") + " < " + shell_quote(dir_ + "/text.txt")));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "14 11 12 3 6 2 7\n");
  r = run_command("echo '11 12 3 6 2 7' | " + cli("detokenize -t " + shell_quote(dir_ + "/model.hfs")));
  EXPECT_EQ(r.out, "hello world");

  ProgramWriter empty(ProgramSpec{});
  empty.write(dir_ + "/none.hfs");
  r = run_command(cli("tokenize -t " + shell_quote(dir_ + "/none.hfs") + " < /dev/null 2>&1"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("no embedded tokenizer.json"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hfstatic
