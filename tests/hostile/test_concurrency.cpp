// One loaded program is immutable and shared: several runners on different threads, each with
// its own state, produce exactly the tokens a single-threaded run of the same prompt produces.
// scripts/test-tsan.sh runs this under ThreadSanitizer.
#include <gtest/gtest.h>

#include <thread>

#include "format/program.h"
#include "io/io_manager.h"
#include "runner/runner.h"
#include "test_support.h"

namespace hfstatic {
namespace {

GenerationConfig greedy(int64_t n) {
  GenerationConfig c;
  c.max_new_tokens = n;
  c.ignore_eos = true;
  return c;
}

// Each runner uses `runner_threads` threads of its own pool for its kernels.
void expect_runners_sharing_one_program_match_single_threaded_runs(int runner_threads) {
  test::TempDir dir("concurrency");
  GraphOptions g;
  g.prefill_len = 4;
  g.max_context = 48;
  auto program = Program::load(test::export_to(test::cached_checkpoint("tiny-qwen2", 4), dir.file("p.hfs"), g));
  const std::vector<std::vector<int64_t>> prompts = {
      {1, 2, 3}, {200, 17, 5, 9, 11, 64, 3}, {42}, {7, 7, 7, 7, 7, 7, 7, 7, 7, 100}};
  RunnerOptions single;
  single.threads = 1;
  std::vector<std::vector<int64_t>> expected;
  for (const auto& p : prompts)
    expected.push_back(Runner::load(program, single)->generate_tokens(p, greedy(12)).tokens);
  RunnerOptions o;
  o.threads = runner_threads;

  constexpr int kRounds = 2;
  std::vector<std::vector<std::vector<int64_t>>> got(prompts.size());
  std::vector<std::string> errors(prompts.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < prompts.size(); ++t) {
    threads.emplace_back([&, t] {
      try {
        auto runner = Runner::load(program, o);  // own IOManager, state and pool
        for (int round = 0; round < kRounds; ++round) {
          runner->reset();
          got[t].push_back(runner->generate_tokens(prompts[t], greedy(12)).tokens);
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < prompts.size(); ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    ASSERT_EQ(got[t].size(), size_t(kRounds)) << "thread " << t;
    for (const auto& tokens : got[t]) EXPECT_EQ(tokens, expected[t]) << "thread " << t;
  }
}

TEST(Concurrency, RunnersSharingOneProgramMatchSingleThreadedRuns) {
  expect_runners_sharing_one_program_match_single_threaded_runs(1);
}

TEST(Concurrency, RunnersWithTheirOwnThreadPoolsMatchSingleThreadedRuns) {
  expect_runners_sharing_one_program_match_single_threaded_runs(2);
}

TEST(Concurrency, IOManagersOnThreadsShareOneProgram) {
  test::TempDir dir("concurrency-io");
  GraphOptions g;
  g.prefill_len = 8;
  g.max_context = 32;
  auto program = Program::load(test::export_to(test::cached_checkpoint("tiny", 6), dir.file("p.hfs"), g));
  std::vector<int64_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  auto single = IOManagerRegistry::instance().load(program);
  ASSERT_TRUE(single->feed(0, prompt).ok());
  std::vector<float> expected(single->logits().begin(), single->logits().end());
  std::vector<std::vector<float>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      auto io = IOManagerRegistry::instance().load(program);
      for (int i = 0; i < 3; ++i) {
        io->reset();
        if (!io->feed(0, prompt).ok()) return;
      }
      got[t].assign(io->logits().begin(), io->logits().end());
    });
  for (auto& th : threads) th.join();
  for (const auto& l : got) EXPECT_EQ(l, expected);
}

}  // namespace
}  // namespace hfstatic
