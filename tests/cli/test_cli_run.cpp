// hfstatic run / validate from the command line: exit codes, one-line errors, what run prints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "format/program.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using testing::HasSubstr;

size_t lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

class CliRun : public testing::Test {
 protected:
  void SetUp() override {
    GraphOptions g;
    g.prefill_len = 8;
    g.max_context = 32;
    path_ = test::export_to(test::cached_checkpoint("tiny", 5), dir_.file("p.hfs"), g);
  }
  test::TempDir dir_{"cli-run"};
  std::string path_;
};

TEST_F(CliRun, DefaultProgramRunsWithNoArguments) {
  auto r = test::run_cli({});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
}

TEST_F(CliRun, TokensAreStreamedAsIds) {
  auto r = test::run_cli({"run", "-m", path_, "--tokens", "256,72,105", "-n", "5", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  int count = 0;
  for (int64_t id; in >> id; ++count) EXPECT_TRUE(id >= 0 && id < 272);
  EXPECT_EQ(count, 5);
}

TEST_F(CliRun, UsageErrorsExitTwo) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"run", "--bogus"},
                                                                {"run", "-n"},
                                                                {"run", "-n", "many"},
                                                                {"run", "-m", path_, "-p", "a", "--tokens", "1"},
                                                                {"run", "--temp", "-1"},
                                                                {"no-such-command"},
                                                                {"validate"}}) {
    auto r = test::run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << (args.size() > 1 ? args[1] : "");
    EXPECT_EQ(lines(r.err), 1u) << r.err;
  }
}

