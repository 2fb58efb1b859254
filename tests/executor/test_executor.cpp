// Method execution and arena planning on hand-built programs: values computed independently
// here, steps grouped and folded, only the wanted rows computed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "executor/method.h"
#include "format/program.h"
#include "graph_test.h"
#include "kernels/thread_pool.h"
#include "test_support.h"
#include "util/error.h"

namespace hfstatic {
namespace {

using nlohmann::json;
using testing::AllOf;
using testing::HasSubstr;
using testing::Not;

class Executor : public GraphTest {};

// ---- arena planning ------------------------------------------------------------------------

TEST_F(Executor, TinyPresetArenaReusesMemory) {
  GraphOptions o;
  o.prefill_len = 8;
  o.max_context = 32;
  auto program = Program::load(test::export_to(test::cached_checkpoint("tiny", 2), dir.file("tiny.hfs"), o));
  for (const char* name : {"prefill", "decode"}) {
    SCOPED_TRACE(name);
    auto method = Method::load(program, name);
    uint64_t sum = 0, largest = 0;
    for (const auto& v : method->spec().values) {
      uint64_t b = uint64_t(*shape_numel(v.shape)) * dtype_size(v.dtype);
      sum += b;
      largest = std::max(largest, b);
    }
    EXPECT_GT(method->spec().values.size(), 10u);
    EXPECT_LT(method->arena_bytes(), sum);
    EXPECT_GE(method->arena_bytes(), largest);
    EXPECT_EQ(method->arena_bytes() % 64, 0u);
  }
}

// y = x W^T + b, row-major, in double.
std::vector<double> ref_linear(const std::vector<double>& x, int64_t rows, int64_t in, const std::vector<float>& w,
                               int64_t out, const std::vector<float>* b = nullptr) {
  std::vector<double> y(size_t(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b ? double((*b)[size_t(o)]) : 0.0;
      for (int64_t i = 0; i < in; ++i) s += x[size_t(r * in + i)] * double(w[size_t(o * in + i)]);
      y[size_t(r * out + o)] = s;
    }
  return y;
}
std::vector<double> ref_silu_mul(const std::vector<double>& g, const std::vector<double>& u) {
  std::vector<double> y(g.size());
  for (size_t i = 0; i < g.size(); ++i) y[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return y;
}
std::vector<double> ref_add(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> y(a.size());
  for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[i];
  return y;
}

TEST_F(Executor, ArenaPlanKeepsLiveValuesApart) {
  // A chain where some values die early (their memory can be reused) and others live long.
  const int64_t T = 4, N = 16;
  const Shape A = {1, T, N};
  std::vector<float> w1(N * N), w2(N * N), b1(N);
  for (int64_t i = 0; i < N * N; ++i) {
    w1[size_t(i)] = float(std::sin(0.37 * double(i))) * 0.3f;
    w2[size_t(i)] = float(std::cos(0.11 * double(i))) * 0.25f;
  }
  for (int64_t i = 0; i < N; ++i) b1[size_t(i)] = 0.05f * float(i) - 0.4f;
  Graph g;
  g.in("x", DType::F32, A).weight("w1", {N, N}, w1).weight("w2", {N, N}, w2).weight("b1", {N}, b1);
  for (const char* v : {"a", "b", "c", "d", "e", "f", "h", "i"}) g.val(v, DType::F32, A);
  g.node("linear", {"x", "w1", "b1"}, {"a"});  // a dies at c
  g.node("silu_mul", {"a", "x"}, {"b"});       // b lives until h
  g.node("add", {"a", "b"}, {"c"});            // c dies at e
  g.node("linear", {"c", "w2"}, {"d"});        // d is an output: lives to the end
  g.node("silu_mul", {"d", "c"}, {"e"});
  g.node("add", {"e", "x"}, {"f"});
  g.node("add", {"f", "b"}, {"h"});
  g.node("add", {"h", "h"}, {"i"});
  g.out("d", "d", OutputMemory::Planned).out("i", "i", OutputMemory::Planned).out("b", "b", OutputMemory::Planned);
  auto method = load(g);
  const uint64_t value_bytes = uint64_t(T * N) * 4;
  EXPECT_LT(method->arena_bytes(), 8 * value_bytes) << "intermediates that are dead must share memory";

  Execution ex(method);
  for (int trial = 0; trial < 3; ++trial) {
    SCOPED_TRACE(trial);
    std::vector<float> x(size_t(T * N));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(double(i) * 0.7 + trial)) * (1.0f + float(trial));
    ex.bind_input(0, x.data());
    ASSERT_TRUE(ex.run().ok());

    std::vector<double> xd(x.begin(), x.end());
    auto a = ref_linear(xd, T, N, w1, N, &b1);
    auto b = ref_silu_mul(a, xd);
    auto c = ref_add(a, b);
    auto d = ref_linear(c, T, N, w2, N);
    auto e = ref_silu_mul(d, c);
    auto f = ref_add(e, xd);
    auto h = ref_add(f, b);
    auto i = ref_add(h, h);
    auto compare = [&](size_t out, const std::vector<double>& want, const char* what) {
      const float* got = static_cast<const float*>(ex.output_data(out));
      double worst = 0;
      for (size_t k = 0; k < want.size(); ++k)
        worst = std::max(worst, std::fabs(double(got[k]) - want[k]) / (1.0 + std::fabs(want[k])));
      EXPECT_LT(worst, 1e-5) << what;
    };
    compare(0, d, "d");
    compare(1, i, "i");
    compare(2, b, "b");
  }
  // Planned outputs, all alive at the end, occupy disjoint memory.
  for (size_t p = 0; p < 3; ++p)
    for (size_t q = p + 1; q < 3; ++q) {
      auto lo = static_cast<const uint8_t*>(ex.output_data(p)), hi = static_cast<const uint8_t*>(ex.output_data(q));
      if (lo > hi) std::swap(lo, hi);
      EXPECT_GE(uint64_t(hi - lo), value_bytes) << "outputs " << p << " and " << q << " overlap";
    }
}

TEST_F(Executor, LinearNodesSharingAnInputRunAsOneStep) {
  // Three products of s run as one step and two of a as another. Each output must equal its
  // product computed alone, for decode-like (3) and prefill-like (20) row counts, with and
  // without a thread pool sharing out the group's output features.
  const int64_t N = 16;
  const int64_t outs[] = {130, 8, 70};
  auto weights = [](int64_t rows, int64_t cols, double phase) {
    std::vector<float> v(size_t(rows * cols));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(std::sin(0.3 * double(i) + phase)) * 0.25f;
    return v;
  };
  const std::vector<float> w0 = weights(outs[0], N, 0), w1 = weights(outs[1], N, 1), w2 = weights(outs[2], N, 2);
  const std::vector<float> wa = weights(N, outs[0], 3), wb = weights(5, outs[0], 4), bias = weights(1, outs[1], 5);
  for (int64_t T : {3, 20}) {
    SCOPED_TRACE(T);
    Graph g;
    g.in("x", DType::F32, {1, T, N}).weight("w0", {outs[0], N}, w0).weight("w1", {outs[1], N}, w1);
    g.weight("w2", {outs[2], N}, w2)
        .weight("b1", {outs[1]}, bias)
        .weight("wa", {N, outs[0]}, wa)
        .weight("wb", {5, outs[0]}, wb);
    g.val("s", DType::F32, {1, T, N}).val("a", DType::F32, {1, T, outs[0]}).val("b", DType::F32, {1, T, outs[1]});
    g.val("c", DType::F32, {1, T, outs[2]}).val("d", DType::F32, {1, T, N}).val("e", DType::F32, {1, T, 5});
    g.node("add", {"x", "x"}, {"s"});
    g.node("linear", {"s", "w0"}, {"a"});
    g.node("linear", {"s", "w1", "b1"}, {"b"});
    g.node("linear", {"s", "w2"}, {"c"});
    g.node("linear", {"a", "wa"}, {"d"});
    g.node("linear", {"a", "wb"}, {"e"});
    for (const char* v : {"a", "b", "c", "d", "e"}) g.out(v, v, OutputMemory::Planned);
    auto method = load(g);
    EXPECT_EQ(method->num_nodes(), 6u);
    EXPECT_EQ(method->num_steps(), 3u);

    std::vector<float> x(size_t(T * N));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::cos(0.9 * double(i)));
    std::vector<double> sd(x.size());
    for (size_t i = 0; i < x.size(); ++i) sd[i] = 2.0 * double(x[i]);
    const auto a = ref_linear(sd, T, N, w0, outs[0]);
    const std::vector<std::vector<double>> want = {a, ref_linear(sd, T, N, w1, outs[1], &bias),
                                                   ref_linear(sd, T, N, w2, outs[2]), ref_linear(a, T, outs[0], wa, N),
                                                   ref_linear(a, T, outs[0], wb, 5)};
    // With two threads, the threads waiting at the end of each step prefetch the next group's
    // weights, or not: the results are the same.
    RuntimeOptions no_idle_prefetch;
    no_idle_prefetch.idle_prefetch = false;
    const auto without = load(g, no_idle_prefetch);
    for (auto [threads, idle_prefetch] : {std::pair{1, true}, std::pair{2, true}, std::pair{2, false}}) {
      SCOPED_TRACE(cat(threads, " threads, idle prefetch ", idle_prefetch));
      ThreadPool pool(threads);
      Execution ex(idle_prefetch ? method : without);
      ex.bind_input(0, x.data());
      const bool ran = ex.run(&pool).ok() && ex.run(&pool).ok();
      ASSERT_TRUE(ran);
      for (size_t o = 0; o < want.size(); ++o) {
        const float* got = static_cast<const float*>(ex.output_data(o));
        for (size_t k = 0; k < want[o].size(); ++k)
          ASSERT_NEAR(got[k], want[o][k], 1e-5 * (1.0 + std::fabs(want[o][k]))) << "output " << o << " at " << k;
      }
    }
  }
}

TEST_F(Executor, OnlyTheWantedRowsOfAnOutputAreComputed) {
  // y = linear(rms_norm(x)): with rows [2, 4) of y wanted, the linear runs on those rows alone
  // and the other rows keep what the caller left there.
  const int64_t T = 6, N = 8, O = 5;
  std::vector<float> w(size_t(O * N)), norm(size_t(N), 1.0f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(std::sin(0.5 * double(i))) * 0.3f;
  Graph g;
  g.in("x", DType::F32, {1, T, N}).weight("w", {O, N}, w).weight("g", {N}, norm);
  g.val("h", DType::F32, {1, T, N}).val("y", DType::F32, {1, T, O});
  g.node("rms_norm", {"x", "g"}, {"h"}, {{"eps", 1e-6}});
  g.node("linear", {"h", "w"}, {"y"});
  g.out("y", "y", OutputMemory::Planned);
  auto method = load(g);
  EXPECT_EQ(method->num_folded_steps(), 1u);  // the norm is computed as the linear reads its rows
  Execution ex(method);
  std::vector<float> x(size_t(T * N));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::cos(0.37 * double(i))) + 0.1f;
  ex.bind_input(0, x.data());
  std::vector<double> h(x.size());
  for (int64_t r = 0; r < T; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < N; ++i) ss += double(x[size_t(r * N + i)]) * x[size_t(r * N + i)];
    for (int64_t i = 0; i < N; ++i) h[size_t(r * N + i)] = x[size_t(r * N + i)] / std::sqrt(ss / N + 1e-6);
  }
  const std::vector<double> want = ref_linear(h, T, N, w, O);
  float* y = static_cast<float*>(ex.output_data(0));
  const float sentinel = 12345.0f;

