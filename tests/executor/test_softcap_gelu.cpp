// Gemma 2's soft-capping and the exact GELU: the softcap op (final_logit_softcapping), the
// attention op's softcap attribute (attn_logit_softcapping) and the gelu_mul op, against values
// worked out by hand; and a softcap after a linear keeps the linear on the wanted rows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "executor/method.h"
#include "graph_test.h"

namespace hfstatic {
namespace {

using testing::HasSubstr;

class SoftcapGelu : public GraphTest {};

TEST_F(SoftcapGelu, SoftcapIsCapTimesTanhOfXOverCap) {
  Graph g;
  g.in("x", DType::F32, {1, 2, 3}).val("y", DType::F32, {1, 2, 3});
  g.node("softcap", {"x"}, {"y"}, {{"cap", 3.0}}).out("y", "y", OutputMemory::Planned);
  Execution ex(load(g));
  std::vector<float> x = {0.0f, 3.0f, -6.0f, 30.0f, 1e-3f, -1e30f};
  ex.bind_input(0, x.data());
  ASSERT_TRUE(ex.run().ok());
  const float* y = static_cast<const float*>(ex.output_data(0));
  // 3 tanh(1) = 2.28478246..., 3 tanh(-2) = -2.89208274..., 3 tanh(10) = 2.99999998763...
  const double want[] = {0.0, 2.2847824678672946, -2.8920827402274507, 2.9999999876330783, 9.999999629629647e-4, -3.0};
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6 * (1 + std::fabs(want[i]))) << i;
}

TEST_F(SoftcapGelu, SoftcapChecksItsCap) {
  Graph g;
  g.in("x", DType::F32, {1, 2, 3}).val("y", DType::F32, {1, 2, 3});
  g.node("softcap", {"x"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (softcap): attribute 'cap' is missing"));
  g.m.nodes[0].attrs = {{"cap", 0}};
  EXPECT_THAT(load_error(g), HasSubstr("attribute 'cap' = 0 must be positive"));
  g.m.nodes[0].attrs = {{"cap", -2.0}};
  EXPECT_THAT(load_error(g), HasSubstr("attribute 'cap' = -2 is outside [0, 1e+06]"));
}

// logits = softcap(linear(x)): with rows [1, 3) wanted, both steps run on those rows alone (the
// others keep the caller's sentinel), and both are planned as sliceable.
TEST_F(SoftcapGelu, ALinearBeforeASoftcapRunsOnTheWantedRowsOnly) {
  const int64_t T = 5, N = 4, V = 3;
  std::vector<float> w(size_t(V * N));
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 5) - 1.5f;
  Graph g;
  g.in("x", DType::F32, {1, T, N}).weight("w", {V, N}, w);
  g.val("raw", DType::F32, {1, T, V}).val("logits", DType::F32, {1, T, V});
  g.node("linear", {"x", "w"}, {"raw"});
  g.node("softcap", {"raw"}, {"logits"}, {{"cap", 2.0}});
  g.out("logits", "logits", OutputMemory::Planned);
  auto method = load(g);
  ASSERT_EQ(method->step_plans().size(), 2u);
  EXPECT_TRUE(method->step_plans()[0].sliceable);
  EXPECT_TRUE(method->step_plans()[1].sliceable);
  Execution ex(method);
  std::vector<float> x = iota(size_t(T * N), -1.0f, 0.1f);
  ex.bind_input(0, x.data());
  float* y = static_cast<float*>(ex.output_data(0));
  std::fill_n(y, T * V, 77.0f);
  ex.set_output_rows(0, 1, 3);
  ASSERT_TRUE(ex.run().ok());
  for (int64_t r = 0; r < T; ++r)
    for (int64_t v = 0; v < V; ++v) {
      double dot = 0;
      for (int64_t i = 0; i < N; ++i) dot += double(x[size_t(r * N + i)]) * w[size_t(v * N + i)];
      const float got = y[r * V + v];
      if (r >= 1 && r < 3)
        EXPECT_NEAR(got, 2.0 * std::tanh(dot / 2.0), 1e-5) << "row " << r;
      else
        EXPECT_EQ(got, 77.0f) << "row " << r << " was computed";
    }
  // The linear's output read by another output too: the linear must run on every row.
  g.out("raw", "raw", OutputMemory::Planned);
  auto both = load(g);
  EXPECT_FALSE(both->step_plans()[0].sliceable);
  EXPECT_TRUE(both->step_plans()[1].sliceable);
}

// One query (1, 0) over the keys (4, 0) and (0, 0), values (1, 0) and (0, 1), scale 1: capped at
// 2 the scores are 2 tanh(2) and 0; without a cap, 4 and 0.
TEST_F(SoftcapGelu, AttentionCapsItsScoresWithTheSoftcapAttribute) {
  auto run = [&](const json& attrs) {
    Graph g;
    g.in("q", DType::F32, {1, 1, 2}).in("kc", DType::F32, {1, 1, 2, 2}).in("vc", DType::F32, {1, 1, 2, 2});
    g.in("mask", DType::F32, {1, 1, 1, 2}).val("a", DType::F32, {1, 1, 2});
    g.node("attention", {"q", "kc", "vc", "mask"}, {"a"}, attrs).out("a", "a", OutputMemory::Planned);
    Execution ex(load(g));
    std::vector<float> q = {1, 0}, kc = {4, 0, 0, 0}, vc = {1, 0, 0, 1}, mask = {0, 0};
    ex.bind_input(0, q.data());
    ex.bind_input(1, kc.data());
    ex.bind_input(2, vc.data());
    ex.bind_input(3, mask.data());
    EXPECT_TRUE(ex.run().ok());
    return static_cast<const float*>(ex.output_data(0))[0];
  };
  EXPECT_NEAR(run({{"n_heads", 1}, {"scale", 1.0}, {"softcap", 2.0}}), 1 / (1 + std::exp(-2 * std::tanh(2.0))), 1e-6);
  EXPECT_NEAR(run({{"n_heads", 1}, {"scale", 1.0}}), 1 / (1 + std::exp(-4.0)), 1e-6);
  EXPECT_NEAR(run({{"n_heads", 1}, {"scale", 1.0}, {"softcap", 0}}), 1 / (1 + std::exp(-4.0)), 1e-6);
  Graph g;
  g.in("q", DType::F32, {1, 1, 2}).in("kc", DType::F32, {1, 1, 2, 2}).in("vc", DType::F32, {1, 1, 2, 2});
  g.in("mask", DType::F32, {1, 1, 1, 2}).val("a", DType::F32, {1, 1, 2});
  g.node("attention", {"q", "kc", "vc", "mask"}, {"a"}, {{"n_heads", 1}, {"softcap", -1}});
  g.out("a", "a", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (attention): attribute 'softcap' = -1 is outside [0, 1e+06]"));
}

// gelu(g) * u with the exact GELU: gelu(1) = Phi(1) = 0.8413447460685429, gelu(-1) = -0.15865525...,
// against the tanh approximation's 0.8411919906082768 at 1.
TEST_F(SoftcapGelu, GeluMulIsTheExactGelu) {
  Graph g;
  g.in("g", DType::F32, {1, 1, 4}).in("u", DType::F32, {1, 1, 4}).val("y", DType::F32, {1, 1, 4});
  g.node("gelu_mul", {"g", "u"}, {"y"}).out("y", "y", OutputMemory::Planned);
  Execution ex(load(g));
  std::vector<float> gate = {1.0f, -1.0f, 0.0f, 3.0f}, up = {1.0f, 2.0f, 5.0f, -1.0f};
  ex.bind_input(0, gate.data());
  ex.bind_input(1, up.data());
  ASSERT_TRUE(ex.run().ok());
  const float* y = static_cast<const float*>(ex.output_data(0));
  const double want[] = {0.8413447460685429, -2 * 0.15865525393145707, 0.0, -3 * 0.9986501019683699};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(y[i], want[i], 1e-6) << i;
  EXPECT_GT(std::fabs(y[0] - 0.8411919906082768), 1e-4);  // not the tanh approximation
}

}  // namespace
}  // namespace hfstatic
