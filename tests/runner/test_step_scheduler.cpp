// Continuous batching: runners on threads of their own over one program, every step through one
// StepScheduler, generate token for token (and leave logits bit for bit) what a runner alone
// does: prompts of different lengths and chunks, several turns, a prompt tail past the last
// prefill chunk (fed by decode steps), sampled and speculative generation, sequences joining
// and leaving mid-way. Queued decode steps run as one batch, a bad token stays with its row,
// and a stopped, failing or slow runner holds nobody.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "export/exporter.h"
#include "export/make_checkpoint.h"
#include "runner/drafter.h"
#include "runner/runner.h"
#include "runner/step_scheduler.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kPrefill = 8, kContext = 96;

struct Variant {
  const char* name;
  const char* preset;
  DType cache;
  std::optional<WeightQuant> quant;
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }
const Variant kVariants[] = {{"tiny_float32", "tiny", DType::F32, std::nullopt},
                             {"qwen2_int4_float16_cache", "tiny-qwen2", DType::F16, WeightQuant{DType::I4, 32}}};

const test::TempDir& programs_dir() {
  static test::TempDir* dir = new test::TempDir("step-scheduler");
  return *dir;
}

std::string export_variant(const Variant& v) {
  ExportOptions o;
  o.graph.prefill_len = kPrefill;
  o.graph.max_context = kContext;
  o.graph.cache_dtype = v.cache;
  o.quant = v.quant;
  const std::string path = programs_dir().file(std::string(v.name) + ".hfs");
  if (!std::filesystem::exists(path)) export_program(test::cached_checkpoint(v.preset, 4), path, o);
  return path;
}

// n token ids in [1, 250], different for each seed.
std::vector<int64_t> tokens(int64_t n, int64_t seed) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back((seed * 37 + i * 11) % 250 + 1);
  return out;
}

struct Turn {
  int64_t prompt_tokens, max_tokens;
};
struct Job {
  std::vector<Turn> turns;
  float temperature = 0;  // sampled with a fixed seed when > 0
  bool lookup = false;    // speculative decoding with prompt lookup (verify steps)
};

GenerationConfig config_of(const Job& job, const Turn& turn, Drafter* drafter) {
  GenerationConfig c;
  c.max_new_tokens = turn.max_tokens;
  c.ignore_eos = true;
  c.sampling.temperature = job.temperature;
  c.sampling.seed = 11;
  c.drafter = drafter;
  return c;
}

// What a job's turns generated, and the logits each turn ended with.
struct Outcome {
  std::vector<std::vector<int64_t>> tokens;
  std::vector<std::vector<float>> logits;
  int64_t drafted = 0;  // tokens verify steps fed as drafts
  std::string error;
};

