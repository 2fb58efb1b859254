// `run --lookup K` and `run --draft FILE`: the same text as plain greedy decoding, the
// speculation line of --stats, and one-line errors for bad flags and a draft of another
// vocabulary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "export/exporter.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using testing::HasSubstr;

class CliSpeculation : public testing::Test {
 protected:
  static const std::string& program() {
    static test::TempDir* dir = new test::TempDir("cli-speculation");
    static const std::string path = [] {
      GraphOptions g;
      g.prefill_len = 8;
      g.max_context = 128;
      return test::export_to(test::cached_checkpoint("tiny-qwen2", 2), dir->file("t.hfs"), g);
    }();
    return path;
  }
};

TEST_F(CliSpeculation, LookupAndDraftPrintThePlainTokens) {
  const std::vector<std::string> base = {"run", "-m", program(),      "--tokens", "5,6,7,5,6,7,5",
                                         "-n",  "60", "--ignore-eos", "--stats"};
  const auto plain = test::run_cli(base);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_THAT(plain.err, testing::Not(HasSubstr("speculation:")));
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--lookup", "4"}, {"--draft", program(), "--draft-max", "3"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const auto spec = test::run_cli(args);
    ASSERT_EQ(spec.exit_code, 0) << spec.err;
    EXPECT_EQ(spec.out, plain.out) << extra[0];
    EXPECT_THAT(spec.err, testing::ContainsRegex("speculation: [0-9]+ steps, [0-9]+ drafted, [0-9]+ accepted"));
  }
}

TEST_F(CliSpeculation, BadFlagsAreOneLineErrors) {
  auto r = test::run_cli({"run", "-m", program(), "--lookup", "4", "--draft", program(), "-n", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("give only one of --lookup and --draft"));
  r = test::run_cli({"run", "-m", program(), "--draft-max", "4", "-n", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("flag --draft-max: only with --draft FILE"));
  r = test::run_cli({"run", "-m", program(), "--lookup", "0", "-n", "2"});
  EXPECT_EQ(r.exit_code, 2);
  // The default program (the demo model, 4096 tokens) as a draft of a 272-token program.
  test::TempDir dir("cli-speculation-demo");
  GraphOptions g;
  g.prefill_len = 8;
  g.max_context = 64;
  const std::string demo = test::export_to(std::string(HFSTATIC_SOURCE_DIR) + "/models/demo", dir.file("d.hfs"), g);
  r = test::run_cli({"run", "-m", program(), "--draft", demo, "-n", "2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("draft program " + demo + " has a vocabulary of 4096 tokens, the program " + program() +
                               " of 272"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

}  // namespace
}  // namespace hfstatic
