// Every SIMD kernel against the portable scalar kernel (attention: test_attention.cpp): random
// shapes with tails that are not a multiple of the vector width, every weight dtype, 1 and 2
// threads. Also checks the choice of an ISA and the table's linear.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"

namespace hfstatic::kernels {
namespace {

using test::expect_close;
using test::kNegInf;
using test::label;
using test::random_floats;
using test::simd_isas;
using test::Stored;
using test::stored;
using test::with_threads;

const DType kWeightTypes[] = {DType::F32, DType::F16, DType::BF16};
const int kThreads[] = {1, 2};

TEST(Kernels, TheBestIsaUnderACapIsSupported) {
  EXPECT_TRUE(isa_supported(Isa::Scalar));
  EXPECT_TRUE(isa_supported(best_isa()));
  EXPECT_NE(kernel_table(Isa::Scalar), nullptr);
  for (Isa isa : kIsas) EXPECT_EQ(kernel_table(isa) != nullptr, isa_supported(isa));
  EXPECT_EQ(best_isa(Isa::Scalar), Isa::Scalar);
  for (Isa cap : kIsas) {
    const Isa isa = best_isa(cap);
    EXPECT_LE(int(isa), int(cap));
    EXPECT_TRUE(isa_supported(isa));
    if (isa_supported(cap)) {
      EXPECT_EQ(isa, cap);
    }
  }
  // The default passes over avx512-vnni-512 only where the CPU splits 512-bit vectors in two.
  EXPECT_EQ(best_isa(isa_splits_512_bit_vectors() ? Isa::Avx512Vnni : Isa::Avx512Vnni512), best_isa());
}

// The -vnni levels need the CPU's dot instruction on top of their SIMD level; names round-trip.
TEST(Kernels, VnniLevelsFollowTheCpuFeatures) {
  const std::string features = std::string(" ") + isa_cpu_features() + " ";
  auto has = [&](const char* f) { return features.find(std::string(" ") + f + " ") != std::string::npos; };
  EXPECT_EQ(isa_supported(Isa::Avx2Vnni), isa_supported(Isa::Avx2) && has("avxvnni"));
  EXPECT_EQ(isa_supported(Isa::Avx512Vnni), isa_supported(Isa::Avx512) && has("avx512vnni"));
  EXPECT_EQ(isa_supported(Isa::Avx512Vnni512), isa_supported(Isa::Avx512Vnni));
  EXPECT_EQ(isa_supported(Isa::Avx2), has("avx2") && has("fma") && has("f16c"));
  std::set<std::string> names;
  for (Isa isa : kIsas) names.insert(isa_name(isa));
  EXPECT_EQ(names, (std::set<std::string>{"scalar", "avx2", "avx2-vnni", "avx512", "avx512-vnni", "avx512-vnni-512"}));
}

TEST(Kernels, LoadAndStoreRowsAreExact) {
  std::mt19937 rng(1);
  const auto& ref = *kernel_table(Isa::Scalar);
  for (Isa isa : simd_isas()) {
    const auto& k = *kernel_table(isa);
    for (int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100}) {
      for (DType t : kWeightTypes) {
        Stored s = stored(rng, size_t(n), t, -70000.0f, 70000.0f);
        std::vector<float> a(size_t(n) + 32, 7.0f), b(size_t(n) + 32, 7.0f);
        k.load_row(s.bytes.data(), t, n, a.data());
        ref.load_row(s.bytes.data(), t, n, b.data());
        a.resize(static_cast<size_t>(n));
        b.resize(static_cast<size_t>(n));
        EXPECT_EQ(a, b) << isa_name(isa) << " load " << dtype_name(t) << " n=" << n;
      }
      for (DType t : {DType::F32, DType::F16}) {
        // Includes values past the float16 range and values that round to even.
        std::vector<float> src = random_floats(rng, size_t(n), -70000.0f, 70000.0f);
        if (n > 2) src[1] = 1.0f + 1.0f / 2048.0f, src[2] = 1e-6f;
        std::vector<uint8_t> a(size_t(n) * dtype_size(t) + 64, 0xab), b(a);
        k.store_row(src.data(), n, a.data(), t);
        ref.store_row(src.data(), n, b.data(), t);
        EXPECT_EQ(a, b) << isa_name(isa) << " store " << dtype_name(t) << " n=" << n;
      }
    }
  }
}

TEST(Kernels, LinearMatchesScalar) {
  std::mt19937 rng(2);
  const auto& ref = *kernel_table(Isa::Scalar);
  struct Shape {
    int64_t rows, in, out;
  };
  const Shape shapes[] = {{1, 1, 1},
                          {1, 17, 5},
                          {1, 64, 40},
                          {2, 33, 7},
                          {3, 100, 13},
                          {4, 16, 16},
                          {5, 31, 3},
                          {7, 130, 29},
                          {16, 64, 24},
                          {33, 65, 17},
                          {70, 200, 37},
                          {128, 96, 50},
                          {1, 1000, 9},
                          {9, 257, 1},
                          // rows as long as a down projection's
                          {1, 2048, 7},
                          {1, 2100, 9},
                          {1, 4864, 4},
                          {2, 2100, 5},
                          // rows of whole 64-wide blocks (float32 weights read in place) with a
                          // partial last group of features
                          {40, 128, 30},
                          // long enough that the matrix multiply takes k in chunks (and, 400
                          // features, more groups than go through the chunks together)
                          {70, 2100, 29},
                          {37, 4096, 13},
                          {100, 4864, 17},
                          {40, 2100, 400}};
  for (const Shape& s : shapes) {
    for (DType wt : kWeightTypes) {
      for (int bias_kind = 0; bias_kind < 4; ++bias_kind) {
        const DType bt = bias_kind == 0 ? DType::F32 : kWeightTypes[bias_kind - 1];
        Stored w = stored(rng, size_t(s.out * s.in), wt);
        Stored b = stored(rng, size_t(s.out), bt);
        std::vector<float> x = random_floats(rng, size_t(s.rows * s.in));
        const void* bias = bias_kind == 0 ? nullptr : b.bytes.data();
        std::vector<float> want(size_t(s.rows * s.out));
        const LinearOutput want_out{w.bytes.data(), wt, s.out, bias, bt, want.data()};
        ref.linear_group(x.data(), s.rows, s.in, &want_out, 1, nullptr);
        // Tolerance from the magnitude of the terms of each dot product.
        std::vector<float> scale(want.size());
        for (int64_t r = 0; r < s.rows; ++r)
          for (int64_t o = 0; o < s.out; ++o) {
            double m = 1;
            for (int64_t i = 0; i < s.in; ++i)
              m += std::fabs(double(x[size_t(r * s.in + i)]) * w.values[size_t(o * s.in + i)]);
            scale[size_t(r * s.out + o)] = float(m);
          }
        for (Isa isa : simd_isas())
          for (int threads : kThreads) {
            std::vector<float> got(want.size(), 12345.0f);
            const LinearOutput got_out{w.bytes.data(), wt, s.out, bias, bt, got.data()};
            with_threads(threads,
                         [&] { kernel_table(isa)->linear_group(x.data(), s.rows, s.in, &got_out, 1, nullptr); });
            expect_close(got, want, scale, 2e-6f,
                         label(isa, threads) + " linear " + dtype_name(wt) + " rows=" + std::to_string(s.rows) +
                             " in=" + std::to_string(s.in) + " out=" + std::to_string(s.out) +
                             " bias=" + std::to_string(bias_kind));
          }
      }
    }
  }
}

// A group shares x and one parallel range over all its output features: every product must
// come out as if computed alone, whatever the split between threads (sizes that are not a
// multiple of the register tile or of the parallel grain, mixed weight types, with and
// without bias).
TEST(Kernels, LinearGroupMatchesSeparateProducts) {
  std::mt19937 rng(12);
  const auto& ref = *kernel_table(Isa::Scalar);
  const int64_t in = 71;
  const int64_t outs[] = {130, 7, 65, 200};
  const DType types[] = {DType::F16, DType::F32, DType::BF16, DType::F16};
  for (int64_t rows : {1, 2, 5, 17, 40}) {
    std::vector<float> x = random_floats(rng, size_t(rows * in));
    std::vector<Stored> w, b;
    std::vector<std::vector<float>> want;
    for (int i = 0; i < 4; ++i) {
      w.push_back(stored(rng, size_t(outs[i] * in), types[i]));
      b.push_back(stored(rng, size_t(outs[i]), DType::F32));
      want.emplace_back(size_t(rows * outs[i]));
      const LinearOutput one{w[i].bytes.data(), types[i],      outs[i], i % 2 ? b[i].bytes.data() : nullptr,
                             DType::F32,        want[i].data()};
      ref.linear_group(x.data(), rows, in, &one, 1, nullptr);
    }
    for (Isa isa : simd_isas())
      for (int threads : kThreads) {
        std::vector<std::vector<float>> got;
        std::vector<LinearOutput> group;
        for (int i = 0; i < 4; ++i) got.emplace_back(want[i].size(), 12345.0f);
        for (int i = 0; i < 4; ++i)
          group.push_back(
              {w[i].bytes.data(), types[i], outs[i], i % 2 ? b[i].bytes.data() : nullptr, DType::F32, got[i].data()});
        with_threads(threads, [&] { kernel_table(isa)->linear_group(x.data(), rows, in, group.data(), 4, nullptr); });
        for (int i = 0; i < 4; ++i)
          expect_close(
              got[i], want[i], {}, 2e-5f,
              label(isa, threads) + " linear group rows=" + std::to_string(rows) + " product " + std::to_string(i));
      }
  }
}

// An rms_norm, a silu_mul or a gelu_tanh_mul folded into a linear group must give, bit for bit, what the same
// ISA's separate kernels give: in the matrix multiply's packing (row counts that are not a
// multiple of 8 or of the panel, k not a multiple of the block, k in chunks at 100 rows of 2100)
// and in the matrix-vector path (1-3 rows), for groups of one to three products.
TEST(Kernels, FoldedInputOpsGiveWhatTheSeparateKernelsGive) {
  std::mt19937 rng(21);
  struct Case {
    int64_t rows, in;
    std::vector<int64_t> outs;
  };
  const Case cases[] = {{37, 70, {40, 40}}, {100, 2100, {29}}, {5, 128, {64, 13, 13}},
                        {32, 64, {16}},     {2, 70, {40, 40}}, {1, 130, {50, 13, 13}},
                        {3, 7, {5}},        {9, 300, {12}}};
  std::vector<Isa> isas = simd_isas();
  isas.insert(isas.begin(), Isa::Scalar);
  for (const Case& c : cases)
    for (const char* op : {"rms_norm", "silu_mul", "gelu_tanh_mul"}) {
      const bool norm = op == std::string("rms_norm"), gelu = op == std::string("gelu_tanh_mul");
      const int count = int(c.outs.size());
      std::vector<float> x = random_floats(rng, size_t(c.rows * c.in), -3.0f, 3.0f);
      std::vector<float> up = random_floats(rng, x.size());
      Stored norm_w = stored(rng, size_t(c.in), DType::F16, 0.5f, 1.5f);
      std::vector<Stored> w;
      std::vector<float> bias = random_floats(rng, size_t(c.outs[0]));
      for (int i = 0; i < count; ++i)
        w.push_back(stored(rng, size_t(c.outs[i] * c.in), kWeightTypes[i % 3], -0.2f, 0.2f));
      const std::string what = std::string(op) + " rows=" + std::to_string(c.rows) + " in=" + std::to_string(c.in) +
                               " products=" + std::to_string(count);
      for (Isa isa : isas)
        for (int threads : kThreads) {
          const KernelTable& k = *kernel_table(isa);
          auto products = [&](std::vector<std::vector<float>>& ys) {
            std::vector<LinearOutput> group;
            for (int i = 0; i < count; ++i) {
              ys.emplace_back(size_t(c.rows * c.outs[i]), 12345.0f);
              group.push_back({w[i].bytes.data(), kWeightTypes[i % 3], c.outs[i], i == 0 ? bias.data() : nullptr,
                               DType::F32, ys[i].data()});
            }
            return group;
          };
          std::vector<std::vector<float>> want, got;
          std::vector<LinearOutput> want_group = products(want), got_group = products(got);
          std::vector<float> input(x.size());
          LinearFusion fusion;
          if (norm)
            fusion.norm_w = norm_w.bytes.data(), fusion.norm_type = DType::F16, fusion.norm_eps = 1e-5f;
          else
            fusion.up = up.data(), fusion.gelu_tanh = gelu;
          with_threads(threads, [&] {
            if (norm)
              k.rms_norm(x.data(), c.rows, c.in, norm_w.bytes.data(), DType::F16, 1e-5f, input.data());
            else if (gelu)
              k.gelu_tanh_mul(x.data(), up.data(), int64_t(x.size()), input.data());
            else
              k.silu_mul(x.data(), up.data(), int64_t(x.size()), input.data());
            k.linear_group(input.data(), c.rows, c.in, want_group.data(), count, nullptr);
            k.linear_group(x.data(), c.rows, c.in, got_group.data(), count, &fusion);
          });
          for (int i = 0; i < count; ++i) {
            size_t same = 0;
            while (same < got[i].size() && std::memcmp(&got[i][same], &want[i][same], sizeof(float)) == 0) ++same;
            EXPECT_EQ(same, got[i].size())
                << label(isa, threads) << " " << what << " product " << i << ": first difference at " << same;
          }
        }
    }
}

// What each thread reads first in a matrix-vector group: the row its stretch of the group's
// output features (in grains of 64) starts on, in the product holding it, for at most `bytes`
// and not past that product.
TEST(Kernels, LinearGroupFirstReadsFollowTheThreadsStretches) {
  if (best_isa() == Isa::Scalar) GTEST_SKIP() << "the scalar kernels do not plan";
  const auto linear_group_first_reads = kernel_table(best_isa())->linear_group_first_reads;
  const int64_t in = 32;  // float16 rows of 64 bytes
  std::vector<uint16_t> w0(size_t(100 * in)), w1(size_t(50 * in)), w2(size_t(30 * in));
  const LinearOutput three[] = {{w0.data(), DType::F16, 100, nullptr, DType::F32, nullptr},
                                {w1.data(), DType::F16, 50, nullptr, DType::F32, nullptr},
                                {w2.data(), DType::F16, 30, nullptr, DType::F32, nullptr}};
  auto at = [](const std::vector<uint16_t>& w, int64_t row) { return static_cast<const void*>(w.data() + row * in); };
  // 180 rows, 2 blocks: thread 0 starts at row 0 (64 rows), thread 1 at row 64 of the first
  // product, which has 36 rows left.
  auto first = linear_group_first_reads(1, in, three, 3, 2, size_t(1) << 20);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].data, at(w0, 0));
  EXPECT_EQ(first[0].bytes, 64u * 64u);
  EXPECT_EQ(first[1].data, at(w0, 64));
  EXPECT_EQ(first[1].bytes, 36u * 64u);
  first = linear_group_first_reads(3, in, three, 3, 2, 1000);  // capped
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].bytes, 1000u);
  EXPECT_EQ(first[1].bytes, 1000u);
  // 80 + 100 rows: thread 1's stretch (rows 64..180) starts in the first product, which ends 16
  // rows later; with 3 threads (2 blocks) thread 0 owns nothing.
  const LinearOutput two[] = {{w0.data(), DType::F16, 80, nullptr, DType::F32, nullptr},
                              {w1.data(), DType::BF16, 100, nullptr, DType::F32, nullptr}};
  first = linear_group_first_reads(1, in, two, 2, 2, size_t(1) << 20);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[1].data, at(w0, 64));
  EXPECT_EQ(first[1].bytes, 16u * 64u);
  first = linear_group_first_reads(1, in, two, 2, 3, size_t(1) << 20);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].bytes, 0u);
  EXPECT_EQ(first[1].data, at(w0, 0));
  EXPECT_EQ(first[1].bytes, 64u * 64u);
  EXPECT_EQ(first[2].data, at(w0, 64));
  // Float32 rows are twice as long; a product past the first is found by its own rows.
  std::vector<float> f0(size_t(10 * in)), f1(size_t(200 * in));
  const LinearOutput f32[] = {{f0.data(), DType::F32, 10, nullptr, DType::F32, nullptr},
                              {f1.data(), DType::F32, 200, nullptr, DType::F32, nullptr}};
  first = linear_group_first_reads(1, in, f32, 2, 2, size_t(1) << 20);  // 210 rows, 3 blocks: 1 + 2
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].data, static_cast<const void*>(f0.data()));
  EXPECT_EQ(first[0].bytes, 10u * 128u);
  EXPECT_EQ(first[1].data, static_cast<const void*>(f1.data() + 54 * in));
  EXPECT_EQ(first[1].bytes, 146u * 128u);
  // Not planned: the blocked multiply (4 rows or more), one thread, the scalar kernels.
  EXPECT_TRUE(linear_group_first_reads(4, in, three, 3, 2, size_t(1) << 20).empty());
  EXPECT_TRUE(linear_group_first_reads(1, in, three, 3, 1, size_t(1) << 20).empty());
  EXPECT_TRUE(kernel_table(Isa::Scalar)->linear_group_first_reads(1, in, three, 3, 2, size_t(1) << 20).empty());
}

