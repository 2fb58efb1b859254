// The contract's duties have teeth: a naive IOManager that skips one of them fails exactly
// the cases the real hf_static IOManager passes, over the same corpus.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fixtures.h"
#include "naive_io_manager.h"
#include "test_support.h"

namespace hfstatic::contract {
namespace {

using testing::HasSubstr;

std::string param_name(const testing::TestParamInfo<std::string>& info) { return info.param; }

template <typename Pred>
std::vector<std::string> valid_where(Pred pred) {
  std::vector<std::string> names;
  for (const auto& f : valid_fixtures())
    if (pred(f)) names.push_back(f.name);
  return names;
}

std::unique_ptr<HfStaticIOManager> real_io(const std::shared_ptr<const Program>& p) {
  auto io = std::make_unique<HfStaticIOManager>();
  io->load(p, HeapAllocator::instance());
  return io;
}

std::unique_ptr<NaiveIOManager> naive_io(const std::shared_ptr<const Program>& p, NaiveDefects d) {
  auto io = std::make_unique<NaiveIOManager>(d);
  io->load(p, HeapAllocator::instance());
  return io;
}

// Greedy tokens, or nullopt when a step fails.
std::optional<std::vector<int64_t>> try_generate(IOManager& io, const std::vector<int64_t>& prompt, int steps) {
  try {
    return greedy_generate(io, prompt, steps);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Another prompt of the same length, sharing only the first token.
std::vector<int64_t> other_prompt(const std::vector<int64_t>& p) {
  std::vector<int64_t> q = p;
  for (size_t i = 1; i < q.size(); ++i) q[i] = int64_t(200 - 13 * i % 150);
  return q;
}

// ---- counters -------------------------------------------------------------------------------

class StaleCounters : public testing::TestWithParam<std::string> {};

// Generate, reset, generate another prompt: the real IOManager gives that prompt's tokens; the
// naive one, whose counters kept the old length, writes the new keys and values at the wrong
// slots and reads the old ones (different tokens), or runs out of cache slots (an error).
TEST_P(StaleCounters, SecondGenerationAfterResetDiffers) {
  const ValidFixture& f = valid_fixture(GetParam());
  auto program = Program::load(fixture_path(f));
  const std::vector<int64_t> second = other_prompt(f.prompt);
  const int n = f.greedy_count();
  std::vector<int64_t> fresh = greedy_generate(*real_io(program), second, n);

  auto real = real_io(program);
  greedy_generate(*real, f.prompt, n);
  real->reset();
  EXPECT_EQ(greedy_generate(*real, second, n), fresh);

  auto naive = naive_io(program, NaiveDefects::only_stale_counters());
  greedy_generate(*naive, f.prompt, n);
  naive->reset();
  EXPECT_NE(naive->counter(0), 0);
  std::optional<std::vector<int64_t>> got = try_generate(*naive, second, n);
  EXPECT_TRUE(!got || *got != fresh) << "stale counters went unnoticed";
}

// Re-feeding from an earlier position without a reset (a rewind): same outcome.
TEST_P(StaleCounters, FeedingFromAnEarlierPositionDiffers) {
  const ValidFixture& f = valid_fixture(GetParam());
  auto program = Program::load(fixture_path(f));
  const std::vector<int64_t> second = other_prompt(f.prompt);
  const int n = f.greedy_count();
  std::vector<int64_t> fresh = greedy_generate(*real_io(program), second, n);

  auto real = real_io(program);
  greedy_generate(*real, f.prompt, n);
  EXPECT_EQ(greedy_generate(*real, second, n), fresh);

  auto naive = naive_io(program, NaiveDefects::only_stale_counters());
  greedy_generate(*naive, f.prompt, n);
  std::optional<std::vector<int64_t>> got = try_generate(*naive, second, n);
  EXPECT_TRUE(!got || *got != fresh) << "stale counters went unnoticed";
}

INSTANTIATE_TEST_SUITE_P(Corpus, StaleCounters,
                         testing::ValuesIn(valid_where([](const ValidFixture& f) { return f.prompt.size() > 2; })),
                         param_name);

// ---- equal-byte mismatches ------------------------------------------------------------------

std::vector<std::string> equal_byte_names() {
  std::vector<std::string> names;
  for (const auto& f : invalid_fixtures())
    if (f.equal_bytes) names.push_back(f.name);
  return names;
}

class EqualBytes : public testing::TestWithParam<std::string> {};

// A byte-size check accepts what only a dtype and shape check rejects.
TEST_P(EqualBytes, AcceptedByByteSizesRejectedByTheContract) {
  const InvalidFixture& f = invalid_fixture(GetParam());
  auto program = Program::load(fixture_path(f));
  NaiveIOManager naive(NaiveDefects::only_byte_size_validation());
  EXPECT_THAT(naive.contract_violations(*program), testing::IsEmpty());
  // Past the contract check, only the graph check (if anything) stops it, with an error that
  // knows nothing of the contract.
  try {
    naive.load(program, HeapAllocator::instance());
    if (!f.loads_without_contract_check) ADD_FAILURE() << "the graph check was expected to catch it";
  } catch (const ContractError& e) {
    ADD_FAILURE() << "a byte-size check raised a contract error: " << e.what();
  } catch (const Error& e) {
    EXPECT_FALSE(f.loads_without_contract_check) << e.what();
    EXPECT_THAT(e.what(), testing::Not(HasSubstr("hf_static v1")));
  }
  // The real IOManager names the dtype and shape.
  EXPECT_THROW(real_io(program), ContractError);
  for (const auto& x : f.expected) EXPECT_THAT(hf_static_v1_violations(*program), testing::Contains(x));
}

INSTANTIATE_TEST_SUITE_P(Corpus, EqualBytes, testing::ValuesIn(equal_byte_names()), param_name);

// The metadata says float16 caches of head_dim 32; the program has float32 caches of head_dim
// 16. The naive loader believes the metadata and runs anyway.
TEST(EqualBytesMetadata, NaiveLoaderBelievesMetadataThatDisagreesWithTheProgram) {
  const InvalidFixture& f = invalid_fixture("metadata_float16_cache_of_equal_bytes");
  auto program = Program::load(fixture_path(f));
  auto naive = naive_io(program, NaiveDefects::only_byte_size_validation());
  EXPECT_EQ(naive->model().cache_dtype, DType::F16);
  EXPECT_EQ(naive->execution(StepKind::Decode).method().input(3).dtype, DType::F32);
  EXPECT_THROW(real_io(program), ContractError);
}

// A byte-size check still catches what changes the byte size.
TEST(EqualBytesMetadata, ByteSizeCheckCatchesOtherSizes) {
  NaiveIOManager naive(NaiveDefects::only_byte_size_validation());
  for (const char* name :
       {"logits_vocab", "mask_context", "v_cache_head_dim", "counter_length_2", "decode_tokens_prefill_length"})
    EXPECT_THAT(naive.contract_violations(*Program::load(fixture_path(invalid_fixture(name)))),
                testing::Not(testing::IsEmpty()))
        << name;
}

// ---- unbound repeated state -----------------------------------------------------------------

class UnboundStateOutputs : public testing::TestWithParam<std::string> {};

TEST_P(UnboundStateOutputs, RunRefusesNamingTheUnplannedOutput) {
  const ValidFixture& f = valid_fixture(GetParam());
  auto program = Program::load(fixture_path(f));
  const size_t first = size_t(3 * program->metadata()["n_layers"].get<int64_t>() + 1);

  auto real = real_io(program);
  EXPECT_TRUE(real->feed(0, f.prompt).ok());

  auto naive = naive_io(program, NaiveDefects::only_unbound_state_outputs());
  Status s = naive->feed(0, f.prompt);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(cat("output ", first, " 'k_cache_0_out' is unplanned and has no bound buffer")));
  // The step refused to run: nothing was written, the counters did not move.
  EXPECT_EQ(naive->counter(0), 0);
  // Decode too.
  s = naive->step(StepKind::Decode, 0, std::vector<int64_t>{256}, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("method 'decode'"));
  EXPECT_THAT(s.message(), HasSubstr("is unplanned and has no bound buffer"));
}

INSTANTIATE_TEST_SUITE_P(Corpus, UnboundStateOutputs,
                         testing::ValuesIn(valid_where([](const ValidFixture& f) { return f.graph.repeat_state; })),
                         param_name);

// ---- tail routing ---------------------------------------------------------------------------

class TailRouting : public testing::TestWithParam<std::string> {};

// Without tail routing, the plan puts a padded prefill call past the end of the context.
TEST_P(TailRouting, NaivePlanRunsAPaddedPrefillPastTheContext) {
  const ValidFixture& f = valid_fixture(GetParam());
  auto program = Program::load(fixture_path(f));
  const int64_t T = f.graph.prefill_len, C = f.graph.max_context;
  auto overflows = [&](const std::vector<Step>& steps) {
    for (const Step& s : steps)
      if (s.kind == StepKind::Prefill && s.start_pos + T > C) return true;
    return false;
  };
  auto real = real_io(program);
  EXPECT_FALSE(overflows(real->plan(0, f.prompt.size())));
  EXPECT_EQ(greedy_generate(*real, f.prompt, f.greedy_count()),
            reference_greedy(f.preset, f.prompt, f.greedy_count(), f.graph.cache_dtype));

  auto naive = naive_io(program, NaiveDefects::only_no_tail_routing());
  EXPECT_TRUE(overflows(naive->plan(0, f.prompt.size()))) << "the naive plan fits: the fixture has no tail";
  // The real IOManager refuses such a call.
  EXPECT_THROW(real->step(StepKind::Prefill, C - T + 1, std::vector<int64_t>{1}), Error);
  // (This executor's cache_write stores real rows only, so the naive call itself still runs;
  // the plan is what breaks the contract, and a program whose graph writes all T rows would
  // overflow the cache.)
}

INSTANTIATE_TEST_SUITE_P(Corpus, TailRouting,
                         testing::ValuesIn(valid_where([](const ValidFixture& f) { return f.tail_routed(); })),
                         param_name);

// ---- all defects at once, over the whole valid corpus ----------------------------------------

class AllDefects : public testing::TestWithParam<std::string> {};

TEST_P(AllDefects, ValidProgramsStillLoad) {
  const ValidFixture& f = valid_fixture(GetParam());
  auto program = Program::load(fixture_path(f));
  NaiveIOManager naive;
  EXPECT_THAT(naive.contract_violations(*program), testing::IsEmpty());
  EXPECT_NO_THROW(naive.load(program, HeapAllocator::instance()));
}

INSTANTIATE_TEST_SUITE_P(Corpus, AllDefects, testing::ValuesIn(valid_where([](const ValidFixture&) { return true; })),
                         param_name);

}  // namespace
}  // namespace hfstatic::contract
