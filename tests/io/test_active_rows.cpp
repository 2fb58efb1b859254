// Active rows: a prefill step computes only the real rows the IOManager planned, and for them
// it is bit for bit the run of the whole chunk; a step verifying drafted tokens is bit for bit
// the decode steps of those tokens. Every family preset, float32 and float16
// caches, float, int8 and int4 weights, repeated state, n = 1, 2, 7, T - 1 and T real rows, a
// continuation after them and a tail routed through decode: the logits, every cache slot and
// every counter of a run on active rows against the same steps run on the whole chunk.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "export/exporter.h"
#include "export/make_checkpoint.h"
#include "io/hf_static_io_manager.h"
#include "kernels/scratch.h"
#include "kernels/thread_pool.h"
#include "preset_variants.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using test::kVariants;
using test::tiny_presets;
using test::tokens;
using test::Variant;

constexpr int64_t T = 16, C = 48;  // prefill_len, max_context

class ActiveRows : public testing::TestWithParam<std::string> {
 protected:
  test::TempDir dir{"active-rows"};
  const size_t shortfalls_before = kernels::Workspace::total_shortfalls();

  // Every kernel asked for no more scratch than its step's plan declared (Method::step_plans):
  // the runs below cover prefill on any number of active rows, the logits' wanted rows, decode
  // and verification on decode's kernel variants.
  void TearDown() override {
    EXPECT_EQ(kernels::Workspace::total_shortfalls(), shortfalls_before)
        << "a kernel asked for scratch that its plan did not declare";
  }

  // The parameter's preset exported as `v`.
  std::shared_ptr<const Program> export_variant(const Variant& v) {
    return test::export_variant(dir, GetParam(), v, T, C);
  }

  static std::unique_ptr<IOManager> load(const std::shared_ptr<const Program>& program, bool active) {
    RuntimeOptions runtime;
    runtime.active_rows = active;
    return IOManagerRegistry::instance().load(program, HeapAllocator::instance(), runtime);
  }

  // The same feed on both; then logits and state must be identical.
  static void feed_both(IOManager& active, IOManager& full, int64_t start, const std::vector<int64_t>& prompt,
                        ThreadPool* pool, const std::string& what) {
    ASSERT_TRUE(active.feed(start, prompt, pool).ok()) << what;
    ASSERT_TRUE(full.feed(start, prompt, pool).ok()) << what;
    const auto a = active.logits(), f = full.logits();
    ASSERT_EQ(a.size(), f.size());
    ASSERT_EQ(std::memcmp(a.data(), f.data(), a.size_bytes()), 0) << what << ": logits differ";
    auto& ha = dynamic_cast<HfStaticIOManager&>(active);
    auto& hf = dynamic_cast<HfStaticIOManager&>(full);
    for (size_t i = 0; i < ha.state_count(); ++i) {
      ASSERT_EQ(ha.state_buffer_bytes(i), hf.state_buffer_bytes(i));
      ASSERT_EQ(std::memcmp(ha.state_buffer(i), hf.state_buffer(i), ha.state_buffer_bytes(i)), 0)
          << what << ": state " << i << " differs";
    }
  }
};

TEST_P(ActiveRows, RealRowsAreBitIdenticalToTheWholeChunk) {
  ThreadPool pool(2);
  for (const Variant& v : kVariants) {
    auto program = export_variant(v);
    for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool})
      for (int64_t n : {int64_t(1), int64_t(2), int64_t(7), T - 1, T}) {
        const std::string what =
            GetParam() + " " + v.name + " n=" + std::to_string(n) + (threads ? " threads=2" : " threads=1");
        auto active = load(program, true), full = load(program, false);
        // The prompt, a continuation in the next chunk, then a tail no prefill fits (decode).
        feed_both(*active, *full, 0, tokens(n, n), threads, what + " prompt");
        feed_both(*active, *full, n, tokens(n % 5 + 3, n + 1), threads, what + " continuation");
        feed_both(*active, *full, C - 5, tokens(5, n + 2), threads, what + " tail");
      }
  }
}

