// Attention with its scores soft-capped (Gemma 2's attn_logit_softcapping: s = cap * tanh(s / cap)
// after the scale, before the mask): the scalar kernel against values worked out by hand, and every
// SIMD path (many rows, few rows over one slice or several, the any-head_dim path; float32 and
// float16 caches) against the scalar kernel with caps that bite.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"

namespace hfstatic::kernels {
namespace {

using namespace test;

// One query (1, 0) over two keys (4, 0) and (0, 0), values (1, 0) and (0, 1), scale 1: the scores
// 4 and 0 become 2 tanh(2) = 1.9280551601516338 and 0 with a cap of 2, so the output is
// (p, 1 - p) with p = 1 / (1 + e^-1.9280551601516338) = 0.8730339992... (0.9820137... uncapped).
TEST(AttentionSoftcap, ScalarCapsTheScaledScoresBeforeTheMask) {
  const auto& k = *kernel_table(Isa::Scalar);
  const std::vector<float> q = {1.0f, 0.0f}, kc = {4.0f, 0.0f, 0.0f, 0.0f}, vc = {1.0f, 0.0f, 0.0f, 1.0f};
  const std::vector<float> mask = {0.0f, 0.0f};
  auto run = [&](float scale, float cap, const std::vector<float>& m) {
    std::vector<float> out(2);
    k.attention(q.data(), 1, 1, 1, 2, kc.data(), vc.data(), DType::F32, 2, m.data(), scale, cap, out.data());
    return out;
  };
  const double capped = 1.0 / (1.0 + std::exp(-2.0 * std::tanh(2.0)));
  std::vector<float> got = run(1.0f, 2.0f, mask);
  EXPECT_NEAR(got[0], capped, 1e-6);
  EXPECT_NEAR(got[1], 1.0 - capped, 1e-6);
  got = run(1.0f, 0.0f, mask);
  EXPECT_NEAR(got[0], 1.0 / (1.0 + std::exp(-4.0)), 1e-6);
  // The scale comes first: 0.5 * 4 = 2 is capped to 2 tanh(1).
  got = run(0.5f, 2.0f, mask);
  EXPECT_NEAR(got[0], 1.0 / (1.0 + std::exp(-2.0 * std::tanh(1.0))), 1e-6);
  // The mask is added after the cap: a mask of -3 on slot 0 moves its capped score to -1.07194...
  got = run(1.0f, 2.0f, {-3.0f, 0.0f});
  EXPECT_NEAR(got[0], 1.0 / (1.0 + std::exp(3.0 - 2.0 * std::tanh(2.0))), 1e-6);
}

struct CapCase {
  int64_t rows, n_heads, n_kv_heads, head_dim, context;
};

// Queries and keys in [-3, 3]: scaled scores reach about 10, so caps of 1.5 and 4 change them
// everywhere, and 50 (Gemma 2's) barely.
void expect_simd_matches_scalar(const CapCase& c, std::mt19937& rng) {
  const auto& ref = *kernel_table(Isa::Scalar);
  for (DType ct : {DType::F32, DType::F16})
    for (float cap : {1.5f, 4.0f, 50.0f}) {
      const size_t cache_n = size_t(c.n_kv_heads * c.context * c.head_dim);
      Stored kc = stored(rng, cache_n, ct, -3.0f, 3.0f), vc = stored(rng, cache_n, ct);
      std::vector<float> q = random_floats(rng, size_t(c.rows * c.n_heads * c.head_dim), -3.0f, 3.0f);
      // Causal prefixes with holes, a window, and (with several rows) a fully masked last row.
      std::vector<float> mask(size_t(c.rows * c.context), kNegInf);
      for (int64_t r = 0; r + (c.rows > 1 ? 1 : 0) < c.rows; ++r) {
        const int64_t visible = c.context - r * 3 > 0 ? c.context - r * 3 : 1;
        for (int64_t j = r % 2 ? visible / 3 : 0; j < visible; ++j)
          mask[size_t(r * c.context + j)] = j % 7 == 4 ? kNegInf : (j % 3 == 1 ? -0.5f : 0.0f);
      }
      const float scale = 1.0f / std::sqrt(float(c.head_dim));
      std::vector<float> want(q.size()), uncapped(q.size());
      ref.attention(q.data(), c.rows, c.n_heads, c.n_kv_heads, c.head_dim, kc.bytes.data(), vc.bytes.data(), ct,
                    c.context, mask.data(), scale, cap, want.data());
      ref.attention(q.data(), c.rows, c.n_heads, c.n_kv_heads, c.head_dim, kc.bytes.data(), vc.bytes.data(), ct,
                    c.context, mask.data(), scale, 0.0f, uncapped.data());
      float change = 0;
      for (size_t i = 0; i < want.size(); ++i) change = std::max(change, std::fabs(want[i] - uncapped[i]));
      if (cap < 10) {
        EXPECT_GT(change, 0.05f) << "a cap of " << cap << " should change the output";
      }
      for (Isa isa : simd_isas()) {
        const KernelTable& k = *kernel_table(isa);
        for (auto [fn, name] : {std::pair{k.attention, "picked"}, std::pair{k.attention_few_rows, "few rows"},
                                std::pair{k.attention_many_rows, "many rows"}})
          for (int threads : {1, 3}) {
            std::vector<float> got(q.size(), 99.0f);
            with_threads(threads, [&] {
              fn(q.data(), c.rows, c.n_heads, c.n_kv_heads, c.head_dim, kc.bytes.data(), vc.bytes.data(), ct, c.context,
                 mask.data(), scale, cap, got.data());
            });
            expect_close(got, want, {}, 2e-5f,
                         label(isa, threads) + " " + name + " cap " + std::to_string(cap) + " " + dtype_name(ct) +
                             " rows=" + std::to_string(c.rows) + " head_dim=" + std::to_string(c.head_dim) +
                             " context=" + std::to_string(c.context));
          }
      }
    }
}

TEST(AttentionSoftcap, SimdMatchesScalar) {
  std::mt19937 rng(23);
  // Decode rows over one slice and over several (context 700), head_dim whole vectors or not (the
  // any-head_dim path), prefill blocks of 16 rows and more, grouped and plain heads.
  const CapCase cases[] = {{1, 4, 2, 32, 40},  {2, 8, 1, 64, 700},  {3, 6, 3, 128, 90},
                           {1, 3, 3, 17, 33},  {2, 4, 2, 5, 20},    {4, 4, 2, 32, 24},
                           {16, 6, 2, 64, 70}, {21, 9, 3, 64, 150}, {7, 4, 1, 20, 37}};
  for (const CapCase& c : cases) expect_simd_matches_scalar(c, rng);
}

// Masked slots still hold garbage the cap must not let through: the cap comes before the mask,
// whose -inf wins over a capped NaN or infinity.
TEST(AttentionSoftcap, MaskedSlotsStayOutWhateverTheyHold) {
  std::mt19937 rng(29);
  const auto& ref = *kernel_table(Isa::Scalar);
  const int64_t n_heads = 4, n_kv = 2, head_dim = 32, context = 64;
  const float garbage[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), kNegInf};
  for (int64_t rows : {1, 6})
    for (DType ct : {DType::F32, DType::F16}) {
      const size_t cache_n = size_t(n_kv * context * head_dim);
      Stored kc = stored(rng, cache_n, ct, -3.0f, 3.0f), vc = stored(rng, cache_n, ct);
      std::vector<float> q = random_floats(rng, size_t(rows * n_heads * head_dim), -3.0f, 3.0f);
      std::vector<float> mask(size_t(rows * context), kNegInf);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < 40 + r; ++j) mask[size_t(r * context + j)] = j == 11 ? kNegInf : 0.0f;
      std::vector<float> want(q.size());
      ref.attention(q.data(), rows, n_heads, n_kv, head_dim, kc.bytes.data(), vc.bytes.data(), ct, context, mask.data(),
                    0.2f, 3.0f, want.data());
      for (int64_t g = 0; g < n_kv; ++g)
        for (int64_t j = 0; j < context; ++j) {
          if (j != 11 && j < 40 + rows - 1) continue;
          for (int64_t d = 0; d < head_dim; ++d) {
            const size_t i = size_t((g * context + j) * head_dim + d);
            convert_floats(&garbage[size_t(j + d) % 3], DType::F32, kc.bytes.data() + i * dtype_size(ct), ct, 1);
            convert_floats(&garbage[size_t(j + d + 1) % 3], DType::F32, vc.bytes.data() + i * dtype_size(ct), ct, 1);
          }
        }
      for (Isa isa : simd_isas()) {
        std::vector<float> got(q.size(), 99.0f);
        kernel_table(isa)->attention(q.data(), rows, n_heads, n_kv, head_dim, kc.bytes.data(), vc.bytes.data(), ct,
                                     context, mask.data(), 0.2f, 3.0f, got.data());
        expect_close(got, want, {}, 2e-5f,
                     std::string(isa_name(isa)) + " capped attention over garbage rows=" + std::to_string(rows));
      }
    }
}

}  // namespace
}  // namespace hfstatic::kernels
