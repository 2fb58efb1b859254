// What the runner around the hf_static IOManager must get right, over the valid corpus: reset,
// conversations continued over several calls, rewind, prompts past the context, stop().
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "fixtures.h"
#include "io/hf_static_io_manager.h"
#include "runner/runner.h"
#include "test_support.h"

namespace hfstatic::contract {
namespace {

using testing::HasSubstr;

std::vector<std::string> valid_names() {
  std::vector<std::string> names;
  for (const auto& f : valid_fixtures()) names.push_back(f.name);
  return names;
}

std::string param_name(const testing::TestParamInfo<std::string>& info) { return info.param; }

GenerationConfig greedy(int64_t n) {
  GenerationConfig c;
  c.max_new_tokens = n;
  c.ignore_eos = true;  // the reference does not stop at end-of-sequence ids
  return c;
}

std::vector<int64_t> counters(Runner& r) {
  auto& hf = dynamic_cast<HfStaticIOManager&>(r.io());
  std::vector<int64_t> c;
  for (size_t j = 2; j < hf.state_count(); j += 3) c.push_back(*static_cast<const int64_t*>(hf.state_buffer(j)));
  return c;
}

std::unique_ptr<Runner> load_runner(const std::string& path) {
  RunnerOptions o;
  o.threads = 1;
  return std::make_unique<Runner>(IOManagerRegistry::instance().load(Program::load(path)), nullptr, o);
}

class RunnerContract : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // Token ids only: the runner gets no tokenizer, so the tests see the contract and nothing
    // of text decoding (see RunnerTokenizer below).
    runner = load_runner(fixture_path(fixture()));
  }
  const ValidFixture& fixture() const { return valid_fixture(GetParam()); }
  std::vector<int64_t> reference() const {
    const ValidFixture& f = fixture();
    return reference_greedy(f.preset, f.prompt, f.greedy_count(), f.graph.cache_dtype);
  }
  std::unique_ptr<Runner> runner;
};

TEST_P(RunnerContract, GreedyTokensMatchTheReference) {
  const ValidFixture& f = fixture();
  GenerationResult r = runner->generate_tokens(f.prompt, greedy(f.greedy_count()));
  EXPECT_EQ(r.tokens, reference());
}

TEST_P(RunnerContract, GenerateResetGenerateGivesIdenticalTokens) {
  const ValidFixture& f = fixture();
  GenerationResult first = runner->generate_tokens(f.prompt, greedy(f.greedy_count()));
  runner->reset();
  EXPECT_EQ(runner->position(), 0);
  EXPECT_TRUE(runner->context().empty());
  EXPECT_EQ(counters(*runner), std::vector<int64_t>(size_t(runner->model().n_layers), 0));
  GenerationResult second = runner->generate_tokens(f.prompt, greedy(f.greedy_count()));
  EXPECT_EQ(first.tokens, second.tokens);
  EXPECT_EQ(second.tokens, reference());
}

// Turn A then turn B gives the tokens one turn over A + generated + B gives: the last sampled
// token of a turn is fed at the start of the next.
TEST_P(RunnerContract, TwoTurnsEqualOneTurn) {
  const ValidFixture& f = fixture();
  const int64_t C = f.graph.max_context;
  const size_t a = size_t(std::max<int64_t>(1, std::min<int64_t>(int64_t(f.prompt.size()), C / 3)));
  const std::vector<int64_t> A(f.prompt.begin(), f.prompt.begin() + a), B = {32, 97};
  const int64_t k1 = 2, k2 = 2;
  if (int64_t(a) + k1 + int64_t(B.size()) + k2 > C) GTEST_SKIP() << "context too small for two turns";

  GenerationResult t1 = runner->generate_tokens(A, greedy(k1));
  ASSERT_EQ(int64_t(t1.tokens.size()), k1);
  EXPECT_EQ(runner->position(), int64_t(a) + k1 - 1);  // the last sampled token is pending
  EXPECT_EQ(runner->context().size(), a + size_t(k1));
  GenerationResult t2 = runner->generate_tokens(B, greedy(k2));
  const int64_t pos_two_turns = runner->position();

  runner->reset();
  std::vector<int64_t> all = A;
  all.insert(all.end(), t1.tokens.begin(), t1.tokens.end());
  all.insert(all.end(), B.begin(), B.end());
  GenerationResult one = runner->generate_tokens(all, greedy(k2));
  EXPECT_EQ(t2.tokens, one.tokens);
  EXPECT_EQ(runner->position(), pos_two_turns);
}

