// LinearOutput::x_row: a group whose products each read their own row of x (a mixture of
// experts' down projections) gives each product the bits of that row run alone, with a folded
// SiLU gate, in every table and with float, float16, int8 and int4 weights.
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

TEST(LinearOwnRows, EachProductOverItsRowIsThatRowAlone) {
  std::mt19937 rng(7);
  const int64_t rows = 3, in = 256, out = 40;
  const std::vector<float> gate = random_floats(rng, size_t(rows * in));
  const std::vector<float> up = random_floats(rng, size_t(rows * in));
  // One weight matrix per row, of each kind.
  std::vector<test::Stored> f16, f32;
  std::vector<test::Quantized> q4, q8;
  for (int64_t r = 0; r < rows; ++r) {
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
        auto output = [&](int64_t r, float* y) -> LinearOutput {
          if (kind == 0) return {f32[r].bytes.data(), DType::F32, out, nullptr, DType::F32, y, {}};
          if (kind == 1) return {f16[r].bytes.data(), DType::F16, out, nullptr, DType::F32, y, {}};
          return (kind == 2 ? q4 : q8)[r].output(y);
        };
        for (auto fn : {k.linear_few_rows, k.linear_many_rows}) {
          std::vector<float> together(size_t(rows * out), -1.0f);
          std::vector<LinearOutput> group;
          for (int64_t r = 0; r < rows; ++r) {
            group.push_back(output(r, together.data() + r * out));
            group.back().x_row = r;
          }
          LinearFusion silu;
          silu.up = up.data();
          with_threads(threads, [&] { fn(gate.data(), rows, in, group.data(), int(rows), &silu); });
          for (int64_t r = 0; r < rows; ++r) {
            std::vector<float> alone(static_cast<size_t>(out));
            const LinearOutput one = output(r, alone.data());
            LinearFusion row_silu;
            row_silu.up = up.data() + r * in;
            with_threads(threads, [&] { k.linear_few_rows(gate.data() + r * in, 1, in, &one, 1, &row_silu); });
            ASSERT_EQ(std::memcmp(alone.data(), together.data() + r * out, alone.size() * sizeof(float)), 0)
                << isa_name(isa) << " threads=" << threads << " kind " << kind << " row " << r
                << (fn == k.linear_few_rows ? " few" : " many");
          }
        }
      }
}

}  // namespace
}  // namespace hfstatic::kernels
