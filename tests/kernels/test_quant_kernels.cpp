// Quantized weights (int8, int4 with float16 scales per group of inputs): the scalar kernels
// against a plain dequantize-then-multiply written here from the layout (src/kernels/README.md),
// and every SIMD kernel against the scalar one: shapes with tails, 1 to many rows, groups of 32,
// 64 and 128, with and without bias, groups of several products, the folded rms_norm and
// silu_mul, the int4 nibble 0 (-8) and zero scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"
#include "quant_test_support.h"

namespace hfstatic::kernels {
namespace {

using test::quantize;
using test::Quantized;
using test::random_floats;
using test::simd_isas;
using test::with_threads;

// y = x values^T + bias in double, and the magnitude sum |x * w| + 1 of each dot product.
void reference(const std::vector<float>& x, int64_t rows, const Quantized& m, const float* bias, std::vector<float>& y,
               std::vector<float>& magnitude) {
  y.assign(size_t(rows * m.out), 0.0f);
  magnitude.assign(y.size(), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < m.out; ++o) {
      double s = bias ? bias[o] : 0.0, a = 1;
      for (int64_t i = 0; i < m.in; ++i) {
        const double p = double(x[size_t(r * m.in + i)]) * m.values[size_t(o * m.in + i)];
        s += p, a += std::fabs(p);
      }
      y[size_t(r * m.out + o)] = float(s), magnitude[size_t(r * m.out + o)] = float(a);
    }
}

// The most a product of rows quantized to int8 per group (scale max|x| / 127, rounded to
// nearest) can differ from the float one: half a step of x times |w|, summed.
std::vector<float> activation_rounding_bound(const std::vector<float>& x, int64_t rows, const Quantized& m) {
  std::vector<float> bound(size_t(rows * m.out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < m.out; ++o) {
      double b = 0;
      for (int64_t g = 0; g < m.in / m.group; ++g) {
        double amax = 0, wsum = 0;
        for (int64_t i = g * m.group; i < (g + 1) * m.group; ++i) {
          amax = std::max(amax, std::fabs(double(x[size_t(r * m.in + i)])));
          wsum += std::fabs(m.values[size_t(o * m.in + i)]);
        }
        b += amax / 127.0 * 0.5 * wsum;
      }
      bound[size_t(r * m.out + o)] = float(b);
    }
  return bound;
}

std::string name(const Quantized& m, int64_t rows) {
  return std::string(dtype_name(m.type)) + " group=" + std::to_string(m.group) + " rows=" + std::to_string(rows) +
         " in=" + std::to_string(m.in) + " out=" + std::to_string(m.out);
}

struct Shape {
  int64_t rows, in, out;
};
// Odd counts of 32-value blocks (96, 160, 288, 480: an int4 block without a pair at the end,
// after a whole or a partial block of 8 groups), rows of fewer than 8 groups, of whole blocks
// only (512, 1024, 1536) and of blocks then 1 to 7 groups (288, 448, 640, 2176).
const Shape kShapes[] = {{1, 96, 9},    {2, 160, 70},  {1, 288, 33},    {3, 480, 65},  {4, 96, 13},
                         {1, 128, 1},   {1, 256, 67},  {2, 384, 13},    {3, 128, 130}, {1, 1536, 70},
                         {1, 640, 200}, {4, 128, 13},  {5, 384, 29},    {17, 256, 7},  {40, 96 * 4, 30},
                         {70, 512, 37}, {33, 2176, 9}, {100, 1024, 25}, {1, 448, 11}};
const int64_t kGroups[] = {32, 64, 128};
const DType kQuantTypes[] = {DType::I8, DType::I4};

// fn(shape, matrix) for every shape, weight type and group size that divides the shape's width,
// the matrix drawn from rng.
template <typename Fn>
void for_each_case(std::mt19937& rng, Fn&& fn) {
  for (const Shape& s : kShapes)
    for (DType type : kQuantTypes)
      for (int64_t group : kGroups)
        if (s.in % group == 0) fn(s, quantize(rng, type, s.out, s.in, group));
}

TEST(QuantKernels, ScalarIsTheDequantizedProduct) {
  std::mt19937 rng(31);
  const KernelTable& scalar = *kernel_table(Isa::Scalar);
  for_each_case(rng, [&](const Shape& s, const Quantized& m) {
    const std::vector<float> x = random_floats(rng, size_t(s.rows * s.in));
    const std::vector<float> bias = random_floats(rng, size_t(s.out));
    std::vector<float> want, magnitude, got(size_t(s.rows * s.out), 12345.0f);
    reference(x, s.rows, m, bias.data(), want, magnitude);
    const LinearOutput o = m.output(got.data(), bias.data());
    with_threads(2, [&] { scalar.linear_group(x.data(), s.rows, s.in, &o, 1, nullptr); });
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-6f * magnitude[i]) << name(m, s.rows);
    // The embedding gather: each row exactly the dequantized values.
    std::vector<float> row(size_t(s.in));
    for (int64_t o2 : {int64_t(0), s.out / 2, s.out - 1}) {
      scalar.load_quant_row(m.w.data(), m.type, m.scales.data(), m.group, o2, s.in, row.data());
      for (int64_t i = 0; i < s.in; ++i)
        ASSERT_EQ(row[size_t(i)], m.values[size_t(o2 * s.in + i)]) << name(m, 1) << " row " << o2 << " at " << i;
    }
  });
}

TEST(QuantKernels, SimdLoadQuantRowIsExact) {
  std::mt19937 rng(32);
  for (Isa isa : simd_isas())
    for (DType type : kQuantTypes)
      for (int64_t group : kGroups) {
        const Quantized m = quantize(rng, type, 5, 384, group);
        std::vector<float> got(384), want(384);
        for (int64_t row = 0; row < 5; ++row) {
          kernel_table(isa)->load_quant_row(m.w.data(), type, m.scales.data(), group, row, 384, got.data());
          kernel_table(Isa::Scalar)->load_quant_row(m.w.data(), type, m.scales.data(), group, row, 384, want.data());
          EXPECT_EQ(got, want) << isa_name(isa) << " " << name(m, 1) << " row " << row;
        }
      }
}

// The rows are quantized to int8 per group at any row count, so the result differs from the
// scalar one by at most the rounding bound of x.
TEST(QuantKernels, SimdLinearMatchesScalar) {
  std::mt19937 rng(33);
  const KernelTable& scalar = *kernel_table(Isa::Scalar);
  for_each_case(rng, [&](const Shape& s, const Quantized& m) {
    const std::vector<float> x = random_floats(rng, size_t(s.rows * s.in), -2.0f, 2.0f);
    const std::vector<float> bias = random_floats(rng, size_t(s.out));
    for (bool with_bias : {false, true}) {
      std::vector<float> want(size_t(s.rows * s.out)), magnitude, unused;
      reference(x, s.rows, m, nullptr, unused, magnitude);
      const LinearOutput w = m.output(want.data(), with_bias ? bias.data() : nullptr);
      scalar.linear_group(x.data(), s.rows, s.in, &w, 1, nullptr);
      const std::vector<float> bound = activation_rounding_bound(x, s.rows, m);
      for (Isa isa : simd_isas())
        for (int threads : {1, 2}) {
          std::vector<float> got(want.size(), 12345.0f);
          const LinearOutput g = m.output(got.data(), with_bias ? bias.data() : nullptr);
          with_threads(threads, [&] { kernel_table(isa)->linear_group(x.data(), s.rows, s.in, &g, 1, nullptr); });
          for (size_t i = 0; i < got.size(); ++i) {
            const float tol = 4e-6f * magnitude[i] + 1.001f * bound[i];
            ASSERT_NEAR(got[i], want[i], tol) << isa_name(isa) << " threads=" << threads << " " << name(m, s.rows)
                                              << " bias=" << with_bias << " at " << i;
          }
        }
    }
  });
}

// The bound above is not loose: rows whose values sit on the int8 grid of their group lose
// nothing to the activation rounding, and the SIMD product equals the scalar one to float32
// rounding.
TEST(QuantKernels, RowsOnTheInt8GridLoseNothing) {
  std::mt19937 rng(34);
  std::uniform_int_distribution<int> q(-127, 127);
  for (Isa isa : simd_isas())
    for (DType type : kQuantTypes)
      for (int64_t group : kGroups) {
        const int64_t in = 512, out = 70;
        const Quantized m = quantize(rng, type, out, in, group);
        std::vector<float> x(size_t(2 * in));
        for (size_t i = 0; i < x.size(); ++i) x[i] = float(q(rng)) * 0.125f;
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t g = 0; g < in / group; ++g)
            x[size_t(r * in + g * group)] = 127 * 0.125f;  // max |x| of each group
        std::vector<float> want(size_t(2 * out)), got(want.size()), magnitude, unused;
        reference(x, 2, m, nullptr, unused, magnitude);
        const LinearOutput w = m.output(want.data()), g = m.output(got.data());
        kernel_table(Isa::Scalar)->linear_group(x.data(), 2, in, &w, 1, nullptr);
        kernel_table(isa)->linear_group(x.data(), 2, in, &g, 1, nullptr);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 4e-6f * magnitude[i]) << isa_name(isa) << " " << name(m, 2) << " at " << i;
      }
}