TEST_F(CliRun, SamplingFlagsHaveTheRangesOfTheServersFields) {
  auto r = test::run_cli({"run", "-m", path_, "-p", "a", "--temp", "2.5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("flag --temp: 2.5 is outside [0, 2]"));
  r = test::run_cli({"run", "-m", path_, "-p", "a", "--repeat-penalty", "0.001"});
  EXPECT_THAT(r.err, HasSubstr("flag --repeat-penalty: 0.001 is outside [0.01, 100]"));
  r = test::run_cli({"run", "-m", path_, "-p", "a", "--top-k", "1.5"});
  EXPECT_THAT(r.err, HasSubstr("flag --top-k: '1.5' is not an integer"));
}

TEST_F(CliRun, RuntimeErrorsExitOneWithOneLine) {
  auto missing = test::run_cli({"run", "-m", dir_.file("missing.hfs"), "--tokens", "1"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("missing.hfs: cannot open"));
  EXPECT_EQ(lines(missing.err), 1u);
  auto bad_token = test::run_cli({"run", "-m", path_, "--tokens", "1,99999"});
  EXPECT_EQ(bad_token.exit_code, 1);
  EXPECT_THAT(bad_token.err, HasSubstr("99999"));
  std::string long_prompt = "1";
  for (int i = 0; i < 40; ++i) long_prompt += ",1";
  auto overflow = test::run_cli({"run", "-m", path_, "--tokens", long_prompt});
  EXPECT_EQ(overflow.exit_code, 1);
  EXPECT_THAT(overflow.err, AllOf(HasSubstr("start_pos 0"), HasSubstr("41 tokens"), HasSubstr("max_context 32")));
  EXPECT_EQ(lines(overflow.err), 1u);
}

// The prompt is echoed only once it has been accepted: a prompt past the context prints
// nothing on stdout, only the error.
TEST_F(CliRun, TooLongPromptPrintsNothingBeforeTheError) {
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "ab ";
  auto r = test::run_cli({"run", "-m", path_, "-p", prompt, "-n", "4", "-t", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, AllOf(HasSubstr("start_pos 0"), HasSubstr("max_context 32")));
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  // A prompt that fits is echoed before the generated text.
  auto ok = test::run_cli({"run", "-m", path_, "-p", "ab ab", "-n", "2", "-t", "1", "--ignore-eos"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out.rfind("ab ab", 0), 0u) << ok.out;
}

TEST_F(CliRun, ValidateAcceptsAGoodProgram) {
  auto r = test::run_cli({"validate", path_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("valid hf_static v1 program"));
}

TEST_F(CliRun, ValidateLoadsTheEmbeddedTokenizerAndTemplate) {
  // The same program with a template that cannot be parsed, then a tokenizer that cannot load:
  // both were called valid, and failed at the first chat request.
  auto good = Program::load(path_);
  auto rewrite = [&](const std::string& name, const std::string& tokenizer, const std::string& config) {
    ProgramWriter w(good->spec());
    for (const TensorInfo& t : good->container().tensors()) {
      if (t.name.rfind("hfstatic.file.", 0) == 0) continue;
      const uint8_t* d = good->container().tensor_data(t);
      w.add_weight_bytes(t.name, t.dtype, t.shape, std::vector<uint8_t>(d, d + t.size));
    }
    w.add_file("tokenizer.json", tokenizer);
    w.add_file("tokenizer_config.json", config);
    w.write(dir_.file(name));
    return dir_.file(name);
  };
  const std::string tokenizer = good->embedded_file("tokenizer.json");
  auto r = test::run_cli({"validate", rewrite("bad-template.hfs", tokenizer, R"({"chat_template": "{% if %}"})")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("bad-template.hfs: embedded tokenizer_config.json: chat_template: chat template line 1"));
  r = test::run_cli({"validate", rewrite("bad-tokenizer.hfs", "{\"model\": 5}", "{}")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("bad-tokenizer.hfs: embedded tokenizer.json"));
}

TEST(CliChat, TemplateChatSingleAndMultiTurn) {
  test::TempDir dir("cli-chat");
  GraphOptions g;
  g.prefill_len = 8;
  g.max_context = 128;
  const std::string path = test::export_to(test::cached_checkpoint("tiny-qwen2", 2), dir.file("chat.hfs"), g);
  auto one = test::run_cli({"run", "-m", path, "--chat", "-p", "hi", "-n", "4", "--ignore-eos", "-t", "1"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  // Two turns from standard input: one reply line each.
  auto two = test::run_cli(
      {"run", "-m", path, "--chat", "--system", "be brief", "-n", "4", "--ignore-eos", "-t", "1", "--stats"},
      "hello\nagain\n");
  EXPECT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(lines(two.out), 2u) << two.out;
}

// A chat message of megabytes is tokenized only until it passes the context, from -f and from
// standard input alike: the error counts no more tokens than the context holds.
TEST(CliChat, AMessageFarPastTheContextIsRefusedEarly) {
  test::TempDir dir("cli-chat-long");
  GraphOptions g;
  g.prefill_len = 8;
  g.max_context = 128;
  const std::string path = test::export_to(test::cached_checkpoint("tiny-qwen2", 2), dir.file("chat.hfs"), g);
  std::string text;
  for (int i = 0; i < 800000; ++i) text += "word ";  // 4 MB, 800,000 tokens
  test::write_file(dir.file("long.txt"), text);
  const auto start = std::chrono::steady_clock::now();
  auto file = test::run_cli({"run", "-m", path, "--chat", "-f", dir.file("long.txt"), "-n", "4", "-t", "1"});
  auto input = test::run_cli({"run", "-m", path, "--chat", "-n", "4", "-t", "1"}, "hi\n" + text + "\n");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto* r : {&file, &input}) {
    EXPECT_EQ(r->exit_code, 1) << r->err;
    EXPECT_THAT(r->err, HasSubstr("prompt does not fit: more than 128 tokens > max_context 128")) << r->err;
    EXPECT_EQ(lines(r->err), 1u) << r->err;
  }
  EXPECT_EQ(lines(input.out), 1u) << input.out;  // the first turn's reply
  EXPECT_LT(seconds, 20.0);
}

// The Gemma 3 preset's tokenizer and template: "<bos><start_of_turn>user\nHi there<end_of_turn>\n
// <start_of_turn>model\n" is 1 + 1 + 5 + 8 + 1 + 1 + 1 + 6 = 24 tokens (each special one token,
// each byte one token), and two turns run through the v2 program.
TEST(CliChat, Gemma3PresetChats) {
  test::TempDir dir("cli-chat-gemma3");
  GraphOptions g;
  g.prefill_len = 8;
  g.max_context = 128;
  const std::string path = test::export_to(test::cached_checkpoint("tiny-gemma3", 2), dir.file("g.hfs"), g);
  auto one =
      test::run_cli({"run", "-m", path, "--chat", "-p", "Hi there", "-n", "4", "--ignore-eos", "-t", "1", "--stats"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(one.out + one.err, HasSubstr("prompt 24 tokens"));
  auto two = test::run_cli({"run", "-m", path, "--chat", "-n", "4", "--ignore-eos", "-t", "1"}, "hello\nagain\n");
  EXPECT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(lines(two.out), 2u) << two.out;
}

TEST(CliChat, PresetsOfTheOtherFamiliesChat) {
  // Each preset's embedded tokenizer and chat template, through the runner.
  test::TempDir dir("cli-chat-families");
  GraphOptions g;
  g.prefill_len = 8;
  g.max_context = 64;  // tiny-phi3's original_max_position_embeddings
  for (const char* preset : {"tiny-phi3", "tiny-smollm3", "tiny-granite", "tiny-yarn"}) {
    SCOPED_TRACE(preset);
    const std::string path = test::export_to(test::cached_checkpoint(preset, 2), dir.file(cat(preset, ".hfs")), g);
    auto two = test::run_cli({"run", "-m", path, "--chat", "-n", "3", "--ignore-eos", "-t", "1"}, "hello\nagain\n");
    EXPECT_EQ(two.exit_code, 0) << two.err;
    EXPECT_GE(lines(two.out), 2u) << two.out;  // one reply a turn (a random model's reply may hold newlines)
  }
}

}  // namespace
}  // namespace hfstatic
