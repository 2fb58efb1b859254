// The inputs the hf_static IOManager writes before each step (docs/hf_static-v1.md, "One
// step"), read back from the buffers the method is bound to: every row of tokens, positions
// and mask, and the counters after the step, for a full prefill, a padded prefill, a prompt
// tail routed through decode and a decode step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "io/hf_static_io_manager.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using hf_static::StateRole;

constexpr int64_t T = 4, C = 10;  // prefill_len, max_context

class StepBuffers : public testing::Test {
 protected:
  void SetUp() override {
    GraphOptions g;
    g.prefill_len = T;
    g.max_context = C;
    auto program = Program::load(test::export_to(test::cached_checkpoint("tiny", 6), dir.file("p.hfs"), g));
    io = IOManagerRegistry::instance().load(program);
    hf = dynamic_cast<HfStaticIOManager*>(io.get());
    ASSERT_NE(hf, nullptr);
  }

  template <typename E>
  const E* input(StepKind kind, size_t index) const {
    return static_cast<const E*>(hf->execution(kind).input_data(index));
  }

  // Every row of the last step of `kind`: `tokens` real rows at start_pos, then padding.
  void expect_step_inputs(StepKind kind, int64_t start_pos, const std::vector<int64_t>& tokens) const {
    const int64_t rows = kind == StepKind::Prefill ? T : 1, n = int64_t(tokens.size());
    const int64_t* tok = input<int64_t>(kind, hf_static::kTokensInput);
    const int64_t* pos = input<int64_t>(kind, hf_static::kPositionsInput);
    const float* mask = input<float>(kind, hf_static::kMaskInput);
    ASSERT_TRUE(tok && pos && mask) << "the step's inputs are not bound";
    for (int64_t i = 0; i < rows; ++i) {
      SCOPED_TRACE(cat(step_kind_name(kind), " at ", start_pos, ", row ", i, i < n ? " (real)" : " (padding)"));
      const bool real = i < n;
      // Real rows: their token and position start_pos + i, and every slot up to their own.
      // Padding rows: token 0, position 0, and nothing visible.
      EXPECT_EQ(tok[i], real ? tokens[size_t(i)] : 0);
      EXPECT_EQ(pos[i], real ? start_pos + i : 0);
      const int64_t visible = real ? start_pos + i + 1 : 0;
      for (int64_t c = 0; c < C; ++c) {
        const float m = mask[i * C + c];
        if (c < visible)
          EXPECT_EQ(m, 0.0f) << "column " << c << " must be visible";
        else
          EXPECT_TRUE(std::isinf(m) && m < 0) << "column " << c << " must be -inf, is " << m;
      }
    }
  }

  void expect_counters(int64_t value) const {
    for (int64_t l = 0; l < io->model().n_layers; ++l)
      EXPECT_EQ(*static_cast<const int64_t*>(hf->state_buffer(hf_static::state_slot(l, StateRole::Counter))), value)
          << "counter of layer " << l;
  }

  test::TempDir dir{"step-buffers"};
  std::unique_ptr<IOManager> io;
  HfStaticIOManager* hf = nullptr;
};

TEST_F(StepBuffers, FullPrefill) {
  const std::vector<int64_t> tokens = {11, 12, 13, 14};
  ASSERT_TRUE(io->step(StepKind::Prefill, 0, tokens).ok());
  expect_step_inputs(StepKind::Prefill, 0, tokens);
  expect_counters(4);
}

TEST_F(StepBuffers, PaddedPrefill) {
  ASSERT_TRUE(io->step(StepKind::Prefill, 0, std::vector<int64_t>{11, 12, 13, 14}).ok());
  const std::vector<int64_t> tokens = {21, 22};
  ASSERT_TRUE(io->step(StepKind::Prefill, 4, tokens).ok());
  expect_step_inputs(StepKind::Prefill, 4, tokens);
  expect_counters(6);
  // One real row at position 0: the padding rows see nothing at all.
  io->reset();
  ASSERT_TRUE(io->step(StepKind::Prefill, 0, std::vector<int64_t>{31}).ok());
  expect_step_inputs(StepKind::Prefill, 0, {31});
  expect_counters(1);
}

TEST_F(StepBuffers, TailRoutedThroughDecode) {
  ASSERT_TRUE(io->feed(0, std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}).ok());  // prefill 0..3, padded prefill 4..6
  expect_step_inputs(StepKind::Prefill, 4, {5, 6, 7});
  expect_counters(7);
  // At 7 a padded prefill would pass the context (7 + 4 > 10): both tokens go through decode.
  const std::vector<int64_t> tail = {8, 9};
  const std::vector<Step> plan = io->plan(7, tail.size());
  ASSERT_EQ(plan.size(), 2u);
  for (const Step& s : plan) EXPECT_EQ(s.kind, StepKind::Decode);
  ASSERT_TRUE(io->feed(7, tail).ok());
  expect_step_inputs(StepKind::Decode, 8, {9});
  expect_counters(9);
  // The prefill buffers are as the last prefill step left them.
  expect_step_inputs(StepKind::Prefill, 4, {5, 6, 7});
}

