// Attention, every SIMD path against the portable scalar kernel: the many-row (prefill) blocks,
// the few-row (decode) KV-head tasks and their slices of the context, the any-head_dim path;
// float32 and float16 caches, 1 and 2 threads (and more where the slices depend on it), causal,
// holed, windowed and fully masked rows, and what masked or overflowed cache rows hold.
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

const int kThreads[] = {1, 2};

TEST(Attention, MatchesScalar) {
  std::mt19937 rng(5);
  const auto& ref = *kernel_table(Isa::Scalar);
  struct Case {
    int64_t rows, n_heads, n_kv_heads, head_dim, context;
  };
  // Rows >= 4 take the blocked (prefill) path: several row blocks, head groups of 1-7 (queries
  // four at a time), head_dim 4 and 8 vectors or neither, and off the 8-wide transpose.
  const Case cases[] = {{1, 4, 2, 16, 33}, {3, 3, 3, 5, 7},     {9, 6, 1, 64, 40},    {1, 9, 3, 64, 512},
                        {5, 2, 1, 72, 1},  {16, 14, 2, 64, 64}, {2, 4, 4, 128, 19},   {4, 2, 2, 17, 50},
                        {3, 4, 2, 32, 20}, {40, 9, 3, 64, 100}, {33, 14, 2, 64, 150}, {20, 6, 2, 128, 70},
                        {18, 5, 1, 20, 37}};
  for (const Case& c : cases)
    for (DType ct : {DType::F32, DType::F16}) {
      const size_t cache_n = size_t(c.n_kv_heads * c.context * c.head_dim);
      Stored kc = stored(rng, cache_n, ct, -2.0f, 2.0f), vc = stored(rng, cache_n, ct);
      std::vector<float> q = random_floats(rng, size_t(c.rows * c.n_heads * c.head_dim), -2.0f, 2.0f);
      // Causal masks at random offsets, random holes, and a fully masked last row.
      std::vector<float> mask(size_t(c.rows * c.context), kNegInf);
      std::uniform_int_distribution<int64_t> start(0, c.context - 1);
      for (int64_t r = 0; r < c.rows; ++r) {
        if (r == c.rows - 1 && c.rows > 1) continue;
        const int64_t visible = std::min<int64_t>(c.context, start(rng) + 1);
        for (int64_t j = 0; j < visible; ++j)
          mask[size_t(r * c.context + j)] = (j % 5 == 3 && visible > 4) ? kNegInf : 0.0f;
      }
      const float scale = 1.0f / std::sqrt(float(c.head_dim));
      std::vector<float> want(q.size());
      ref.attention(q.data(), c.rows, c.n_heads, c.n_kv_heads, c.head_dim, kc.bytes.data(), vc.bytes.data(), ct,
                    c.context, mask.data(), scale, 0.0f, want.data());
      if (c.rows > 1) {
        for (int64_t i = 0; i < c.n_heads * c.head_dim; ++i)
          ASSERT_EQ(want[size_t((c.rows - 1) * c.n_heads * c.head_dim + i)], 0.0f);
      }
      for (Isa isa : simd_isas())
        for (int threads : kThreads) {
          std::vector<float> got(q.size(), 99.0f);
          with_threads(threads, [&] {
            kernel_table(isa)->attention(q.data(), c.rows, c.n_heads, c.n_kv_heads, c.head_dim, kc.bytes.data(),
                                         vc.bytes.data(), ct, c.context, mask.data(), scale, 0.0f, got.data());
          });
          expect_close(got, want, {}, 5e-6f,
                       label(isa, threads) + " attention " + dtype_name(ct) +
                           " head_dim=" + std::to_string(c.head_dim) + " context=" + std::to_string(c.context));
        }
    }
}

