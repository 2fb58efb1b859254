// LinearOutput::x_row / x_rows: a group whose products each read their own rows of x (a
// mixture's experts) gives each product the bits of those rows run alone, with a folded SiLU
// gate, in every table and with float, float16, int8 and int4 weights.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "quant_test_support.h"

namespace hfstatic::kernels {
namespace {

using test::random_floats;
using test::with_threads;

TEST(LinearOwnRows, EachProductOverItsRowsIsThoseRowsAlone) {
  std::mt19937 rng(7);
  const int64_t in = 256, out = 40;
  // Product p reads rows [first[p], first[p] + count[p]) of x.
  const std::vector<int64_t> first = {0, 2, 3}, count = {2, 1, 3};
  const int64_t rows = 6, products = int64_t(first.size());
  const std::vector<float> gate = random_floats(rng, size_t(rows * in));
  const std::vector<float> up = random_floats(rng, size_t(rows * in));
  std::vector<test::Stored> f16, f32;
  std::vector<test::Quantized> q4, q8;
  for (int64_t p = 0; p < products; ++p) {
    f16.push_back(test::stored(rng, size_t(out * in), DType::F16));
    f32.push_back(test::stored(rng, size_t(out * in), DType::F32));
    q4.push_back(test::quantize(rng, DType::I4, out, in, 32));
    q8.push_back(test::quantize(rng, DType::I8, out, in, 64));
  }
  std::vector<Isa> isas = {Isa::Scalar};
  for (Isa isa : test::simd_isas()) isas.push_back(isa);
  for (Isa isa : isas)
    for (int threads : {1, 2})
      for (int kind = 0; kind < 4; ++kind) {
        const KernelTable& k = *kernel_table(isa);
        auto output = [&](int64_t p, float* y) -> LinearOutput {
          if (kind == 0) return {f32[p].bytes.data(), DType::F32, out, nullptr, DType::F32, y, {}};
          if (kind == 1) return {f16[p].bytes.data(), DType::F16, out, nullptr, DType::F32, y, {}};
          return (kind == 2 ? q4 : q8)[p].output(y);
        };
        for (auto fn : {k.linear_few_rows, k.linear_many_rows}) {
          std::vector<float> together(size_t(rows * out), -1.0f);
          std::vector<LinearOutput> group;
          for (int64_t p = 0; p < products; ++p) {
            group.push_back(output(p, together.data() + first[p] * out));
            group.back().x_row = first[p];
            group.back().x_rows = count[p];
          }
          LinearFusion silu;
          silu.up = up.data();
          with_threads(threads, [&] { fn(gate.data(), rows, in, group.data(), int(products), &silu); });
          for (int64_t p = 0; p < products; ++p) {
            std::vector<float> alone(size_t(count[p] * out));
            const LinearOutput one = output(p, alone.data());
            LinearFusion own_silu;
            own_silu.up = up.data() + first[p] * in;
            with_threads(threads,
                         [&] { k.linear_few_rows(gate.data() + first[p] * in, count[p], in, &one, 1, &own_silu); });
            ASSERT_EQ(std::memcmp(alone.data(), together.data() + first[p] * out, alone.size() * sizeof(float)), 0)
                << isa_name(isa) << " threads=" << threads << " kind " << kind << " product " << p
                << (fn == k.linear_few_rows ? " few" : " many");
          }
        }
      }
}

}  // namespace
}  // namespace hfstatic::kernels