  ex.set_output_rows(0, 2, 4);
  std::fill_n(y, T * O, sentinel);
  ASSERT_TRUE(ex.run().ok());
  for (int64_t r = 0; r < T; ++r)
    for (int64_t o = 0; o < O; ++o) {
      const float got = y[r * O + o];
      if (r >= 2 && r < 4)
        EXPECT_NEAR(got, want[size_t(r * O + o)], 1e-5) << "row " << r;
      else
        EXPECT_EQ(got, sentinel) << "row " << r << " was computed";
    }

  ex.set_output_rows(0, 0, T);  // all rows again
  std::fill_n(y, T * O, sentinel);
  ASSERT_TRUE(ex.run().ok());
  for (int64_t k = 0; k < T * O; ++k) EXPECT_NEAR(y[k], want[size_t(k)], 1e-5) << "element " << k;

  EXPECT_THAT(error_of([&] { ex.set_output_rows(0, 3, 3); }), HasSubstr("output 0 'y': rows [3, 3)"));
  EXPECT_THAT(error_of([&] { ex.set_output_rows(0, 0, T + 1); }), HasSubstr("within its 6 rows"));
  EXPECT_THAT(error_of([&] { ex.set_output_rows(1, 0, 1); }), HasSubstr("output index 1 out of range"));
}

TEST_F(Executor, ActiveRowsAreComputedAsInTheWholeRunAndNoOthers) {
  // y = linear(rms_norm(x)) + x on 3 active rows of 6: rows 0-2 bit for bit those of a run of
  // all rows (gemm's variant, though three rows alone would take the matrix-vector one), rows
  // 3-5 untouched; rows wanted of y within the active ones still cut the linear further.
  const int64_t T = 6, N = 40, n = 3;
  std::vector<float> w(size_t(N * N)), norm(size_t(N), 1.0f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(std::sin(0.5 * double(i))) * 0.3f;
  Graph g;
  g.in("x", DType::F32, {1, T, N}).weight("w", {N, N}, w).weight("g", {N}, norm);
  g.val("h", DType::F32, {1, T, N}).val("l", DType::F32, {1, T, N}).val("y", DType::F32, {1, T, N});
  g.node("rms_norm", {"x", "g"}, {"h"}, {{"eps", 1e-6}});
  g.node("linear", {"h", "w"}, {"l"});
  g.node("add", {"l", "x"}, {"y"});
  g.out("y", "y", OutputMemory::Unplanned);
  auto method = load(g);
  EXPECT_EQ(method->rows(), T);
  std::vector<float> x(size_t(T * N));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::cos(0.37 * double(i))) + 0.1f;
  std::vector<float> whole(size_t(T * N)), part(size_t(T * N), 12345.0f);
  Execution all(method), active(method);
  all.bind_input(0, x.data());
  all.bind_output(0, whole.data());
  ASSERT_TRUE(all.run().ok());
  active.bind_input(0, x.data());
  active.bind_output(0, part.data());
  active.set_active_rows(n);
  ASSERT_TRUE(active.run().ok());
  for (int64_t i = 0; i < T * N; ++i) {
    if (i < n * N)
      ASSERT_EQ(part[size_t(i)], whole[size_t(i)]) << "element " << i;
    else
      ASSERT_EQ(part[size_t(i)], 12345.0f) << "element " << i << " past the active rows was computed";
  }
  EXPECT_THAT(error_of([&] { active.set_active_rows(0); }), HasSubstr("0 active rows are not within its 6 rows"));
  EXPECT_THAT(error_of([&] { active.set_active_rows(T + 1); }), HasSubstr("7 active rows"));

  Graph no_rows;  // a copy has no row operands
  no_rows.in("x", DType::F32, {1, T, N}).val("y", DType::F32, {1, T, N});
  no_rows.node("copy", {"x"}, {"y"});
  no_rows.out("y", "y", OutputMemory::Planned);
  Execution copy(load(no_rows));
  EXPECT_THAT(error_of([&] { copy.set_active_rows(1); }), HasSubstr("has no token axis"));
}

TEST_F(Executor, NormAndSiluMulFoldIntoTheLinearsOnlyWhenNothingElseReadsThem) {
  // h = rms_norm(x); a, b = linear(h); s = silu_mul(a, b); y = linear(s). Both ops fold into
  // the linears after them, unless h or s is also a method output or read by another node; the
  // results are the same every way, for matrix-vector (3) and matrix-multiply (40) row counts.
  const int64_t N = 70, F = 29, O = 13;
  auto weights = [](int64_t n, double phase) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(std::sin(0.7 * double(i) + phase)) * 0.2f;
    return v;
  };
  const std::vector<float> norm = weights(N, 1), w1 = weights(F * N, 2), w2 = weights(F * N, 3), w3 = weights(O * F, 4);
  for (int64_t T : {3, 40})
    for (int variant = 0; variant < 4; ++variant) {  // plain, h an output, s an output, s read by an add
      SCOPED_TRACE(cat("T = ", T, ", variant ", variant));
      Graph g;
      g.in("x", DType::F32, {1, T, N}).weight("g", {N}, norm).weight("w1", {F, N}, w1).weight("w2", {F, N}, w2);
      g.weight("w3", {O, F}, w3);
      g.val("h", DType::F32, {1, T, N}).val("a", DType::F32, {1, T, F}).val("b", DType::F32, {1, T, F});
      g.val("s", DType::F32, {1, T, F}).val("y", DType::F32, {1, T, O});
      g.node("rms_norm", {"x", "g"}, {"h"}, {{"eps", 1e-5}});
      g.node("linear", {"h", "w1"}, {"a"}).node("linear", {"h", "w2"}, {"b"});
      g.node("silu_mul", {"a", "b"}, {"s"}).node("linear", {"s", "w3"}, {"y"});
      g.out("y", "y", OutputMemory::Planned);
      if (variant == 1) g.out("h", "h", OutputMemory::Planned);
      if (variant == 2) g.out("s", "s", OutputMemory::Planned);
      if (variant == 3)
        g.val("z", DType::F32, {1, T, F}).node("add", {"s", "s"}, {"z"}).out("z", "z", OutputMemory::Planned);
      auto method = load(g);
      EXPECT_EQ(method->num_folded_steps(), variant == 0 ? 2u : 1u);

      std::vector<float> x(size_t(T * N));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::cos(0.37 * double(i))) * 2.0f;
      std::vector<double> h(x.size());
      for (int64_t r = 0; r < T; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < N; ++i) ss += double(x[size_t(r * N + i)]) * x[size_t(r * N + i)];
        for (int64_t i = 0; i < N; ++i)
          h[size_t(r * N + i)] = x[size_t(r * N + i)] / std::sqrt(ss / N + 1e-5) * norm[size_t(i)];
      }
      const std::vector<double> s_want = ref_silu_mul(ref_linear(h, T, N, w1, F), ref_linear(h, T, N, w2, F));
      const std::vector<double> y_want = ref_linear(s_want, T, F, w3, O);
      Execution ex(method);
      ex.bind_input(0, x.data());
      ThreadPool pool(2);
      ASSERT_TRUE(ex.run(&pool).ok());
      auto expect_values = [&](size_t output, const std::vector<double>& want) {
        const float* got = static_cast<const float*>(ex.output_data(output));
        for (size_t k = 0; k < want.size(); ++k)
          ASSERT_NEAR(got[k], want[k], 1e-5 * (1.0 + std::fabs(want[k]))) << "output " << output << " at " << k;
      };
      expect_values(0, y_want);
      if (variant == 1) expect_values(1, h);
      if (variant == 2) expect_values(1, s_want);
    }
}