// A slot that no row can see may hold anything (a cache row never written, or one left from a
// longer sequence): NaN and infinities there must not reach any output.
TEST(Attention, IgnoresWhatMaskedSlotsHold) {
  std::mt19937 rng(15);
  const auto& ref = *kernel_table(Isa::Scalar);
  const int64_t n_heads = 6, n_kv = 2, head_dim = 64, context = 90;
  for (int64_t rows : {1, 3, 24})
    for (DType ct : {DType::F32, DType::F16}) {
      const size_t cache_n = size_t(n_kv * context * head_dim);
      Stored kc = stored(rng, cache_n, ct), vc = stored(rng, cache_n, ct);
      std::vector<float> q = random_floats(rng, size_t(rows * n_heads * head_dim));
      // Row r sees the slots [0, 30 + r) but 7 and 28, which hold garbage, as do the slots past
      // what the last row sees.
      auto hole = [](int64_t j) { return j == 7 || j == 28; };
      std::vector<float> mask(size_t(rows * context), kNegInf);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < 30 + r; ++j) mask[size_t(r * context + j)] = hole(j) ? kNegInf : 0.0f;
      const float scale = 0.125f;
      std::vector<float> want(q.size());
      ref.attention(q.data(), rows, n_heads, n_kv, head_dim, kc.bytes.data(), vc.bytes.data(), ct, context, mask.data(),
                    scale, 0.0f, want.data());
      Stored kg = kc, vg = vc;
      const float garbage[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                               kNegInf};
      for (int64_t g = 0; g < n_kv; ++g)
        for (int64_t j = 0; j < context; ++j) {
          if (!hole(j) && j < 30 + rows - 1) continue;
          for (int64_t d = 0; d < head_dim; ++d) {
            const float bad = garbage[size_t(j + d) % 3];
            const size_t i = size_t((g * context + j) * head_dim + d);
            convert_floats(&bad, DType::F32, kg.bytes.data() + i * dtype_size(ct), ct, 1);
            convert_floats(&bad, DType::F32, vg.bytes.data() + i * dtype_size(ct), ct, 1);
          }
        }
      const std::vector<float> all_visible(mask.size(), 0.0f);
      for (Isa isa : simd_isas())
        for (int threads : kThreads) {
          std::vector<float> got(q.size(), 99.0f);
          with_threads(threads, [&] {
            // First every slot visible, garbage and all, so the kernels' working copies of keys
            // and values hold it; the masked call after must not pick any of it up.
            kernel_table(isa)->attention(q.data(), rows, n_heads, n_kv, head_dim, kg.bytes.data(), vg.bytes.data(), ct,
                                         context, all_visible.data(), scale, 0.0f, got.data());
            kernel_table(isa)->attention(q.data(), rows, n_heads, n_kv, head_dim, kg.bytes.data(), vg.bytes.data(), ct,
                                         context, mask.data(), scale, 0.0f, got.data());
          });
          expect_close(
              got, want, {}, 5e-6f,
              label(isa, threads) + " attention over garbage, rows=" + std::to_string(rows) + " " + dtype_name(ct));
        }
    }
}

// A key or value row that overflowed (infinity in a float16 cache) reaches only the rows that
// see its slot; the others, processed in the same blocks and tiles, must not pick it up: those
// before the slot, and those after it whose mask has a hole there (an infinite score plus the
// mask's -inf would be NaN: a masked slot is -inf whatever it holds).
TEST(Attention, KeepsAnInfiniteKeyOrValueToTheRowsThatSeeIt) {
  std::mt19937 rng(16);
  const auto& ref = *kernel_table(Isa::Scalar);
  const int64_t n_heads = 6, n_kv = 2, head_dim = 64, context = 40, rows = 24;
  // Slots at different lanes of a vector, the hole's rows reaching one to three vectors past it.
  for (int64_t bad_slot : {1, 4, 9, 15})
    for (bool in_keys : {false, true})
      for (DType ct : {DType::F32, DType::F16}) {
        const int64_t hole_from = bad_slot + 3;
        auto sees_bad_slot = [&](int64_t r) { return r >= bad_slot && r < hole_from; };
        const size_t cache_n = size_t(n_kv * context * head_dim);
        Stored kc = stored(rng, cache_n, ct), vc = stored(rng, cache_n, ct);
        const float inf = std::numeric_limits<float>::infinity();
        Stored& bad = in_keys ? kc : vc;
        for (int64_t g = 0; g < n_kv; ++g)
          convert_floats(&inf, DType::F32,
                         bad.bytes.data() + size_t((g * context + bad_slot) * head_dim + 5) * dtype_size(ct), ct, 1);
        std::vector<float> q = random_floats(rng, size_t(rows * n_heads * head_dim));
        // Causal (row r sees [0, r]), but the rows from hole_from on do not see the bad slot.
        std::vector<float> mask(size_t(rows * context), kNegInf);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j <= r; ++j)
            mask[size_t(r * context + j)] = j == bad_slot && r >= hole_from ? kNegInf : 0.0f;
        std::vector<float> want(q.size());
        ref.attention(q.data(), rows, n_heads, n_kv, head_dim, kc.bytes.data(), vc.bytes.data(), ct, context,
                      mask.data(), 0.125f, 0.0f, want.data());
        const size_t row_size = size_t(n_heads * head_dim);
        for (int64_t r = 0; r < rows; ++r)
          for (size_t i = 0; i < row_size && !sees_bad_slot(r); ++i)
            ASSERT_TRUE(std::isfinite(want[size_t(r) * row_size + i])) << r;
        if (!in_keys) {
          ASSERT_FALSE(std::isfinite(want[size_t(bad_slot) * row_size + 5])) << "the row at the slot sees the value";
        }
        for (Isa isa : simd_isas())
          for (int threads : kThreads) {
            std::vector<float> got(q.size(), 99.0f);
            with_threads(threads, [&] {
              kernel_table(isa)->attention(q.data(), rows, n_heads, n_kv, head_dim, kc.bytes.data(), vc.bytes.data(),
                                           ct, context, mask.data(), 0.125f, 0.0f, got.data());
            });
            const std::string what = label(isa, threads) + " attention with an infinite " +
                                     (in_keys ? "key" : "value") + " at slot " + std::to_string(bad_slot) + ", " +
                                     dtype_name(ct);
            for (int64_t r = 0; r < rows; ++r) {
              const auto row = [&](const std::vector<float>& v) {
                return std::vector<float>(v.begin() + std::ptrdiff_t(size_t(r) * row_size),
                                          v.begin() + std::ptrdiff_t(size_t(r + 1) * row_size));
              };
              if (!sees_bad_slot(r)) {
                expect_close(row(got), row(want), {}, 5e-6f, what + ", row " + std::to_string(r));
              } else if (!in_keys) {
                EXPECT_FALSE(std::isfinite(got[size_t(r) * row_size + 5])) << what << ", row " << r;
              }
            }
          }
      }
}