Outcome run_job(Runner& runner, const Job& job, size_t seed) {
  Outcome out;
  PromptLookup lookup;
  try {
    for (size_t t = 0; t < job.turns.size(); ++t) {
      const Turn& turn = job.turns[t];
      GenerationResult g = runner.generate_tokens(tokens(turn.prompt_tokens, int64_t(seed * 10 + t)),
                                                  config_of(job, turn, job.lookup ? &lookup : nullptr));
      out.tokens.push_back(g.tokens);
      out.drafted += g.stats.drafted_tokens;
      const auto logits = runner.io().logits();
      out.logits.emplace_back(logits.begin(), logits.end());
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

// Runs each caller on a thread of its own with the scheduler paused until every caller's first
// step is queued: queued decode steps run as one batch when it resumes.
void run_paused(StepScheduler& scheduler, const std::vector<std::function<void()>>& callers) {
  const size_t steps = callers.size();
  scheduler.pause();
  std::vector<std::thread> threads;
  for (auto& call : callers) threads.emplace_back(call);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (scheduler.queued() < steps && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(scheduler.queued(), steps);
  scheduler.resume();
  for (auto& t : threads) t.join();
}

class StepSchedulerRunners : public testing::TestWithParam<Variant> {};

TEST_P(StepSchedulerRunners, GenerateAsRunnersAlone) {
  auto program = Program::load(export_variant(GetParam()));
  // Prompts of one chunk or several, ending inside a chunk or on its end; runs of 1 to 40
  // tokens, so that sequences join and leave while others decode; a second turn whose prompt
  // starts past the last position a prefill chunk fits (its tail is fed by decode steps).
  const std::vector<Job> jobs = {
      {{{3, 40}}},          {{{9, 6}, {5, 12}}},  {{{17, 25}}, 0.8f},
      {{{80, 10}, {3, 3}}}, {{{30, 1}, {2, 30}}}, {{{12, 30}}, 0, /*lookup=*/true},
  };
  std::vector<Outcome> alone;
  for (size_t j = 0; j < jobs.size(); ++j) {
    RunnerOptions own;
    own.threads = 2;
    auto runner = Runner::load(program, own);
    alone.push_back(run_job(*runner, jobs[j], j));
    ASSERT_EQ(alone.back().error, "") << "job " << j;
    if (jobs[j].lookup) {
      EXPECT_GT(alone.back().drafted, 0) << "job " << j << " ran no verify step";
    }
  }
  StepSchedulerOptions so;
  so.threads = 2;
  StepScheduler scheduler(so);
  RunnerOptions shared;
  shared.scheduler = &scheduler;
  std::vector<std::unique_ptr<Runner>> runners;
  for (size_t j = 0; j < jobs.size(); ++j) runners.push_back(Runner::load(program, shared));
  // Every runner's first step queued before any runs: they start together.
  std::vector<Outcome> together(jobs.size());
  std::vector<std::function<void()>> callers;
  for (size_t j = 0; j < jobs.size(); ++j)
    callers.push_back([&, j] { together[j] = run_job(*runners[j], jobs[j], j); });
  run_paused(scheduler, callers);

  for (size_t j = 0; j < jobs.size(); ++j) {
    ASSERT_EQ(together[j].error, "") << "job " << j;
    ASSERT_EQ(together[j].tokens.size(), jobs[j].turns.size());
    for (size_t t = 0; t < jobs[j].turns.size(); ++t) {
      EXPECT_EQ(together[j].tokens[t], alone[j].tokens[t]) << "job " << j << " turn " << t;
      ASSERT_EQ(together[j].logits[t].size(), alone[j].logits[t].size());
      EXPECT_EQ(std::memcmp(together[j].logits[t].data(), alone[j].logits[t].data(),
                            alone[j].logits[t].size() * sizeof(float)),
                0)
          << "job " << j << " turn " << t << ": the last logits differ";
    }
  }
  const StepScheduler::Stats stats = scheduler.stats();
  EXPECT_GT(stats.batched_decode_steps, 0u) << "no decode step ran more than one sequence";
  EXPECT_GT(stats.other_steps, 0u);
  EXPECT_GT(stats.decode_rows, stats.decode_steps);
}

INSTANTIATE_TEST_SUITE_P(Programs, StepSchedulerRunners, testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(StepScheduler, QueuedDecodeStepsRunAsOneBatchAndABadTokenStaysWithItsRow) {
  auto program = Program::load(export_variant(kVariants[1]));
  StepSchedulerOptions so;
  so.threads = 2;
  StepScheduler scheduler(so);
  RunnerOptions shared, own;
  shared.scheduler = &scheduler;
  own.threads = 2;
  constexpr size_t kRunners = 3;
  std::vector<std::unique_ptr<Runner>> runners, alone;
  for (size_t i = 0; i < kRunners; ++i) {
    runners.push_back(Runner::load(program, shared));
    alone.push_back(Runner::load(program, own));
    runners[i]->prefill(tokens(int64_t(4 + 7 * i), int64_t(i)));
    alone[i]->prefill(tokens(int64_t(4 + 7 * i), int64_t(i)));
  }
  // A fourth sequence asks for a decode step of a token outside the vocabulary.
  auto bad = IOManagerRegistry::instance().load(program);
  ASSERT_TRUE(bad->feed(0, tokens(5, 9)).ok());
  const int64_t outside = bad->model().vocab_size + 3;
  std::string bad_error;

  for (int round = 0; round < 2; ++round) {
    std::vector<std::function<void()>> callers;
    for (size_t i = 0; i < kRunners; ++i)
      callers.push_back([&, i] { runners[i]->decode(int64_t(20 + i + 3 * round)); });
    if (round == 0)
      callers.push_back([&] {
        bad_error = test::error_of([&] {
          Status s = scheduler.step(*bad, program.get(), StepKind::Decode, 5, std::span<const int64_t>(&outside, 1));
          if (!s.ok()) fail(s.message());
        });
        scheduler.leave(*bad);
      });
    run_paused(scheduler, callers);
    for (size_t i = 0; i < kRunners; ++i) {
      const auto want = alone[i]->decode(int64_t(20 + i + 3 * round));
      const auto got = runners[i]->io().logits();
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size_bytes()), 0) << "round " << round << " runner " << i;
    }
    const StepScheduler::Stats stats = scheduler.stats();
    EXPECT_EQ(stats.max_decode_rows, kRunners + 1) << "round " << round;
    EXPECT_EQ(stats.batched_decode_steps, uint64_t(round + 1)) << "round " << round;
  }
  EXPECT_NE(bad_error.find("outside the vocabulary"), std::string::npos) << bad_error;
}

// A copy of `path` whose final norm holds a NaN: every logit it computes is NaN.
std::string with_nan_norm(const std::string& path) {
  const std::string out = programs_dir().file("nan-norm.hfs");
  std::filesystem::copy_file(path, out, std::filesystem::copy_options::overwrite_existing);
  auto p = Program::load(out);
  const TensorInfo* t = p->container().find("model.norm.weight");
  if (!t) fail("no model.norm.weight in ", out);
  const size_t offset = size_t(p->container().tensor_data(*t) - p->file_data()) + dtype_size(t->dtype);
  const uint32_t nan32 = 0x7fc00000u;
  const uint16_t nan16 = 0x7e00;
  std::fstream f(out, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(std::streamoff(offset));
  if (t->dtype == DType::F32)
    f.write(reinterpret_cast<const char*>(&nan32), 4);
  else
    f.write(reinterpret_cast<const char*>(&nan16), 2);
  if (!f.good()) fail("cannot write ", out);
  return out;
}

TEST(StepScheduler, StoppedFailingAndSlowRunnersHoldNobody) {
  const std::string path = export_variant(kVariants[0]);
  auto program = Program::load(path);
  auto nan_program = Program::load(with_nan_norm(path));
  StepSchedulerOptions so;
  so.threads = 2;
  so.gather_fraction = 1;  // the longest wait for a row that is not back
  StepScheduler scheduler(so);
  RunnerOptions shared, own;
  shared.scheduler = &scheduler;
  own.threads = 2;
  const Job long_job{{{6, 40}}};

  auto stopped = Runner::load(program, shared), nan = Runner::load(nan_program, shared),
       bad_prompt = Runner::load(program, shared), slow = Runner::load(program, shared);
  std::vector<std::unique_ptr<Runner>> normal;
  for (int i = 0; i < 2; ++i) normal.push_back(Runner::load(program, shared));

  std::mutex mutex;
  std::condition_variable changed;
  int normal_done = 0;
  bool normal_done_while_slow_waited = false;
  std::atomic<int> stopped_tokens{0};
  std::atomic<bool> stop_called{false};
  std::vector<Outcome> normal_out(normal.size());
  GenerationResult stopped_result;
  std::string nan_error, bad_prompt_error;
  Outcome bad_prompt_after;

  std::vector<std::thread> threads;
  // The stopped runner holds its fifth token until another thread has stopped it.
  threads.emplace_back([&] {
    stopped_result = stopped->generate_tokens(tokens(5, 1), config_of(long_job, {5, 80}, nullptr), [&](int64_t) {
      if (++stopped_tokens == 5)
        for (auto until = std::chrono::steady_clock::now() + 30s;
             !stop_called && std::chrono::steady_clock::now() < until;)
          std::this_thread::sleep_for(100us);
      return true;
    });
  });
  threads.emplace_back([&] {
    while (stopped_tokens.load() < 5) std::this_thread::sleep_for(100us);
    stopped->stop();
    stop_called = true;
  });
  threads.emplace_back([&] {
    nan_error = test::error_of([&] { nan->generate_tokens(tokens(7, 2), config_of(long_job, {7, 20}, nullptr)); });
  });
  threads.emplace_back([&] {
    std::vector<int64_t> prompt = tokens(6, 3);
    prompt[2] = -4;
    bad_prompt_error = test::error_of([&] {
      bad_prompt->generate_tokens(prompt, config_of(long_job, {6, 20}, nullptr));
    });
    bad_prompt_after = run_job(*bad_prompt, long_job, 4);
  });
  // After its third token the slow runner waits (at most 60 s) for the others to finish.
  threads.emplace_back([&] {
    int seen = 0;
    slow->generate_tokens(tokens(4, 5), config_of(long_job, {4, 10}, nullptr), [&](int64_t) {
      if (++seen != 3) return true;
      std::unique_lock<std::mutex> lock(mutex);
      normal_done_while_slow_waited = changed.wait_for(lock, 60s, [&] { return normal_done == 2; });
      return true;
    });
  });
  for (size_t i = 0; i < normal.size(); ++i)
    threads.emplace_back([&, i] {
      normal_out[i] = run_job(*normal[i], long_job, 6 + i);
      std::lock_guard<std::mutex> lock(mutex);
      ++normal_done;
      changed.notify_all();
    });
  for (auto& t : threads) t.join();

  EXPECT_TRUE(normal_done_while_slow_waited) << "the other runners waited for the slow one";
  EXPECT_EQ(stopped_result.stop_reason, StopReason::Stopped);
  EXPECT_EQ(stopped_result.tokens.size(), 5u);
  EXPECT_NE(nan_error.find("are NaN"), std::string::npos) << nan_error;
  EXPECT_NE(bad_prompt_error.find("outside the vocabulary"), std::string::npos) << bad_prompt_error;
  for (size_t i = 0; i < normal.size(); ++i) {
    auto runner = Runner::load(program, own);
    const Outcome want = run_job(*runner, long_job, 6 + i);
    EXPECT_EQ(normal_out[i].error, "");
    EXPECT_EQ(normal_out[i].tokens, want.tokens) << "runner " << i;
    EXPECT_EQ(normal_out[i].logits, want.logits) << "runner " << i;
  }
  auto runner = Runner::load(program, own);
  EXPECT_EQ(bad_prompt_after.tokens, run_job(*runner, long_job, 4).tokens);
  // The stopped runner's tokens are the start of what it generates alone.
  runner = Runner::load(program, own);
  const GenerationResult want = runner->generate_tokens(tokens(5, 1), config_of(long_job, {5, 80}, nullptr));
  ASSERT_LE(stopped_result.tokens.size(), want.tokens.size());
  EXPECT_TRUE(std::equal(stopped_result.tokens.begin(), stopped_result.tokens.end(), want.tokens.begin()));
}

TEST(StepScheduler, RefusesAGatherFractionOutsideZeroToOne) {
  StepSchedulerOptions so;
  so.threads = 1;
  so.gather_fraction = 1.5;
  EXPECT_NE(test::error_of([&] { StepScheduler s(so); }).find("gather_fraction"), std::string::npos);
}

}  // namespace
}  // namespace hfstatic
