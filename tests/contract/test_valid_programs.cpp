// Every valid program of the corpus, driven through the real hf_static IOManager: greedy tokens
// equal the NumPy reference's, reset is complete, tails are routed through decode, prompts
// past the context fail before anything runs, the repeated state is bound to the state
// buffers, and every buffer comes from the allocator given at load.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "fixtures.h"
#include "io/hf_static_io_manager.h"
#include "test_support.h"

namespace hfstatic::contract {
namespace {

using testing::HasSubstr;

std::vector<std::string> valid_names(bool repeat_only = false) {
  std::vector<std::string> names;
  for (const auto& f : valid_fixtures())
    if (!repeat_only || f.graph.repeat_state) names.push_back(f.name);
  return names;
}

std::string param_name(const testing::TestParamInfo<std::string>& info) { return info.param; }

std::vector<int64_t> counters(const HfStaticIOManager& io) {
  std::vector<int64_t> c;
  for (size_t j = 2; j < io.state_count(); j += 3) c.push_back(*static_cast<const int64_t*>(io.state_buffer(j)));
  return c;
}

class ValidProgram : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    program = Program::load(fixture_path(fixture()));
    auto loaded = IOManagerRegistry::instance().load(program);
    hf = dynamic_cast<HfStaticIOManager*>(loaded.get());
    ASSERT_NE(hf, nullptr);
    io = std::move(loaded);
  }
  const ValidFixture& fixture() const { return valid_fixture(GetParam()); }
  std::vector<int64_t> reference() const {
    const ValidFixture& f = fixture();
    return reference_greedy(f.preset, f.prompt, f.greedy_count(), f.graph.cache_dtype);
  }

  std::shared_ptr<const Program> program;
  std::unique_ptr<IOManager> io;
  HfStaticIOManager* hf = nullptr;
};

TEST_P(ValidProgram, LoadsWithoutViolations) {
  EXPECT_THAT(hf_static_v1_violations(*program), testing::IsEmpty());
  const ModelInfo& m = io->model();
  EXPECT_EQ(m.prefill_len, fixture().graph.prefill_len);
  EXPECT_EQ(m.max_context, fixture().graph.max_context);
  EXPECT_EQ(m.cache_dtype, fixture().graph.cache_dtype);
  EXPECT_EQ(hf->state_count(), size_t(3 * m.n_layers));
}

TEST_P(ValidProgram, GreedyTokensMatchTheReference) {
  const ValidFixture& f = fixture();
  std::vector<int64_t> got = greedy_generate(*io, f.prompt, f.greedy_count());
  EXPECT_EQ(got, reference());
}

TEST_P(ValidProgram, ResetThenGenerateGivesIdenticalTokens) {
  const ValidFixture& f = fixture();
  std::vector<int64_t> first = greedy_generate(*io, f.prompt, f.greedy_count());
  io->reset();
  EXPECT_EQ(counters(*hf), std::vector<int64_t>(size_t(io->model().n_layers), 0));
  std::vector<int64_t> second = greedy_generate(*io, f.prompt, f.greedy_count());
  EXPECT_EQ(first, second);
  // A different prompt in between leaves nothing visible either.
  io->reset();
  std::vector<int64_t> other = {256, 1, 2, 3};
  other.resize(size_t(std::min<int64_t>(4, f.graph.max_context - 1)));
  greedy_generate(*io, other, 2);
  io->reset();
  EXPECT_EQ(greedy_generate(*io, f.prompt, f.greedy_count()), first);
}

// Prefill only when the padded call fits; the tail goes through decode, one token per call.
TEST_P(ValidProgram, PlanUsesPrefillOnlyWhenThePaddedCallFits) {
  const ValidFixture& f = fixture();
  const int64_t T = f.graph.prefill_len, C = f.graph.max_context;
  std::vector<Step> steps = io->plan(0, f.prompt.size());
  size_t next = 0;
  bool decode_seen = false;
  for (const Step& s : steps) {
    EXPECT_EQ(s.begin, next);
    EXPECT_EQ(s.start_pos, int64_t(s.begin));
    next += s.count;
    if (s.kind == StepKind::Prefill) {
      EXPECT_FALSE(decode_seen) << "prefill after decode";
      EXPECT_LE(s.start_pos + T, C);
      EXPECT_GE(s.count, 1u);
      EXPECT_LE(int64_t(s.count), T);
    } else {
      decode_seen = true;
      EXPECT_EQ(s.count, 1u);
      EXPECT_GT(s.start_pos + T, C) << "decode where a padded prefill fits";
    }
  }
  EXPECT_EQ(next, f.prompt.size());
  EXPECT_EQ(decode_seen, f.tail_routed());
}