// A prompt that does not fit is an error before anything runs, with the numbers in it; the
// conversation goes on as if it had not been tried.
TEST_P(RunnerContract, PromptPastTheContextFailsAndLeavesTheStateUntouched) {
  const ValidFixture& f = fixture();
  const int64_t C = f.graph.max_context;
  const std::vector<int64_t> whole(size_t(C + 1), 65);
  try {
    runner->generate_tokens(whole, greedy(1));
    FAIL() << "a prompt past the context was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("start_pos 0"));
    EXPECT_THAT(e.what(), HasSubstr(cat(C + 1, " tokens")));
    EXPECT_THAT(e.what(), HasSubstr(cat("max_context ", C)));
  }
  EXPECT_EQ(runner->position(), 0);

  if (int64_t(f.prompt.size()) + 2 > C) GTEST_SKIP() << "no room for a second turn";
  GenerationResult t1 = runner->generate_tokens(f.prompt, greedy(1));
  const int64_t pos = runner->position();
  const std::vector<int64_t> context = runner->context();
  const std::vector<int64_t> before = counters(*runner);
  const std::vector<int64_t> too_long(size_t(C - pos), 66);  // plus the pending token: one too many
  try {
    runner->generate_tokens(too_long, greedy(1));
    FAIL() << "a prompt past the context was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(cat("start_pos ", pos)));
    EXPECT_THAT(e.what(), HasSubstr(cat(too_long.size() + 1, " tokens")));
    EXPECT_THAT(e.what(), HasSubstr(cat("max_context ", C)));
  }
  EXPECT_EQ(runner->position(), pos);
  EXPECT_EQ(runner->context(), context);
  EXPECT_EQ(counters(*runner), before);
  GenerationResult t2 = runner->generate_tokens({}, greedy(1));
  // Same as continuing without the failed attempt.
  runner->reset();
  runner->generate_tokens(f.prompt, greedy(1));
  EXPECT_EQ(runner->generate_tokens({}, greedy(1)).tokens, t2.tokens);
  (void)t1;
}

// Rewinding is a smaller start position: regenerating from there gives the same tokens.
TEST_P(RunnerContract, RewindThenRegenerateGivesTheSameTokens) {
  const ValidFixture& f = fixture();
  const int n = f.greedy_count();
  GenerationResult first = runner->generate_tokens(f.prompt, greedy(n));
  runner->rewind(first.tokens.size() + 1);  // the generated tokens and the last prompt token
  EXPECT_EQ(runner->context(), std::vector<int64_t>(f.prompt.begin(), f.prompt.end() - 1));
  GenerationResult again = runner->generate_tokens(std::vector<int64_t>{f.prompt.back()}, greedy(n));
  EXPECT_EQ(again.tokens, first.tokens);
}

// Reaching the end of the context ends generation with a stop reason, not an error.
TEST_P(RunnerContract, ContextFullIsAStopReason) {
  const ValidFixture& f = fixture();
  const int64_t C = f.graph.max_context;
  if (f.prompt.size() == 1) GTEST_SKIP() << "max_new_tokens (at most max_context) ends generation first";
  GenerationResult r = runner->generate_tokens(f.prompt, greedy(C));
  EXPECT_EQ(r.stop_reason, StopReason::ContextFull);
  EXPECT_EQ(int64_t(r.tokens.size()), C - int64_t(f.prompt.size()) + 1);
  EXPECT_EQ(runner->position(), C);
}

INSTANTIATE_TEST_SUITE_P(Corpus, RunnerContract, testing::ValuesIn(valid_names()), param_name);

TEST(RunnerStop, StopFromAnotherThreadEndsAtTheNextToken) {
  auto runner = load_runner(fixture_path(valid_fixture("f32_repeat")));
  size_t seen = 0;
  GenerationResult r = runner->generate_tokens(valid_fixture("f32_repeat").prompt, greedy(16), [&](int64_t) {
    if (++seen == 2) std::thread([&] { runner->stop(); }).join();
    return true;
  });
  EXPECT_EQ(r.stop_reason, StopReason::Stopped);
  EXPECT_EQ(r.tokens.size(), 2u);
}

// The tiny checkpoints' tokenizer knows 259 ids while the model's vocab_size is 272 (real
// checkpoints pad their vocabularies the same way). Sampling an id the tokenizer does not know
// must not end generation with an error: generate_tokens works on token ids.
TEST(RunnerTokenizer, IdsPastTheTokenizerDoNotFailGeneration) {
  const ValidFixture& f = valid_fixture("f16");
  RunnerOptions o;
  o.threads = 1;
  auto runner = Runner::load(fixture_path(f), o);
  ASSERT_NE(runner->tokenizer(), nullptr);
  const std::vector<int64_t> want = reference_greedy(f.preset, f.prompt, f.greedy_count(), f.graph.cache_dtype);
  ASSERT_TRUE(std::any_of(want.begin(), want.end(), [](int64_t t) { return t >= 259; }))
      << "the fixture samples no such id";
  GenerationResult r;
  EXPECT_NO_THROW(r = runner->generate_tokens(f.prompt, greedy(f.greedy_count())));
  EXPECT_EQ(r.tokens, want);
}

}  // namespace
}  // namespace hfstatic::contract
