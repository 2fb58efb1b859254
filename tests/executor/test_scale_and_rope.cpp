// The scale op and the rope op's rotary_dim, inv_freq and attention_factor attributes, against
// values computed here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "executor/method.h"
#include "graph_test.h"

namespace hfstatic {
namespace {

using testing::HasSubstr;

class ScaleAndRope : public GraphTest {};

TEST_F(ScaleAndRope, ScaleMultipliesEveryValue) {
  Graph g;
  g.in("x", DType::F32, {1, 3, 5}).val("y", DType::F32, {1, 3, 5});
  g.node("scale", {"x"}, {"y"}, {{"factor", -0.25}}).out("y", "y", OutputMemory::Planned);
  Execution ex(load(g));
  std::vector<float> x = iota(15, -3.0f, 0.5f);
  ex.bind_input(0, x.data());
  ASSERT_TRUE(ex.run().ok());
  const float* y = static_cast<const float*>(ex.output_data(0));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], (-3.0f + 0.5f * float(i)) * -0.25f) << "element " << i;
}

TEST_F(ScaleAndRope, ScaleIsRowWise) {
  // Only the wanted rows of a scaled output are computed.
  const int64_t T = 4, N = 3;
  Graph g;
  g.in("x", DType::F32, {1, T, N}).val("y", DType::F32, {1, T, N});
  g.node("scale", {"x"}, {"y"}, {{"factor", 3}}).out("y", "y", OutputMemory::Planned);
  Execution ex(load(g));
  std::vector<float> x = iota(size_t(T * N), 1.0f, 1.0f);
  ex.bind_input(0, x.data());
  float* y = static_cast<float*>(ex.output_data(0));
  std::fill_n(y, T * N, -1.0f);
  ex.set_output_rows(0, 1, 2);
  ASSERT_TRUE(ex.run().ok());
  for (int64_t i = 0; i < T * N; ++i) EXPECT_EQ(y[i], i / N == 1 ? 3.0f * float(i + 1) : -1.0f) << "element " << i;
}