// verify() of drafted tokens against decode steps of the same tokens: each row's logits bit for
// bit the decode step's, then a rollback (a decode step at a position verify() already filled)
// equal to decoding there directly; no verify() where a padded prefill does not fit.
TEST_P(ActiveRows, VerifiedRowsAreTheDecodeSteps) {
  ThreadPool pool(2);
  for (const Variant& v : kVariants) {
    auto program = export_variant(v);
    for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool})
      for (int64_t k : {int64_t(1), int64_t(5), T}) {
        const std::string what =
            GetParam() + " " + v.name + " k=" + std::to_string(k) + (threads ? " threads=2" : " threads=1");
        auto verifier = load(program, true), decoder = load(program, true);
        const std::vector<int64_t> prompt = tokens(10, k), drafts = tokens(k, k + 7);
        ASSERT_TRUE(verifier->feed(0, prompt, threads).ok());
        ASSERT_TRUE(decoder->feed(0, prompt, threads).ok());
        ASSERT_EQ(verifier->verify_capacity(10), T);
        ASSERT_TRUE(verifier->verify(10, drafts, threads).ok()) << what;
        for (int64_t i = 0; i < k; ++i) {
          ASSERT_TRUE(decoder->step(StepKind::Decode, 10 + i, std::span(drafts).subspan(size_t(i), 1), threads).ok());
          const auto got = verifier->row_logits(i), want = decoder->logits();
          ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size_bytes()), 0) << what << ": row " << i;
        }
        // Only the first draft kept: decode another token at 11, over the rejected rows' slots.
        const std::vector<int64_t> other = {77};
        auto direct = load(program, true);
        ASSERT_TRUE(direct->feed(0, prompt, threads).ok());
        ASSERT_TRUE(direct->step(StepKind::Decode, 10, std::span(drafts).subspan(0, 1), threads).ok());
        ASSERT_TRUE(direct->step(StepKind::Decode, 11, other, threads).ok());
        ASSERT_TRUE(verifier->step(StepKind::Decode, 11, other, threads).ok());
        ASSERT_EQ(std::memcmp(verifier->logits().data(), direct->logits().data(), direct->logits().size_bytes()), 0)
            << what << ": after the rollback";
      }
    auto io = load(program, true);
    EXPECT_EQ(io->verify_capacity(C - T + 1), 0);
    EXPECT_THROW(io->verify(C - T + 1, tokens(2, 1)), Error);
  }
}

// row_logits: every real row of a step after set_all_logits(true), each that of the prompt cut
// after it; without it, the last row only and an error naming the switch for the others.
TEST(RowLogits, EveryRowWhenKeptTheLastRowOtherwise) {
  test::TempDir dir("row-logits");
  ExportOptions o;
  o.graph.prefill_len = T;
  o.graph.max_context = C;
  const std::string path = dir.file("tiny.hfs");
  export_program(test::cached_checkpoint("tiny", 3), path, o);
  auto program = Program::load(path);
  const std::vector<int64_t> prompt = tokens(7, 4);

  auto last_only = IOManagerRegistry::instance().load(program);
  ASSERT_TRUE(last_only->feed(0, prompt).ok());
  const auto last = last_only->row_logits(6), want_last = last_only->logits();
  EXPECT_EQ(std::memcmp(last.data(), want_last.data(), last.size_bytes()), 0);
  EXPECT_THAT(test::error_of([&] { last_only->row_logits(0); }), testing::HasSubstr("set_all_logits(true)"));
  EXPECT_THAT(test::error_of([&] { last_only->row_logits(7); }), testing::HasSubstr("ran 7 rows"));

  auto all = IOManagerRegistry::instance().load(program);
  all->set_all_logits(true);
  ASSERT_TRUE(all->feed(0, prompt).ok());
  for (int64_t i = 0; i < 7; ++i) {
    auto cut = IOManagerRegistry::instance().load(program);
    ASSERT_TRUE(cut->feed(0, std::span(prompt).first(size_t(i) + 1)).ok());
    const auto got = all->row_logits(i), want = cut->logits();
    float scale = 0, worst = 0;
    for (size_t j = 0; j < want.size(); ++j) {
      scale = std::max(scale, std::abs(want[j]));
      worst = std::max(worst, std::abs(got[j] - want[j]));
    }
    EXPECT_LE(worst, 1e-4f * scale) << "row " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, ActiveRows, testing::ValuesIn(tiny_presets()), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

}  // namespace
}  // namespace hfstatic