// A folded value is computed inside the step that reads it and never stored: it takes no
// arena space (here the arena holds y alone), where unfolded it is live with y.
TEST_F(Executor, AFoldedValueTakesNoArenaSpace) {
  const int64_t T = 8, N = 512, O = 16;
  Graph g;
  g.in("x", DType::F32, {1, T, N}).weight("g", {N}, std::vector<float>(size_t(N), 1.0f));
  g.weight("w", {O, N}, std::vector<float>(size_t(O * N), 0.5f));
  g.val("h", DType::F32, {1, T, N}).val("y", DType::F32, {1, T, O});
  g.node("rms_norm", {"x", "g"}, {"h"}, {{"eps", 1e-5}}).node("linear", {"h", "w"}, {"y"});
  g.out("y", "y", OutputMemory::Planned);
  const uint64_t h_bytes = uint64_t(T * N) * sizeof(float), y_bytes = uint64_t(T * O) * sizeof(float);
  RuntimeOptions no_folding;
  no_folding.fold_ops = false;
  auto unfolded = load(g, no_folding);
  auto folded = load(g);
  ASSERT_EQ(unfolded->num_folded_steps(), 0u);
  ASSERT_EQ(folded->num_folded_steps(), 1u);
  EXPECT_GE(unfolded->arena_bytes(), h_bytes + y_bytes);
  EXPECT_EQ(folded->arena_bytes(), y_bytes);
  // Both give y = 0.5 * sum(x / rms(x)) for every feature.
  std::vector<float> x(size_t(T * N));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::cos(0.37 * double(i)));
  for (const auto& method : {unfolded, folded}) {
    Execution ex(method);
    ex.bind_input(0, x.data());
    ASSERT_TRUE(ex.run(nullptr).ok());
    const float* y = static_cast<const float*>(ex.output_data(0));
    for (int64_t r = 0; r < T; ++r) {
      double ss = 0, sum = 0;
      for (int64_t i = 0; i < N; ++i)
        ss += double(x[size_t(r * N + i)]) * x[size_t(r * N + i)], sum += x[size_t(r * N + i)];
      const double want = 0.5 * sum / std::sqrt(ss / N + 1e-5);
      for (int64_t o = 0; o < O; ++o) ASSERT_NEAR(y[r * O + o], want, 1e-4 * (1.0 + std::fabs(want))) << r << " " << o;
    }
  }
}

