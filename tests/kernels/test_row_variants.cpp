// The named variants of linear and attention compute each row the same whatever rows run with
// it: a row alone and the same row among others (40 for linear: whole panels of the blocked
// multiply and a last one of a few rows; 9, a verification step's, with different visible extents
// for attention) give the same bits, and so do the first n rows of linear run alone (the blocked
// multiply's tiles of features for few rows, against its panels of rows for many). That is what
// lets a step on active rows equal the whole chunk, and a step verifying drafted tokens equal the
// decode steps it replaces.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "quant_test_support.h"

namespace hfstatic::kernels {
namespace {

using test::kNegInf;
using test::random_floats;
using test::with_threads;

std::vector<Isa> all_isas() {
  std::vector<Isa> out = {Isa::Scalar};
  for (Isa isa : test::simd_isas()) out.push_back(isa);
  return out;
}

using LinearFn = void (*)(const float*, int64_t, int64_t, const LinearOutput*, int, const LinearFusion*);

TEST(RowVariants, LinearRowsAreTheSameAloneAndTogether) {
  std::mt19937 rng(41);
  const int64_t rows = 40, in = 576, out = 37;
  const std::vector<float> x = random_floats(rng, size_t(rows * in));
  const test::Stored w16 = test::stored(rng, size_t(out * in), DType::F16);
  const test::Quantized q4 = test::quantize(rng, DType::I4, out, in, 32);
  const test::Quantized q8 = test::quantize(rng, DType::I8, out, in, 64);
  std::vector<float> bias = random_floats(rng, size_t(out));
  bias[3] = -0.0f;
  for (Isa isa : all_isas())
    for (int threads : {1, 2}) {
      const KernelTable& k = *kernel_table(isa);
      for (LinearFn fn : {k.linear_few_rows, k.linear_many_rows})
        for (int which = 0; which < 4; ++which) {
          auto output = [&](float* y) -> LinearOutput {
            if (which == 0) return {w16.bytes.data(), DType::F16, out, nullptr, DType::F32, y, {}};
            if (which == 3) return {w16.bytes.data(), DType::F16, out, bias.data(), DType::F32, y, {}};
            const test::Quantized& m = which == 1 ? q4 : q8;
            return m.output(y);
          };
          std::vector<float> together(size_t(rows * out));
          const LinearOutput all = output(together.data());
          with_threads(threads, [&] { fn(x.data(), rows, in, &all, 1, nullptr); });
          for (int64_t r = 0; r < rows; ++r) {
            std::vector<float> alone(static_cast<size_t>(out));
            const LinearOutput one = output(alone.data());
            with_threads(threads, [&] { fn(x.data() + r * in, 1, in, &one, 1, nullptr); });
            ASSERT_EQ(std::memcmp(alone.data(), together.data() + r * out, alone.size() * sizeof(float)), 0)
                << isa_name(isa) << " threads=" << threads << (fn == k.linear_few_rows ? " few" : " many")
                << " weights " << which << " row " << r;
          }
          for (int64_t n : {2, 3, 5, 8, 9, 16, 17}) {
            std::vector<float> first(size_t(n * out));
            const LinearOutput some = output(first.data());
            with_threads(threads, [&] { fn(x.data(), n, in, &some, 1, nullptr); });
            ASSERT_EQ(std::memcmp(first.data(), together.data(), first.size() * sizeof(float)), 0)
                << isa_name(isa) << " threads=" << threads << (fn == k.linear_few_rows ? " few" : " many")
                << " weights " << which << " first " << n << " rows";
          }
        }
    }
}

// Float weights whose rows end inside a vector and inside a block of the blocked multiply (the
// tiles' last columns partly and wholly past `in`), or span several of the tiles' chunks of k, in
// each stored type, with a bias.
TEST(RowVariants, FloatRowsOfAnyLengthAreTheSameInTilesAndPanels) {
  std::mt19937 rng(43);
  const int64_t rows = 40, out = 53;
  for (int64_t in : {100, 131, 2100})
    for (DType wt : {DType::F32, DType::F16, DType::BF16}) {
      const std::vector<float> x = random_floats(rng, size_t(rows * in));
      const test::Stored w = test::stored(rng, size_t(out * in), wt);
      const std::vector<float> bias = random_floats(rng, size_t(out));
      for (Isa isa : test::simd_isas()) {
        const KernelTable& k = *kernel_table(isa);
        std::vector<float> together(size_t(rows * out));
        const LinearOutput all{w.bytes.data(), wt, out, bias.data(), DType::F32, together.data(), {}};
        k.linear_many_rows(x.data(), rows, in, &all, 1, nullptr);
        for (int64_t n : {1, 2, 3, 4, 5, 8}) {
          std::vector<float> first(size_t(n * out));
          const LinearOutput some{w.bytes.data(), wt, out, bias.data(), DType::F32, first.data(), {}};
          k.linear_many_rows(x.data(), n, in, &some, 1, nullptr);
          ASSERT_EQ(std::memcmp(first.data(), together.data(), first.size() * sizeof(float)), 0)
              << isa_name(isa) << " in=" << in << " " << dtype_name(wt) << " first " << n << " rows";
        }
      }
    }
}

TEST(RowVariants, AttentionRowsAreTheSameAloneAndTogether) {
  std::mt19937 rng(42);
  const int64_t rows = 9, n_heads = 6, n_kv = 2, head_dim = 64, context = 700;
  for (DType ct : {DType::F32, DType::F16}) {
    const size_t cache_n = size_t(n_kv * context * head_dim);
    const test::Stored kc = test::stored(rng, cache_n, ct), vc = test::stored(rng, cache_n, ct);
    const std::vector<float> q = random_floats(rng, size_t(rows * n_heads * head_dim), -2.0f, 2.0f);
    // Row r sees slots 0 .. 600 + r, as the rows of a step verifying drafts at position 600 do.
    std::vector<float> mask(size_t(rows * context), kNegInf);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j <= 600 + r; ++j) mask[size_t(r * context + j)] = 0;
    for (Isa isa : all_isas())
      for (int threads : {1, 2}) {
        const KernelTable& k = *kernel_table(isa);
        for (auto fn : {k.attention_few_rows, k.attention_many_rows}) {
          std::vector<float> together(q.size());
          with_threads(threads, [&] {
            fn(q.data(), rows, n_heads, n_kv, head_dim, kc.bytes.data(), vc.bytes.data(), ct, context, mask.data(),
               0.125f, 0.0f, together.data());
          });
          for (int64_t r = 0; r < rows; ++r) {
            std::vector<float> alone(size_t(n_heads * head_dim));
            with_threads(threads, [&] {
              fn(q.data() + r * n_heads * head_dim, 1, n_heads, n_kv, head_dim, kc.bytes.data(), vc.bytes.data(), ct,
                 context, mask.data() + r * context, 0.125f, 0.0f, alone.data());
            });
            ASSERT_EQ(std::memcmp(alone.data(), together.data() + r * n_heads * head_dim, alone.size() * sizeof(float)),
                      0)
                << isa_name(isa) << " threads=" << threads << (fn == k.attention_few_rows ? " few" : " many") << " "
                << dtype_name(ct) << " row " << r;
          }
        }
      }
  }
}

}  // namespace
}  // namespace hfstatic::kernels