TEST(Kernels, RmsNormMatchesScalar) {
  std::mt19937 rng(3);
  const auto& ref = *kernel_table(Isa::Scalar);
  for (int64_t rows : {1, 3, 70, 129})
    for (int64_t n : {1, 5, 16, 17, 64, 100, 576})
      for (DType wt : kWeightTypes) {
        Stored w = stored(rng, size_t(n), wt, 0.5f, 1.5f);
        std::vector<float> x = random_floats(rng, size_t(rows * n), -3.0f, 3.0f);
        std::vector<float> want(x.size());
        ref.rms_norm(x.data(), rows, n, w.bytes.data(), wt, 1e-6f, want.data());
        for (Isa isa : simd_isas())
          for (int threads : kThreads) {
            std::vector<float> got(x.size());
            with_threads(threads, [&] {
              kernel_table(isa)->rms_norm(x.data(), rows, n, w.bytes.data(), wt, 1e-6f, got.data());
            });
            expect_close(got, want, {}, 2e-6f, label(isa, threads) + " rms_norm n=" + std::to_string(n));
          }
      }
}

TEST(Kernels, RopeMatchesScalar) {
  std::mt19937 rng(4);
  const auto& ref = *kernel_table(Isa::Scalar);
  struct Case {
    int64_t head_dim, rotary_dim;
    float factor;
  };
  for (Case c : {Case{2, 2, 1.0f}, Case{6, 6, 1.0f}, Case{16, 16, 1.0f}, Case{34, 34, 1.0f}, Case{64, 64, 1.0f},
                 Case{128, 128, 1.0f}, Case{128, 96, 1.19f}, Case{64, 48, 1.0f}, Case{40, 10, 0.8f}, Case{16, 0, 1.0f}})
    for (int64_t rows : {1, 5, 40}) {
      const int64_t heads = 3, head_dim = c.head_dim, rotary = c.rotary_dim, half = rotary / 2;
      const std::string what = "head_dim=" + std::to_string(head_dim) + " rotary_dim=" + std::to_string(rotary);
      std::vector<float> inv(static_cast<size_t>(std::max<int64_t>(half, 1)));
      for (int64_t i = 0; i < half; ++i)
        inv[size_t(i)] = float(1.0 / std::pow(10000.0, double(2 * i) / double(rotary)));
      std::vector<int64_t> pos(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) pos[size_t(r)] = (r * 37 + 5) % 500;
      const std::vector<float> x = random_floats(rng, size_t(rows * heads * head_dim));
      std::vector<float> want(x.size());
      ref.rope(x.data(), want.data(), rows, heads, head_dim, rotary, pos.data(), inv.data(), c.factor);
      std::vector<float> in_place = x;  // the scalar kernel in place gives the same
      ref.rope(in_place.data(), in_place.data(), rows, heads, head_dim, rotary, pos.data(), inv.data(), c.factor);
      expect_close(in_place, want, {}, 0.0f, "scalar rope in place " + what);
      for (Isa isa : simd_isas())
        for (int threads : kThreads)
          for (int rep = 0; rep < 2; ++rep) {  // the second call reuses the cached table
            std::vector<float> got(x.size(), 12345.0f), got_in_place = x;
            with_threads(threads, [&] {
              kernel_table(isa)->rope(x.data(), got.data(), rows, heads, head_dim, rotary, pos.data(), inv.data(),
                                      c.factor);
              kernel_table(isa)->rope(got_in_place.data(), got_in_place.data(), rows, heads, head_dim, rotary,
                                      pos.data(), inv.data(), c.factor);
            });
            expect_close(got, want, {}, 1e-6f, label(isa, threads) + " rope " + what);
            expect_close(got_in_place, want, {}, 1e-6f, label(isa, threads) + " rope in place " + what);
          }
      // Different positions, or another factor, with the same frequencies must not reuse the table.
      for (auto& p : pos) p += 1;
      for (float factor : {c.factor, c.factor * 2}) {
        std::vector<float> want2(x.size()), got2(x.size());
        ref.rope(x.data(), want2.data(), rows, heads, head_dim, rotary, pos.data(), inv.data(), factor);
        for (Isa isa : simd_isas()) {
          kernel_table(isa)->rope(x.data(), got2.data(), rows, heads, head_dim, rotary, pos.data(), inv.data(), factor);
          expect_close(got2, want2, {}, 1e-6f, std::string(isa_name(isa)) + " rope after a change " + what);
        }
      }
    }
}