TEST_F(ScaleAndRope, ScaleChecksItsInputAndFactor) {
  Graph g;
  g.in("x", DType::F32, {1, 2, 4}).val("y", DType::F32, {1, 2, 4});
  g.node("scale", {"x"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (scale): attribute 'factor' is missing"));
  g.m.nodes[0].attrs = {{"factor", "two"}};
  EXPECT_THAT(load_error(g), HasSubstr("attribute 'factor' must be a number"));
  g.m.nodes[0].attrs = {{"factor", 1e300}};
  EXPECT_THAT(load_error(g), HasSubstr("attribute 'factor' = 1e+300 is outside"));
  Graph h;
  h.in("x", DType::I64, {1, 2, 4}).val("y", DType::I64, {1, 2, 4});
  h.node("scale", {"x"}, {"y"}, {{"factor", 2}}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(h), HasSubstr("input 0 'x' (int64 [1, 2, 4]) must be float32"));
  Graph two;
  two.in("x", DType::F32, {1, 2, 4}).val("y", DType::F32, {1, 2, 4});
  two.node("scale", {"x", "x"}, {"y"}, {{"factor", 2}}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(two), HasSubstr("takes 1 inputs, got 2"));
}

// rope with head_dim 6, rotary_dim 4, listed frequencies and a factor: each head's pairs (0, 2)
// and (1, 3) rotate, values 4 and 5 pass.
TEST_F(ScaleAndRope, RopeRotatesTheLeadingRotaryDimsWithListedFrequenciesAndFactor) {
  const int64_t T = 3, heads = 2, D = 6;
  const std::vector<double> inv = {0.7, 0.05};
  const double factor = 1.25;
  Graph g;
  g.in("x", DType::F32, {1, T, heads * D}).in("pos", DType::I64, {1, T}).val("y", DType::F32, {1, T, heads * D});
  g.node("rope", {"x", "pos"}, {"y"},
         {{"head_dim", D}, {"rotary_dim", 4}, {"inv_freq", inv}, {"attention_factor", factor}});
  g.out("y", "y", OutputMemory::Planned);
  Execution ex(load(g));
  std::vector<float> x = iota(size_t(T * heads * D), -2.0f, 0.25f);
  std::vector<int64_t> pos = {0, 5, 17};
  ex.bind_input(0, x.data());
  ex.bind_input(1, pos.data());
  ASSERT_TRUE(ex.run().ok());
  const float* y = static_cast<const float*>(ex.output_data(0));
  for (int64_t r = 0; r < T; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const float* v = x.data() + (r * heads + h) * D;
      const float* o = y + (r * heads + h) * D;
      for (int i = 0; i < 2; ++i) {
        const double c = std::cos(double(pos[r]) * inv[i]) * factor, s = std::sin(double(pos[r]) * inv[i]) * factor;
        EXPECT_NEAR(o[i], v[i] * c - v[i + 2] * s, 1e-5) << "row " << r << " head " << h << " value " << i;
        EXPECT_NEAR(o[i + 2], v[i + 2] * c + v[i] * s, 1e-5) << "row " << r << " head " << h << " value " << i + 2;
      }
      EXPECT_EQ(o[4], v[4]);
      EXPECT_EQ(o[5], v[5]);
    }
}

TEST_F(ScaleAndRope, RopeFromThetaOverTheRotaryDims) {
  // Frequencies theta^(-2i / rotary_dim), as Hugging Face computes them for partial rotary.
  const int64_t D = 8;
  Graph g;
  g.in("x", DType::F32, {1, 1, D}).in("pos", DType::I64, {1, 1}).val("y", DType::F32, {1, 1, D});
  g.node("rope", {"x", "pos"}, {"y"}, {{"head_dim", D}, {"rotary_dim", 4}, {"theta", 100.0}});
  g.out("y", "y", OutputMemory::Planned);
  Execution ex(load(g));
  std::vector<float> x = {1, 0, 0, 0, 9, 8, 7, 6};
  std::vector<int64_t> pos = {3};
  ex.bind_input(0, x.data());
  ex.bind_input(1, pos.data());
  ASSERT_TRUE(ex.run().ok());
  const float* y = static_cast<const float*>(ex.output_data(0));
  EXPECT_NEAR(y[0], std::cos(3.0), 1e-6);  // frequency 100^0 = 1
  EXPECT_NEAR(y[2], std::sin(3.0), 1e-6);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(std::vector<float>(y + 4, y + 8), std::vector<float>({9, 8, 7, 6}));
}

TEST_F(ScaleAndRope, RopeAttributeErrors) {
  Graph g;
  g.in("x", DType::F32, {1, 2, 8}).in("pos", DType::I64, {1, 2}).val("y", DType::F32, {1, 2, 8});
  g.node("rope", {"x", "pos"}, {"y"}, {{"head_dim", 8}, {"rotary_dim", 5}, {"theta", 10000.0}});
  g.out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (rope): attribute 'rotary_dim' must be even"));
  g.m.nodes[0].attrs = {{"head_dim", 8}, {"rotary_dim", 10}, {"theta", 10000.0}};
  EXPECT_THAT(load_error(g), HasSubstr("attribute 'rotary_dim' = 10 is outside [2, 8]"));
  g.m.nodes[0].attrs = {{"head_dim", 8}, {"inv_freq", {1.0, 0.5, 0.25}}};
  EXPECT_THAT(load_error(g), HasSubstr("attribute 'inv_freq' must be a list of rotary_dim / 2 = 4 numbers"));
  g.m.nodes[0].attrs = {{"head_dim", 8}, {"inv_freq", {1.0, 0.5, -0.25, 0.1}}};
  EXPECT_THAT(load_error(g), HasSubstr("attribute 'inv_freq' holds -0.25, not a frequency"));
  g.m.nodes[0].attrs = {{"head_dim", 8}, {"inv_freq", {1.0, 0.5, 0.25, 0.1}}, {"scaling", {{"type", "llama3"}}}};
  EXPECT_THAT(load_error(g), HasSubstr("attributes 'inv_freq' and 'scaling' exclude each other"));
  g.m.nodes[0].attrs = {{"head_dim", 8}, {"theta", 10000.0}, {"attention_factor", 0}};
  EXPECT_THAT(load_error(g), HasSubstr("attribute 'attention_factor' = 0 is outside"));
}

}  // namespace
}  // namespace hfstatic
