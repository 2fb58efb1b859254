// The repeated state must follow input order; a suffix in another order is a contract violation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fixtures.h"
#include "io/hf_static_io_manager.h"
#include "test_support.h"

namespace hfstatic::contract {
namespace {

// The repeated state must come "in input order": output 3L + 1 + j repeats state input 3 + j.
// A program whose suffix lists v_cache_0 before k_cache_0 has the right dtypes and shapes, so
// a dtype/shape check passes it; bound by position, the copy of k_cache_0 then lands in the
// v_cache_0 buffer and the other way round, and the caches are silently corrupted.
TEST(RepeatedStateOrder, OutOfInputOrderIsRejected) {
  test::TempDir dir("contract-order");
  const ValidFixture& base = valid_fixture("f32_repeat");
  auto program = Program::load(fixture_path(base));
  ProgramSpec spec = program->spec();
  for (auto& m : spec.methods) std::swap(m.outputs[7], m.outputs[8]);  // L = 2: k_cache_0_out <-> v_cache_0_out
  const std::string path = dir.file("swapped.hfs");
  write_with_spec(*program, spec, path);
  auto swapped = Program::load(path);

  const std::vector<std::string> v = hf_static_v1_violations(*swapped);
  EXPECT_THAT(v, testing::Contains(testing::HasSubstr("method 'prefill' output 7 (repeated k_cache of layer 0)")));
  if (v.empty()) {
    // What happens instead: it loads and generates other tokens than the reference.
    auto io = IOManagerRegistry::instance().load(swapped);
    std::vector<int64_t> got = greedy_generate(*io, base.prompt, base.greedy_count());
    EXPECT_EQ(got, reference_greedy(base.preset, base.prompt, base.greedy_count(), base.graph.cache_dtype))
        << "the swapped program loaded and corrupted the caches";
  }
}

}  // namespace
}  // namespace hfstatic::contract