// A group mixing int8, int4 (different group sizes) and float16 products with and without
// bias, split over threads at any point: each product as computed alone by the same ISA; and
// a folded rms_norm or silu_mul gives bit for bit what the separate kernels give.
TEST(QuantKernels, GroupsAndFoldedOpsMatchSeparateProducts) {
  std::mt19937 rng(35);
  const int64_t in = 384;
  std::vector<Quantized> q = {quantize(rng, DType::I8, 130, in, 32), quantize(rng, DType::I4, 65, in, 128),
                              quantize(rng, DType::I4, 7, in, 64), quantize(rng, DType::I8, 200, in, 128)};
  std::vector<uint16_t> f16(size_t(50 * in));
  const std::vector<float> f16_values = random_floats(rng, f16.size());
  for (size_t i = 0; i < f16.size(); ++i) f16[i] = f32_to_f16(f16_values[i]);
  const std::vector<float> bias = random_floats(rng, 200);
  std::vector<uint16_t> norm_w(static_cast<size_t>(in));
  for (size_t i = 0; i < norm_w.size(); ++i) norm_w[i] = f32_to_f16(0.5f + float(i % 7) / 7.0f);
  std::vector<Isa> isas = simd_isas();
  isas.insert(isas.begin(), Isa::Scalar);
  for (int64_t rows : {1, 2, 3, 5, 40})
    for (int fold = 0; fold < 3; ++fold) {  // none, rms_norm, silu_mul
      const std::vector<float> x = random_floats(rng, size_t(rows * in), -3.0f, 3.0f);
      const std::vector<float> up = random_floats(rng, x.size());
      for (Isa isa : isas)
        for (int threads : {1, 2}) {
          const KernelTable& k = *kernel_table(isa);
          auto products = [&](std::vector<std::vector<float>>& ys) {
            std::vector<LinearOutput> group;
            for (size_t i = 0; i < q.size(); ++i) {
              ys.emplace_back(size_t(rows * q[i].out), 12345.0f);
              group.push_back(q[i].output(ys.back().data(), i % 2 ? bias.data() : nullptr));
            }
            ys.emplace_back(size_t(rows * 50), 12345.0f);
            group.push_back({f16.data(), DType::F16, 50, bias.data(), DType::F32, ys.back().data(), {}});
            return group;
          };
          std::vector<std::vector<float>> alone, together;
          std::vector<LinearOutput> alone_group = products(alone), together_group = products(together);
          std::vector<float> input = x;
          LinearFusion fusion;
          if (fold == 1) fusion.norm_w = norm_w.data(), fusion.norm_type = DType::F16, fusion.norm_eps = 1e-5f;
          if (fold == 2) fusion.up = up.data();
          with_threads(threads, [&] {
            if (fold == 1) k.rms_norm(x.data(), rows, in, norm_w.data(), DType::F16, 1e-5f, input.data());
            if (fold == 2) k.silu_mul(x.data(), up.data(), int64_t(x.size()), input.data());
            for (const LinearOutput& o : alone_group) k.linear_group(input.data(), rows, in, &o, 1, nullptr);
            k.linear_group(x.data(), rows, in, together_group.data(), int(together_group.size()),
                           fold ? &fusion : nullptr);
          });
          for (size_t i = 0; i < alone.size(); ++i)
            EXPECT_EQ(0, std::memcmp(alone[i].data(), together[i].data(), alone[i].size() * sizeof(float)))
                << isa_name(isa) << " threads=" << threads << " rows=" << rows << " fold=" << fold << " product " << i;
        }
    }
}