TEST_F(Executor, ArenaPlanWithMixedSizes) {
  // Values of different widths: a large short-lived one, small long-lived ones.
  const int64_t T = 2;
  Graph g;
  std::vector<float> up(64 * 8), down(8 * 64);
  for (size_t i = 0; i < up.size(); ++i) up[i] = float(std::sin(double(i))) * 0.2f;
  for (size_t i = 0; i < down.size(); ++i) down[i] = float(std::cos(double(i) * 1.3)) * 0.2f;
  g.in("x", DType::F32, {1, T, 8}).weight("up", {64, 8}, up).weight("down", {8, 64}, down);
  g.val("s", DType::F32, {1, T, 8}).val("wide", DType::F32, {1, T, 64}).val("wide2", DType::F32, {1, T, 64});
  g.val("narrow", DType::F32, {1, T, 8}).val("r", DType::F32, {1, T, 8});
  g.node("add", {"x", "x"}, {"s"});
  g.node("linear", {"s", "up"}, {"wide"});
  g.node("silu_mul", {"wide", "wide"}, {"wide2"});
  g.node("linear", {"wide2", "down"}, {"narrow"});
  g.node("add", {"narrow", "s"}, {"r"});
  g.out("r", "r", OutputMemory::Planned);
  Execution ex(load(g));
  std::vector<float> x = iota(size_t(T * 8), -1, 0.13f);
  ex.bind_input(0, x.data());
  ASSERT_TRUE(ex.run().ok());
  std::vector<double> xd(x.begin(), x.end());
  auto s = ref_add(xd, xd);
  auto wide = ref_linear(s, T, 8, up, 64);
  auto wide2 = ref_silu_mul(wide, wide);
  auto narrow = ref_linear(wide2, T, 64, down, 8);
  auto r = ref_add(narrow, s);
  const float* got = static_cast<const float*>(ex.output_data(0));
  for (size_t k = 0; k < r.size(); ++k) EXPECT_NEAR(got[k], r[k], 1e-4 * (1 + std::fabs(r[k]))) << k;
}