// A prompt past the context is an error with the numbers in it; nothing runs, so counters and
// the next generation are unchanged.
TEST_P(ValidProgram, PromptPastTheContextFailsAndLeavesTheStateUntouched) {
  const ValidFixture& f = fixture();
  const int64_t C = f.graph.max_context;
  const std::vector<int64_t> whole(size_t(C + 1), 65);
  Status s = io->feed(0, whole);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("start_pos 0"));
  EXPECT_THAT(s.message(), HasSubstr(cat(C + 1, " tokens")));
  EXPECT_THAT(s.message(), HasSubstr(cat("max_context ", C)));

  // Mid-conversation: feed part of the prompt, then try to add too much.
  const size_t n = f.prompt.size();
  ASSERT_TRUE(io->feed(0, f.prompt).ok());
  const std::vector<int64_t> before = counters(*hf);
  const std::vector<float> logits_before(io->logits().begin(), io->logits().end());
  const std::vector<int64_t> extra(size_t(C - int64_t(n) + 1), 66);
  EXPECT_THROW(io->plan(int64_t(n), extra.size()), Error);
  s = io->feed(int64_t(n), extra);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(cat("start_pos ", n)));
  EXPECT_THAT(s.message(), HasSubstr(cat(extra.size(), " tokens")));
  EXPECT_THAT(s.message(), HasSubstr(cat("max_context ", C)));
  EXPECT_EQ(counters(*hf), before);
  EXPECT_EQ(std::vector<float>(io->logits().begin(), io->logits().end()), logits_before);
  // A start position past the context is refused too.
  EXPECT_FALSE(io->feed(C + 1, std::vector<int64_t>{1}).ok());

  io->reset();
  EXPECT_EQ(greedy_generate(*io, f.prompt, f.greedy_count()), reference());
}

// Prefill and decode share one set of state buffers: the alias prefix reports them, whatever
// its order, and no method owns a copy.
TEST_P(ValidProgram, BothMethodsUpdateTheSameStateBuffers) {
  const ValidFixture& f = fixture();
  ASSERT_TRUE(io->feed(0, f.prompt).ok());
  for (StepKind kind : {StepKind::Prefill, StepKind::Decode}) {
    ASSERT_TRUE(io->step(kind, 0, std::vector<int64_t>{256}).ok());
    const Execution& exec = hf->execution(kind);
    std::set<void*> reported;
    for (size_t i = 0; i < hf->state_count(); ++i) {
      EXPECT_EQ(exec.method().output_memory(i), OutputMemory::Alias);
      reported.insert(exec.output_data(i));
    }
    std::set<void*> state;
    for (size_t j = 0; j < hf->state_count(); ++j) state.insert(hf->state_buffer(j));
    EXPECT_EQ(reported, state) << step_kind_name(kind);
    for (size_t j = 0; j < hf->state_count(); ++j) EXPECT_EQ(exec.input_data(3 + j), hf->state_buffer(j));
  }
}

// By default a step computes only its last real row of logits; that row, and logits(), must
// equal the same row computed with all the others.
TEST_P(ValidProgram, LastRowLogitsEqualThoseOfAnAllRowsStep) {
  const ValidFixture& f = fixture();
  const int64_t V = io->model().vocab_size;
  const size_t n = std::min<size_t>(f.prompt.size(), size_t(io->model().prefill_len));
  const std::vector<Step> plan = io->plan(0, n);
  if (n < 2 || plan.size() != 1 || plan[0].kind != StepKind::Prefill)
    GTEST_SKIP() << "no multi-row prefill at position 0";
  const std::span<const int64_t> tokens(f.prompt.data(), n);
  auto last_row = [&](bool all) {
    hf->set_all_logits(all);
    io->reset();
    EXPECT_TRUE(io->step(StepKind::Prefill, 0, tokens, nullptr).ok());
    const float* rows = static_cast<const float*>(hf->execution(StepKind::Prefill).output_data(hf->state_count()));
    std::vector<float> last(rows + (n - 1) * size_t(V), rows + n * size_t(V));
    std::span<const float> reported = io->logits();
    EXPECT_TRUE(std::equal(reported.begin(), reported.end(), last.begin())) << "logits() is not the last real row";
    return last;
  };
  const std::vector<float> full = last_row(true);
  const std::vector<float> alone = last_row(false);
  for (int64_t v = 0; v < V; ++v)
    ASSERT_NEAR(alone[size_t(v)], full[size_t(v)], 1e-4 * (1.0 + std::fabs(full[size_t(v)]))) << "logit " << v;
}

INSTANTIATE_TEST_SUITE_P(Corpus, ValidProgram, testing::ValuesIn(valid_names()), param_name);

class RepeatedStateProgram : public ValidProgram {};