TEST_F(StepBuffers, DecodeStep) {
  ASSERT_TRUE(io->feed(0, std::vector<int64_t>{1, 2, 3}).ok());
  expect_counters(3);
  for (int64_t p = 3; p < C; ++p) {
    ASSERT_TRUE(io->step(StepKind::Decode, p, std::vector<int64_t>{40 + p}).ok());
    expect_step_inputs(StepKind::Decode, p, {40 + p});
    expect_counters(p + 1);
  }
  // The last decode step sees every slot of the context.
  EXPECT_EQ(input<float>(StepKind::Decode, hf_static::kMaskInput)[C - 1], 0.0f);
}

TEST_F(StepBuffers, CountersFollowTheStepNotThePreviousOne) {
  ASSERT_TRUE(io->feed(0, std::vector<int64_t>{1, 2, 3, 4, 5}).ok());
  expect_counters(5);
  // Going back (a rewind): the counters are written from the step's start, not left at 5.
  ASSERT_TRUE(io->step(StepKind::Decode, 2, std::vector<int64_t>{50}).ok());
  expect_step_inputs(StepKind::Decode, 2, {50});
  expect_counters(3);
}

// hf_static v2: the local mask next to the mask, written by hand for window 5 ("0" visible,
// "-" -inf), and the state bound from input 4 on.
class LocalMaskBuffers : public testing::Test {
 protected:
  void SetUp() override {
    GraphOptions g;
    g.prefill_len = T;
    g.max_context = C;
    auto program = Program::load(test::export_to(test::cached_checkpoint("tiny-mistral-sw", 6), dir.file("p.hfs"), g));
    ASSERT_EQ(program->metadata()["sliding_window"], 5);
    io = IOManagerRegistry::instance().load(program);
    hf = dynamic_cast<HfStaticIOManager*>(io.get());
    ASSERT_NE(hf, nullptr);
  }
  // The rows of input `index` of the last step of `kind`, as strings of '0' and '-'.
  std::vector<std::string> rows(StepKind kind, size_t index) const {
    const float* m = static_cast<const float*>(hf->execution(kind).input_data(index));
    std::vector<std::string> out;
    for (int64_t r = 0; r < (kind == StepKind::Prefill ? T : 1); ++r) {
      std::string row;
      for (int64_t c = 0; c < C; ++c) row += m[r * C + c] == 0.0f ? '0' : (std::isinf(m[r * C + c]) ? '-' : '?');
      out.push_back(row);
    }
    return out;
  }

  test::TempDir dir{"local-mask-buffers"};
  std::unique_ptr<IOManager> io;
  HfStaticIOManager* hf = nullptr;
};

TEST_F(LocalMaskBuffers, RealRowsSeeTheLastWindowPositionsPaddingNothing) {
  using V = std::vector<std::string>;
  ASSERT_TRUE(io->feed(0, std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}).ok());  // prefill 0..3, padded prefill 4..6
  EXPECT_EQ(rows(StepKind::Prefill, hf_static::kMaskInput),
            (V{"00000-----", "000000----", "0000000---", "----------"}));
  EXPECT_EQ(rows(StepKind::Prefill, hf_static::kLocalMaskInput),
            (V{"00000-----", "-00000----", "--00000---", "----------"}));
  ASSERT_TRUE(io->step(StepKind::Decode, 9, std::vector<int64_t>{8}).ok());
  EXPECT_EQ(rows(StepKind::Decode, hf_static::kMaskInput), V{"0000000000"});
  EXPECT_EQ(rows(StepKind::Decode, hf_static::kLocalMaskInput), V{"-----00000"});
  // Position 1 sees 0 and 1 only: the window starts at 0.
  ASSERT_TRUE(io->step(StepKind::Decode, 1, std::vector<int64_t>{8}).ok());
  EXPECT_EQ(rows(StepKind::Decode, hf_static::kLocalMaskInput), V{"00--------"});
  // The state follows the local mask: k_cache of layer 0 is input 4, bound to state buffer 0.
  EXPECT_EQ(hf->execution(StepKind::Decode).input_data(4), hf->state_buffer(0));
  io->reset();
  EXPECT_EQ(rows(StepKind::Prefill, hf_static::kLocalMaskInput), V(T, "----------"));
}

}  // namespace
}  // namespace hfstatic