// gelu_tanh_mul against GELU-tanh written as x * sigmoid(2 z) (the same function as
// 0.5 x (1 + tanh z), z = sqrt(2 / pi) (x + 0.044715 x^3)); scale against exact products.
TEST_F(Executor, GeluTanhMulAndScale) {
  std::vector<float> x = {-2.0f, -1.0f, 0.0f, 1.0f, 0.5f, 2.0f, 3.0f, -0.5f};
  std::vector<float> u = {1.0f, 2.0f, 3.0f, 4.0f, -1.0f, 0.25f, 1.0f, 2.0f};
  Graph g;
  g.in("x", DType::F32, X).in("u", DType::F32, X).val("g", DType::F32, X).val("s", DType::F32, X);
  g.node("gelu_tanh_mul", {"x", "u"}, {"g"}).node("scale", {"x"}, {"s"}, {{"factor", -2.5}});
  g.out("g", "g", OutputMemory::Planned).out("s", "s", OutputMemory::Planned);
  Execution ex(load(g));
  ex.bind_input(0, x.data());
  ex.bind_input(1, u.data());
  ASSERT_TRUE(ex.run().ok());
  const float* got_g = static_cast<const float*>(ex.output_data(0));
  const float* got_s = static_cast<const float*>(ex.output_data(1));
  // GELU-tanh(1) = 0.841192 (to 6 places), GELU-tanh(-1) = -0.158808.
  EXPECT_NEAR(got_g[3], 0.841192 * 4, 4e-6);
  EXPECT_NEAR(got_g[1], -0.158808 * 2, 2e-6);
  for (size_t i = 0; i < x.size(); ++i) {
    const double z = std::sqrt(2.0 / M_PI) * (x[i] + 0.044715 * x[i] * x[i] * x[i]);
    EXPECT_NEAR(got_g[i], x[i] / (1.0 + std::exp(-2.0 * z)) * u[i], 1e-5) << i;
    EXPECT_EQ(got_s[i], x[i] * -2.5f) << i;
  }
  Graph bad;
  bad.in("x", DType::I64, {1, 2}).val("s", DType::I64, {1, 2}).node("scale", {"x"}, {"s"}, {{"factor", 2}});
  bad.out("s", "s", OutputMemory::Planned);
  EXPECT_THAT(load_error(bad), testing::HasSubstr("must be float32"));
  Graph no_factor;
  no_factor.in("x", DType::F32, X).val("s", DType::F32, X).node("scale", {"x"}, {"s"});
  no_factor.out("s", "s", OutputMemory::Planned);
  EXPECT_THAT(load_error(no_factor), testing::HasSubstr("attribute 'factor' is missing"));
}