// The unplanned outputs after logits are the very state buffers, in input order.
TEST_P(RepeatedStateProgram, UnplannedOutputsAreBoundToTheStateBuffers) {
  const ValidFixture& f = fixture();
  const size_t L = size_t(io->model().n_layers);
  for (StepKind kind : {StepKind::Prefill, StepKind::Decode}) {
    ASSERT_TRUE(io->step(kind, 0, std::vector<int64_t>{256}).ok());
    const Execution& exec = hf->execution(kind);
    ASSERT_EQ(exec.method().num_outputs(), 6 * L + 1);
    for (size_t j = 0; j < 3 * L; ++j) {
      EXPECT_EQ(exec.method().output_memory(3 * L + 1 + j), OutputMemory::Unplanned);
      EXPECT_EQ(exec.output_data(3 * L + 1 + j), hf->state_buffer(j))
          << step_kind_name(kind) << " output " << 3 * L + 1 + j;
    }
  }
  io->reset();
  EXPECT_EQ(greedy_generate(*io, f.prompt, f.greedy_count()), reference());
}

INSTANTIATE_TEST_SUITE_P(Corpus, RepeatedStateProgram, testing::ValuesIn(valid_names(true)), param_name);

TEST_P(ValidProgram, OneSetOfStateAndAllMemoryFromTheGivenAllocator) {
  const ValidFixture& f = fixture();
  CountingAllocator counting;
  {
    auto counted = IOManagerRegistry::instance().load(program, counting);
    auto& chf = dynamic_cast<HfStaticIOManager&>(*counted);
    const ModelInfo& m = counted->model();
    const size_t L = size_t(m.n_layers);
    const size_t cache = size_t(m.n_kv_heads * m.max_context * m.head_dim) * dtype_size(m.cache_dtype);
    // The state first: one set, 3L buffers (not 6L).
    ASSERT_GE(counting.sizes.size(), 3 * L);
    uint64_t expected = 0;
    for (size_t l = 0; l < L; ++l) {
      EXPECT_EQ(counting.sizes[3 * l], cache);
      EXPECT_EQ(counting.sizes[3 * l + 1], cache);
      EXPECT_EQ(counting.sizes[3 * l + 2], sizeof(int64_t));
      expected += 2 * cache + sizeof(int64_t);
    }
    size_t caches = 0;
    for (size_t s : counting.sizes) caches += s == cache;
    EXPECT_EQ(caches, 2 * L) << "a second cache was allocated";
    // Then per method: tokens, positions, mask and the executor's arena.
    for (StepKind kind : {StepKind::Prefill, StepKind::Decode}) {
      const uint64_t T = kind == StepKind::Prefill ? uint64_t(m.prefill_len) : 1;
      expected += 2 * T * sizeof(int64_t) + T * uint64_t(m.max_context) * sizeof(float);
      expected += std::max<uint64_t>(chf.execution(kind).method().arena_bytes(), 64);
    }
    EXPECT_EQ(counting.sizes.size(), 3 * L + 8);
    EXPECT_EQ(counting.total(), expected);
    EXPECT_EQ(counting.live, int64_t(expected));
    // Running allocates nothing more.
    EXPECT_EQ(greedy_generate(*counted, f.prompt, f.greedy_count()), reference());
    counted->reset();
    EXPECT_EQ(counting.sizes.size(), 3 * L + 8);
  }
  EXPECT_EQ(counting.live, 0);
  EXPECT_EQ(counting.freed, counting.sizes.size());
}

TEST(ValidCorpus, CoversTheContractSpace) {
  size_t f16 = 0, repeat = 0, tail = 0, eq = 0;
  std::set<std::string> orders, presets;
  for (const auto& f : valid_fixtures()) {
    f16 += f.graph.cache_dtype == DType::F16;
    repeat += f.graph.repeat_state;
    tail += f.tail_routed();
    eq += f.graph.prefill_len == f.graph.max_context;
    orders.insert(f.graph.mutation_order);
    presets.insert(f.preset);
  }
  EXPECT_GE(valid_fixtures().size(), 15u);
  EXPECT_GE(f16, 3u);
  EXPECT_GE(repeat, 3u);
  EXPECT_GE(tail, 3u);
  EXPECT_GE(eq, 2u);
  EXPECT_EQ(orders.size(), mutation_orders().size());
  EXPECT_GE(presets.size(), 4u);
}

// The tail cases of the brief, step by step.
TEST(ValidCorpus, TailOfElevenTokensInAContextOfTwelve) {
  const ValidFixture& f = valid_fixture("tail_decode");
  auto io = IOManagerRegistry::instance().load(Program::load(fixture_path(f)));
  std::vector<Step> steps = io->plan(0, 11);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].kind, StepKind::Prefill);
  EXPECT_EQ(steps[0].count, 8u);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(steps[i].kind, StepKind::Decode);
    EXPECT_EQ(steps[i].start_pos, int64_t(7 + i));
  }
  // A prefill call there is refused before anything runs.
  io->reset();
  ASSERT_TRUE(io->feed(0, std::vector<int64_t>(8, 65)).ok());
  EXPECT_THROW(io->step(StepKind::Prefill, 8, std::vector<int64_t>{1, 2, 3}), Error);
}

}  // namespace
}  // namespace hfstatic::contract