// What a thread reads first in a quantized matrix-vector group: its first rows' packed bytes
// (in / 2 a row for int4, in for int8).
TEST(QuantKernels, FirstReadsCountPackedRows) {
  if (best_isa() == Isa::Scalar) GTEST_SKIP() << "the scalar kernels do not plan";
  const auto first_reads = kernel_table(best_isa())->linear_group_first_reads;
  const int64_t in = 128;
  std::vector<uint8_t> w4(size_t(100 * in / 2)), w8(size_t(100 * in));
  std::vector<uint16_t> scales(size_t(100 * in / 32));
  const LinearOutput int4_first[] = {{w4.data(), DType::I4, 100, nullptr, DType::F32, nullptr, {scales.data(), 32}},
                                     {w8.data(), DType::I8, 100, nullptr, DType::F32, nullptr, {scales.data(), 32}}};
  const LinearOutput int8_first[] = {int4_first[1], int4_first[0]};
  // 200 rows, 4 grains of 64: thread 0 owns the first grain, thread 1 the rest, starting at
  // row 64 of the first product (36 rows left in it).
  auto first = first_reads(1, in, int4_first, 2, 2, size_t(1) << 20);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].data, static_cast<const void*>(w4.data()));
  EXPECT_EQ(first[0].bytes, 64u * 64u);
  EXPECT_EQ(first[1].data, static_cast<const void*>(w4.data() + 64 * in / 2));
  EXPECT_EQ(first[1].bytes, 36u * 64u);
  first = first_reads(1, in, int8_first, 2, 2, size_t(1) << 20);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].data, static_cast<const void*>(w8.data()));
  EXPECT_EQ(first[0].bytes, 64u * 128u);
  EXPECT_EQ(first[1].data, static_cast<const void*>(w8.data() + 64 * in));
  EXPECT_EQ(first[1].bytes, 36u * 128u);
}

}  // namespace
}  // namespace hfstatic::kernels