// A run reads and writes the buffers bound at that run: rebinding an input or an unplanned
// output to another buffer between runs takes effect, and the old buffers are left alone.
TEST_F(Executor, RebindingBetweenRunsUsesTheNewBuffers) {
  Graph g;
  g.in("x", DType::F32, X).in("u", DType::F32, X).val("s", DType::F32, X).val("a", DType::F32, X);
  g.node("scale", {"x"}, {"s"}, {{"factor", 2.0}}).node("add", {"s", "u"}, {"a"});
  g.out("a", "a", OutputMemory::Unplanned);
  Execution ex(load(g));
  std::vector<float> x1(8, 1.0f), x2(8, 10.0f), u(8, 0.5f), y1(8, 0.0f), y2(8, 0.0f);
  ex.bind_input(0, x1.data());
  ex.bind_input(1, u.data());
  ex.bind_output(0, y1.data());
  ASSERT_TRUE(ex.run().ok());
  EXPECT_EQ(y1, std::vector<float>(8, 2.5f));
  ex.bind_input(0, x2.data());
  ASSERT_TRUE(ex.run().ok());
  EXPECT_EQ(y1, std::vector<float>(8, 20.5f));
  ex.bind_output(0, y2.data());
  x2.assign(8, -1.0f);  // same buffer, new contents: read again
  ASSERT_TRUE(ex.run().ok());
  EXPECT_EQ(y2, std::vector<float>(8, -1.5f));
  EXPECT_EQ(y1, std::vector<float>(8, 20.5f)) << "the first output buffer was written again";
}

}  // namespace
}  // namespace hfstatic
