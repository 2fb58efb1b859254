// Batched decode: IOManager::decode_batch steps several sequences of one program together, and
// each comes out bit for bit as its own decode step. Every family preset, float32 and float16
// caches, float, int8 and int4 weights, one and two threads; batches of 1 to 5 sequences at
// different positions over consecutive steps, sequences joining and leaving between them: the
// logits, every cache slot and every counter against the same steps run alone. Then the
// batches it refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
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
constexpr size_t kSequences = 5;

std::unique_ptr<IOManager> load(const std::shared_ptr<const Program>& program, const RuntimeOptions& runtime = {}) {
  return IOManagerRegistry::instance().load(program, HeapAllocator::instance(), runtime);
}

// The logits and every state buffer of `got` equal to `want`'s, byte for byte.
void expect_same(IOManager& got, IOManager& want, const std::string& what) {
  const auto g = got.logits(), w = want.logits();
  ASSERT_EQ(g.size(), w.size());
  ASSERT_EQ(std::memcmp(g.data(), w.data(), w.size_bytes()), 0) << what << ": logits differ";
  auto& hg = dynamic_cast<HfStaticIOManager&>(got);
  auto& hw = dynamic_cast<HfStaticIOManager&>(want);
  ASSERT_EQ(hg.state_count(), hw.state_count());
  for (size_t i = 0; i < hg.state_count(); ++i) {
    ASSERT_EQ(hg.state_buffer_bytes(i), hw.state_buffer_bytes(i));
    ASSERT_EQ(std::memcmp(hg.state_buffer(i), hw.state_buffer(i), hg.state_buffer_bytes(i)), 0)
        << what << ": state " << i << " differs";
  }
}

class DecodeBatch : public testing::TestWithParam<std::string> {
 protected:
  test::TempDir dir{"decode-batch"};
  const size_t shortfalls_before = kernels::Workspace::total_shortfalls();

  // A batch of B rows asked for no more scratch than run_batch reserved for it.
  void TearDown() override {
    EXPECT_EQ(kernels::Workspace::total_shortfalls(), shortfalls_before)
        << "a kernel asked for scratch that its plan did not declare";
  }
};

TEST_P(DecodeBatch, EachSequenceIsBitIdenticalToItsOwnDecodeStep) {
  ThreadPool pool(2);
  // Which sequences decode at each step, in batch order: 5, 3, 4, 2, 1 and 5 again, the lead
  // (the first) changing.
  const std::vector<std::vector<size_t>> steps = {{0, 1, 2, 3, 4}, {0, 2, 4}, {1, 2, 3, 4},
                                                  {3, 1},          {2},       {4, 0, 1, 3, 2}};
  for (const Variant& v : kVariants) {
    auto program = test::export_variant(dir, GetParam(), v, T, C);
    for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
      const std::string where = GetParam() + " " + v.name + (threads ? " threads=2" : " threads=1");
      std::vector<std::unique_ptr<IOManager>> batched, alone;
      std::vector<int64_t> next_pos;
      for (size_t s = 0; s < kSequences; ++s) {
        const std::vector<int64_t> prompt = tokens(int64_t(3 + 4 * s), int64_t(s));
        batched.push_back(load(program));
        alone.push_back(load(program));
        ASSERT_TRUE(batched[s]->feed(0, prompt, threads).ok());
        ASSERT_TRUE(alone[s]->feed(0, prompt, threads).ok());
        next_pos.push_back(int64_t(prompt.size()));
      }
      for (size_t k = 0; k < steps.size(); ++k) {
        std::vector<IOManager*> ios;
        std::vector<int64_t> positions, toks;
        for (size_t s : steps[k]) {
          ios.push_back(batched[s].get());
          positions.push_back(next_pos[s]);
          toks.push_back((int64_t(s) * 13 + int64_t(k) * 5) % 250 + 1);
        }
        ASSERT_TRUE(IOManager::decode_batch(ios, positions, toks, threads).ok()) << where << " step " << k;
        for (size_t j = 0; j < steps[k].size(); ++j) {
          const size_t s = steps[k][j];
          ASSERT_TRUE(alone[s]->step(StepKind::Decode, positions[j], std::span(toks).subspan(j, 1), threads).ok());
          expect_same(*batched[s], *alone[s],
                      cat(where, " step ", k, " (batch of ", steps[k].size(), ") sequence ", s));
          ++next_pos[s];
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, DecodeBatch, testing::ValuesIn(tiny_presets()), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

// The batches decode_batch refuses, each before anything runs: the managers keep the logits of
// their last step.
TEST(DecodeBatchErrors, RefusedBatchesRunNothing) {
  test::TempDir dir("decode-batch-errors");
  auto program = test::export_variant(dir, "tiny", kVariants[0], T, C);
  auto other_program = test::export_variant(dir, "tiny", kVariants[2], T, C);
  RuntimeOptions unfolded;
  unfolded.fold_ops = false;
  auto a = load(program), b = load(program), other = load(other_program), b_unfolded = load(program, unfolded);
  for (IOManager* io : {a.get(), b.get(), other.get(), b_unfolded.get()}) ASSERT_TRUE(io->feed(0, tokens(4, 1)).ok());
  const std::vector<float> before(a->logits().begin(), a->logits().end());
  auto refusal = [&](std::vector<IOManager*> ios, std::vector<int64_t> positions, std::vector<int64_t> toks) {
    return test::error_of([&] { (void)IOManager::decode_batch(ios, positions, toks); });
  };
  using testing::HasSubstr;
  EXPECT_THAT(refusal({a.get(), b.get()}, {4}, {1, 2}), HasSubstr("each manager takes one of each"));
  EXPECT_THAT(refusal({a.get(), a.get()}, {4, 4}, {1, 2}), HasSubstr("execution 1 of the batch is execution 0 again"));
  EXPECT_THAT(refusal({a.get(), nullptr}, {4, 4}, {1, 2}), HasSubstr("manager 1 is null"));
  EXPECT_THAT(refusal({a.get(), other.get()}, {4, 4}, {1, 2}),
              HasSubstr("a batch runs one method of one loaded program"));
  EXPECT_THAT(refusal({a.get(), b_unfolded.get()}, {4, 4}, {1, 2}), HasSubstr("loaded with other options"));
  EXPECT_THAT(refusal({a.get(), b.get()}, {4, C}, {1, 2}),
              HasSubstr("manager 1: decode step at start_pos 48 does not fit"));
  EXPECT_THAT(refusal({a.get(), b.get()}, {-1, 4}, {1, 2}), HasSubstr("manager 0: decode step at start_pos -1"));
  EXPECT_THAT(refusal({a.get(), b.get()}, {4, 4}, {1, 100000}), HasSubstr("manager 1: token id 100000 is outside"));
  ASSERT_EQ(a->logits().size(), before.size());
  EXPECT_EQ(std::memcmp(a->logits().data(), before.data(), before.size() * sizeof(float)), 0);
  // An empty batch runs nothing.
  EXPECT_TRUE(IOManager::decode_batch({}, {}, {}).ok());
}

}  // namespace
}  // namespace hfstatic
