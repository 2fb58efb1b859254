// The hf_static v2 corpus (sliding-window layers over full-length caches): valid programs load
// as v2 and give the NumPy reference's greedy tokens; invalid ones fail with the violation they
// were made with; and a runner that gives local layers the global mask (a v1 runner's view)
// gives other tokens once a prompt passes the window.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "fixtures.h"
#include "naive_io_manager.h"
#include "test_support.h"

namespace hfstatic::contract {
namespace {

using testing::Contains;
using testing::HasSubstr;

std::string param_name(const testing::TestParamInfo<std::string>& info) { return info.param; }

template <typename Corpus>
std::vector<std::string> names(const Corpus& corpus) {
  std::vector<std::string> out;
  for (const auto& f : corpus) out.push_back(f.name);
  return out;
}

class ValidV2 : public testing::TestWithParam<std::string> {
 protected:
  const ValidFixture& fixture() const { return valid_fixture(GetParam()); }
  std::vector<int64_t> reference() const {
    const ValidFixture& f = fixture();
    return reference_greedy(f.preset, f.prompt, f.greedy_count(), f.graph.cache_dtype);
  }
};

TEST_P(ValidV2, ConformsToVersion2Only) {
  auto program = Program::load(fixture_path(fixture()));
  EXPECT_THAT(hf_static_v2_violations(*program), testing::IsEmpty());
  EXPECT_THAT(hf_static_v1_violations(*program), Contains("metadata key 'version': expected 1, got 2"));
  EXPECT_THAT(IOManagerRegistry::instance().describe(*program), HasSubstr("hf_static v2 program"));
}

TEST_P(ValidV2, GreedyTokensMatchTheReference) {
  const ValidFixture& f = fixture();
  auto io = IOManagerRegistry::instance().load(Program::load(fixture_path(f)));
  ASSERT_NE(dynamic_cast<HfStaticIOManager*>(io.get()), nullptr);
  EXPECT_EQ(greedy_generate(*io, f.prompt, f.greedy_count()), reference());
  // Reset, another prompt, reset: the same tokens again.
  io->reset();
  greedy_generate(*io, {256, 1, 2, 3, 4, 5, 6, 7}, 3);
  io->reset();
  EXPECT_EQ(greedy_generate(*io, f.prompt, f.greedy_count()), reference());
}

// The teeth: local layers given the global mask see past the window, so the tokens differ.
TEST_P(ValidV2, ARunnerWithoutTheLocalMaskDiffers) {
  const ValidFixture& f = fixture();
  auto program = Program::load(fixture_path(f));
  NaiveIOManager naive(NaiveDefects::only_no_local_mask(), hf_static::kVersion2);
  naive.load(program, HeapAllocator::instance());
  EXPECT_NE(greedy_generate(naive, f.prompt, f.greedy_count()), reference());
  // The same manager with the local mask written is the real one.
  NaiveIOManager fixed(NaiveDefects{false, false, false, false, false}, hf_static::kVersion2);
  fixed.load(program, HeapAllocator::instance());
  EXPECT_EQ(greedy_generate(fixed, f.prompt, f.greedy_count()), reference());
}

// One set of state, and one mask and one local mask per method: 3L + 10 allocations.
TEST_P(ValidV2, AllocatesTheLocalMaskOncePerMethod) {
  CountingAllocator counting;
  auto io = IOManagerRegistry::instance().load(Program::load(fixture_path(fixture())), counting);
  const ModelInfo& m = io->model();
  EXPECT_EQ(counting.sizes.size(), size_t(3 * m.n_layers + 10));
  for (int64_t rows : {m.prefill_len, int64_t(1)}) {
    const size_t mask = size_t(rows * m.max_context) * sizeof(float);
    const int methods = (m.prefill_len == rows) + (rows == 1);  // methods of this many rows
    EXPECT_EQ(std::count(counting.sizes.begin(), counting.sizes.end(), mask), 2 * methods) << rows << " rows";
  }
}

// Version 1's manager refuses a v2 program instead of driving it with one mask.
TEST_P(ValidV2, TheVersion1ManagerRefusesIt) {
  auto program = Program::load(fixture_path(fixture()));
  HfStaticIOManager v1;
  EXPECT_THROW(v1.load(program, HeapAllocator::instance()), ContractError);
}

INSTANTIATE_TEST_SUITE_P(Corpus, ValidV2, testing::ValuesIn(names(valid_v2_fixtures())), param_name);

class InvalidV2 : public testing::TestWithParam<std::string> {
 protected:
  const InvalidFixture& fixture() const { return invalid_fixture(GetParam()); }
};

TEST_P(InvalidV2, EveryLoaderReportsTheViolation) {
  const InvalidFixture& f = fixture();
  const std::string path = fixture_path(f);
  auto program = Program::load(path);
  const std::vector<std::string> v = hf_static_violations(*program, f.version);
  for (const auto& e : f.expected) EXPECT_THAT(v, Contains(e));
  try {
    IOManagerRegistry::instance().load(program);
    FAIL() << "loaded an invalid program";
  } catch (const ContractError& e) {
    for (const auto& x : f.expected) EXPECT_THAT(e.what(), HasSubstr("\n  " + x));
    EXPECT_THAT(e.what(), HasSubstr(cat(path, ": program violates hf_static v", f.version, " (")));
  }
  test::CommandResult r = test::run_cli({"validate", path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  for (const auto& x : f.expected) EXPECT_THAT(r.out + r.err, HasSubstr(x));
}

INSTANTIATE_TEST_SUITE_P(Corpus, InvalidV2, testing::ValuesIn(names(invalid_v2_fixtures())), param_name);

}  // namespace
}  // namespace hfstatic::contract