// Few rows over a long context: the decode path cuts each row's visible slots into slices and
// merges them. Rows see a causal prefix with holes, a window that leaves whole slices masked, or
// nothing; the slots no row sees hold NaN and infinities. The result is the same, bit for bit,
// with any number of threads.
TEST(Attention, DecodeSlicesMergeToTheScalarResult) {
  std::mt19937 rng(17);
  const auto& ref = *kernel_table(Isa::Scalar);
  struct Layout {
    int64_t n_heads, n_kv_heads, head_dim;
  };
  const Layout layouts[] = {{9, 3, 64}, {14, 2, 64}, {8, 1, 128}, {4, 4, 32}, {7, 7, 16}};
  const int64_t context = 700;
  const float garbage[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), kNegInf};
  for (const Layout& l : layouts)
    for (int64_t rows : {1, 2, 3})
      for (DType ct : {DType::F32, DType::F16}) {
        const size_t cache_n = size_t(l.n_kv_heads * context * l.head_dim);
        Stored kc = stored(rng, cache_n, ct, -2.0f, 2.0f), vc = stored(rng, cache_n, ct);
        std::vector<float> q = random_floats(rng, size_t(rows * l.n_heads * l.head_dim), -2.0f, 2.0f);
        // Row 0: slots [0, 651) less every 97th; row 1: the window [420, 550); row 2: nothing.
        std::vector<float> mask(size_t(rows * context), kNegInf);
        std::vector<bool> seen(size_t(context), false);
        for (int64_t j = 0; j < context; ++j) {
          const bool row0 = j < 651 && j % 97 != 5, row1 = j >= 420 && j < 550;
          if (row0) mask[size_t(j)] = 0.0f;
          if (rows > 1 && row1) mask[size_t(context + j)] = 0.0f;
          seen[size_t(j)] = row0 || (rows > 1 && row1);
        }
        std::vector<float> want(q.size());
        const float scale = 1.0f / std::sqrt(float(l.head_dim));
        ref.attention(q.data(), rows, l.n_heads, l.n_kv_heads, l.head_dim, kc.bytes.data(), vc.bytes.data(), ct,
                      context, mask.data(), scale, 0.0f, want.data());
        for (int64_t g = 0; g < l.n_kv_heads; ++g)
          for (int64_t j = 0; j < context; ++j)
            for (int64_t d = 0; d < l.head_dim && !seen[size_t(j)]; ++d) {
              const size_t i = size_t((g * context + j) * l.head_dim + d);
              convert_floats(&garbage[size_t(j + d) % 3], DType::F32, kc.bytes.data() + i * dtype_size(ct), ct, 1);
              convert_floats(&garbage[size_t(j + 2 * d) % 3], DType::F32, vc.bytes.data() + i * dtype_size(ct), ct, 1);
            }
        for (int64_t i = 0; i < l.n_heads * l.head_dim && rows > 2; ++i) {
          ASSERT_EQ(want[size_t(2 * l.n_heads * l.head_dim + i)], 0.0f);
        }
        for (Isa isa : simd_isas()) {
          std::vector<float> one_thread;
          for (int threads : {1, 2, 3, 5}) {
            std::vector<float> got(q.size(), 99.0f);
            with_threads(threads, [&] {
              kernel_table(isa)->attention(q.data(), rows, l.n_heads, l.n_kv_heads, l.head_dim, kc.bytes.data(),
                                           vc.bytes.data(), ct, context, mask.data(), scale, 0.0f, got.data());
            });
            const std::string what = label(isa, threads) + " decode attention rows=" + std::to_string(rows) +
                                     " heads " + std::to_string(l.n_heads) + "/" + std::to_string(l.n_kv_heads) +
                                     " head_dim " + std::to_string(l.head_dim) + " " + dtype_name(ct);
            expect_close(got, want, {}, 5e-6f, what);
            if (threads == 1) one_thread = got;
            ASSERT_EQ(std::memcmp(got.data(), one_thread.data(), got.size() * sizeof(float)), 0) << what;
          }
        }
      }
}

}  // namespace
}  // namespace hfstatic::kernels