// Partial rotation and the cos/sin factor against values worked out by hand: head_dim 6,
// rotary_dim 4 (pairs (0, 2) and (1, 3)), position 1, frequencies {pi/2, pi}, factor 2.
TEST(Kernels, RopePartialRotaryByHand) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<float> inv = {float(M_PI / 2), float(M_PI)};
  const int64_t pos = 1;
  // pair (0, 2) by pi/2: cos 0, sin 1 -> (-3, 1) * 2; pair (1, 3) by pi: cos -1, sin 0 -> (-2, -4) * 2.
  const std::vector<float> want = {-6, -4, 2, -8, 5, 6};
  std::vector<Isa> isas = simd_isas();
  isas.push_back(Isa::Scalar);
  for (Isa isa : isas) {
    std::vector<float> got(6, 0.0f);
    kernel_table(isa)->rope(x.data(), got.data(), 1, 1, 6, 4, &pos, inv.data(), 2.0f);
    expect_close(got, want, {}, 1e-6f, std::string(isa_name(isa)) + " rope by hand");
  }
}

TEST(Kernels, ElementwiseMatchScalar) {
  std::mt19937 rng(6);
  const auto& ref = *kernel_table(Isa::Scalar);
  for (int64_t n : {1, 7, 8, 9, 17, 100, 1000, 40000, 70001}) {
    std::vector<float> g = random_floats(rng, size_t(n), -30.0f, 30.0f), u = random_floats(rng, size_t(n), -2.0f, 2.0f);
    g[0] = -100.0f;
    if (n > 1) g[1] = 100.0f;
    std::vector<float> want_silu(static_cast<size_t>(n)), want_add(static_cast<size_t>(n));
    std::vector<float> want_gelu(static_cast<size_t>(n));
    ref.silu_mul(g.data(), u.data(), n, want_silu.data());
    ref.gelu_tanh_mul(g.data(), u.data(), n, want_gelu.data());
    ref.add(g.data(), u.data(), n, want_add.data());
    for (Isa isa : simd_isas())
      for (int threads : kThreads) {
        std::vector<float> silu(static_cast<size_t>(n)), sum(static_cast<size_t>(n)), gelu(static_cast<size_t>(n));
        with_threads(threads, [&] {
          kernel_table(isa)->silu_mul(g.data(), u.data(), n, silu.data());
          kernel_table(isa)->gelu_tanh_mul(g.data(), u.data(), n, gelu.data());
          kernel_table(isa)->add(g.data(), u.data(), n, sum.data());
        });
        std::vector<float> scale(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) scale[size_t(i)] = std::max(1e-3f, std::fabs(want_silu[size_t(i)]));
        expect_close(silu, want_silu, scale, 2e-6f, label(isa, threads) + " silu_mul n=" + std::to_string(n));
        for (int64_t i = 0; i < n; ++i) scale[size_t(i)] = std::max(1e-3f, std::fabs(want_gelu[size_t(i)]));
        expect_close(gelu, want_gelu, scale, 2e-6f, label(isa, threads) + " gelu_tanh_mul n=" + std::to_string(n));
        EXPECT_EQ(sum, want_add) << label(isa, threads) << " add n=" << n;
      }
  }
}

TEST(Kernels, TheTablesLinearIsAGroupOfOne) {
  std::mt19937 rng(7);
  const int64_t rows = 6, in = 40, out = 11;
  Stored w = stored(rng, size_t(in * out), DType::F16);
  std::vector<float> x = random_floats(rng, size_t(rows * in));
  std::vector<float> want(size_t(rows * out)), got(want.size());
  kernel_table(Isa::Scalar)
      ->linear(x.data(), rows, in, w.bytes.data(), DType::F16, out, nullptr, DType::F32, want.data());
  kernel_table(best_isa())
      ->linear(x.data(), rows, in, w.bytes.data(), DType::F16, out, nullptr, DType::F32, got.data());
  expect_close(got, want, {}, 1e-5f, "the table's linear");
}

}  // namespace
}  // namespace hfstatic::kernels
