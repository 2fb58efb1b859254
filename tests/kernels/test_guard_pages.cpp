// Every kernel of every ISA this CPU runs touches only the bytes of the operands it was given:
// each operand (activations, weights, quantized values and their scales, bias, norm weights,
// caches, mask, positions, outputs) sits against an inaccessible page, after it and then before
// it, so one byte read or written past either end faults. Shapes are the awkward ones: widths
// that are not a multiple of the vector width, a quantization group as wide as the row, rows
// of fewer groups than a block, one row and many. Each guarded result must also be bit for bit
// what the same kernel gives on ordinary memory.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "guarded_memory.h"
#include "kernel_test_support.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "quant_test_support.h"

namespace hfstatic::kernels {
namespace {

using hfstatic::test::Guard;
using hfstatic::test::GuardedBuffer;
using test::kNegInf;
using test::random_floats;
using test::with_threads;

const Guard kGuards[] = {Guard::After, Guard::Before};
const int kThreads[] = {1, 2};

std::vector<Isa> all_isas() {
  std::vector<Isa> out = {Isa::Scalar};
  for (Isa isa : test::simd_isas()) out.push_back(isa);
  return out;
}

std::string where(Isa isa, Guard guard, int threads) {
  return std::string(isa_name(isa)) + (guard == Guard::After ? " guard after" : " guard before") +
         " threads=" + std::to_string(threads);
}

std::vector<uint8_t> stored_bytes(std::mt19937& rng, size_t n, DType type) { return test::stored(rng, n, type).bytes; }

// The operands of a linear group, and their guarded copies.
struct LinearCase {
  int64_t rows, in;
  std::vector<float> x, up;
  std::vector<uint8_t> norm_w;
  DType norm_type = DType::F32;
  struct Output {
    DType w_type;
    int64_t out, group = 0;
    std::vector<uint8_t> w;
    std::vector<uint16_t> scales;
    std::vector<uint8_t> bias;  // empty: none
    DType bias_type = DType::F32;
  };
  std::vector<Output> outputs;
  enum class Fold { None, Norm, Silu, Gelu } fold = Fold::None;
};

// Runs the case's linear group with every operand in ordinary memory (guard null) or each in
// its own guarded buffer; returns the outputs one after another.
std::vector<float> run_linear(const KernelTable& k, const LinearCase& c, const Guard* guard, int threads) {
  std::vector<std::unique_ptr<GuardedBuffer>> keep;
  auto place = [&](const auto& v) -> void* {
    if (!guard) return const_cast<void*>(static_cast<const void*>(v.data()));
    keep.push_back(std::make_unique<GuardedBuffer>(v, *guard));
    return keep.back()->as();
  };
  std::vector<std::vector<float>> plain_y;
  std::vector<LinearOutput> outs;
  for (const auto& o : c.outputs) {
    std::vector<float> y(size_t(c.rows * o.out), 0.0f);
    float* yp = guard ? static_cast<float*>(place(y)) : (plain_y.push_back(y), plain_y.back().data());
    outs.push_back({place(o.w),
                    o.w_type,
                    o.out,
                    o.bias.empty() ? nullptr : place(o.bias),
                    o.bias_type,
                    yp,
                    {o.scales.empty() ? nullptr : static_cast<const uint16_t*>(place(o.scales)), o.group}});
  }
  LinearFusion fusion;
  if (c.fold == LinearCase::Fold::Norm) {
    fusion.norm_w = place(c.norm_w);
    fusion.norm_type = c.norm_type;
    fusion.norm_eps = 1e-5f;
  } else if (c.fold != LinearCase::Fold::None) {
    fusion.up = static_cast<const float*>(place(c.up));
    fusion.gelu_tanh = c.fold == LinearCase::Fold::Gelu;
  }
  const float* x = static_cast<const float*>(place(c.x));
  with_threads(threads, [&] {
    k.linear_group(x, c.rows, c.in, outs.data(), int(outs.size()),
                   c.fold == LinearCase::Fold::None ? nullptr : &fusion);
  });
  std::vector<float> all;
  for (const auto& o : outs) all.insert(all.end(), o.y, o.y + c.rows * o.out);
  return all;
}

void expect_linear_guarded(const LinearCase& c, const std::string& what) {
  for (Isa isa : all_isas())
    for (int threads : kThreads) {
      const KernelTable& k = *kernel_table(isa);
      const std::vector<float> want = run_linear(k, c, nullptr, threads);
      for (Guard guard : kGuards) {
        const std::vector<float> got = run_linear(k, c, &guard, threads);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << where(isa, guard, threads) << " " << what << " at " << i;
      }
    }
}

LinearCase::Output float_output(std::mt19937& rng, DType w_type, int64_t out, int64_t in, bool bias) {
  LinearCase::Output o;
  o.w_type = w_type;
  o.out = out;
  o.w = stored_bytes(rng, size_t(out * in), w_type);
  if (bias) o.bias = stored_bytes(rng, size_t(out), DType::F16), o.bias_type = DType::F16;
  return o;
}

LinearCase::Output quant_output(std::mt19937& rng, DType w_type, int64_t out, int64_t in, int64_t group, bool bias) {
  const test::Quantized m = test::quantize(rng, w_type, out, in, group);
  LinearCase::Output o;
  o.w_type = w_type;
  o.out = out;
  o.group = group;
  o.w = m.w;
  o.scales = m.scales;
  if (bias) o.bias = stored_bytes(rng, size_t(out), DType::F32);
  return o;
}

LinearCase linear_case(std::mt19937& rng, int64_t rows, int64_t in) {
  LinearCase c;
  c.rows = rows;
  c.in = in;
  c.x = random_floats(rng, size_t(rows * in));
  c.up = random_floats(rng, size_t(rows * in));
  return c;
}

std::string shape(int64_t rows, int64_t in, int64_t out) {
  return "rows=" + std::to_string(rows) + " in=" + std::to_string(in) + " out=" + std::to_string(out);
}

TEST(GuardPages, FloatLinear) {
  std::mt19937 rng(11);
  for (DType w_type : {DType::F32, DType::F16, DType::BF16})
    for (int64_t rows : {1, 2, 3, 4, 5, 9})
      for (int64_t in : {1, 7, 8, 17, 33, 100})
        for (int64_t out : {1, 3, 19}) {
          LinearCase c = linear_case(rng, rows, in);
          c.outputs.push_back(float_output(rng, w_type, out, in, out == 3));
          expect_linear_guarded(c, std::string(dtype_name(w_type)) + " " + shape(rows, in, out));
        }
}

// Every group size the loader accepts, rows of one group (the group as wide as the row), of
// fewer groups than a block of 8, of whole blocks and of blocks with a tail.
TEST(GuardPages, QuantizedLinear) {
  std::mt19937 rng(12);
  for (DType w_type : {DType::I8, DType::I4})
    for (int64_t group : {32, 64, 128})
      for (int64_t groups : {1, 3, 8, 9, 17})
        for (int64_t rows : {1, 2, 4, 5})
          for (int64_t out : {1, 5}) {
            const int64_t in = group * groups;
            LinearCase c = linear_case(rng, rows, in);
            c.outputs.push_back(quant_output(rng, w_type, out, in, group, out == 5));
            expect_linear_guarded(
                c, std::string(dtype_name(w_type)) + " group=" + std::to_string(group) + " " + shape(rows, in, out));
          }
}

// Groups of several products (float and quantized side by side) with each folded op.
TEST(GuardPages, LinearGroupsWithFoldedOps) {
  std::mt19937 rng(13);
  for (auto fold : {LinearCase::Fold::Norm, LinearCase::Fold::Silu, LinearCase::Fold::Gelu})
    for (DType norm_type : {DType::F32, DType::F16, DType::BF16})
      for (int64_t rows : {1, 3, 4, 6})
        for (int64_t in : {64, 96, 576}) {
          LinearCase c = linear_case(rng, rows, in);
          c.fold = fold;
          c.norm_type = norm_type;
          c.norm_w = stored_bytes(rng, size_t(in), norm_type);
          c.outputs.push_back(float_output(rng, DType::F16, 7, in, true));
          c.outputs.push_back(quant_output(rng, DType::I8, 5, in, 32, false));
          c.outputs.push_back(quant_output(rng, DType::I4, 3, in, in % 64 == 0 ? 64 : 32, true));
          expect_linear_guarded(
              c, "fold " + std::to_string(int(fold)) + " norm " + dtype_name(norm_type) + " " + shape(rows, in, 15));
        }
}

TEST(GuardPages, RowsAndQuantizedRows) {
  std::mt19937 rng(14);
  for (Isa isa : all_isas()) {
    const KernelTable& k = *kernel_table(isa);
    for (Guard guard : kGuards) {
      for (DType type : {DType::F32, DType::F16, DType::BF16})
        for (int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100}) {
          const std::vector<uint8_t> src = stored_bytes(rng, size_t(n), type);
          GuardedBuffer s(src, guard), d(size_t(n) * sizeof(float), guard);
          k.load_row(s.as(), type, n, d.as<float>());
          std::vector<float> want(static_cast<size_t>(n));
          kernel_table(Isa::Scalar)->load_row(src.data(), type, n, want.data());
          ASSERT_EQ(d.copy<float>(), want) << where(isa, guard, 1) << " load_row " << dtype_name(type) << " n=" << n;
          if (type == DType::BF16) continue;
          GuardedBuffer back(size_t(n) * dtype_size(type), guard);
          k.store_row(d.as<float>(), n, back.as(), type);
          ASSERT_EQ(back.copy<uint8_t>(), src) << where(isa, guard, 1) << " store_row " << dtype_name(type);
        }
      for (DType type : {DType::I8, DType::I4})
        for (int64_t group : {32, 64, 128})
          for (int64_t groups : {1, 3, 8, 9, 17}) {
            const int64_t n = group * groups, rows = 3;
            const test::Quantized m = test::quantize(rng, type, rows, n, group);
            GuardedBuffer w(m.w, guard), scales(m.scales, guard);
            for (int64_t row = 0; row < rows; ++row) {
              GuardedBuffer d(size_t(n) * sizeof(float), guard);
              k.load_quant_row(w.as(), type, scales.as<uint16_t>(), group, row, n, d.as<float>());
              const std::vector<float> want(m.values.begin() + row * n, m.values.begin() + (row + 1) * n);
              ASSERT_EQ(d.copy<float>(), want) << where(isa, guard, 1) << " load_quant_row " << dtype_name(type)
                                               << " group=" << group << " n=" << n << " row=" << row;
            }
          }
    }
  }
}

TEST(GuardPages, NormRopeAndElementwise) {
  std::mt19937 rng(15);
  for (Isa isa : all_isas())
    for (int threads : kThreads)
      for (Guard guard : kGuards) {
        const KernelTable& k = *kernel_table(isa);
        const std::string at = where(isa, guard, threads);
        for (int64_t n : {1, 7, 8, 9, 17, 33, 100, 576})
          for (int64_t rows : {1, 3}) {
            const std::vector<float> a = random_floats(rng, size_t(rows * n)), b = random_floats(rng, size_t(rows * n));
            for (DType wt : {DType::F32, DType::F16, DType::BF16}) {
              const std::vector<uint8_t> w = stored_bytes(rng, size_t(n), wt);
              std::vector<float> want(a.size());
              k.rms_norm(a.data(), rows, n, w.data(), wt, 1e-6f, want.data());
              GuardedBuffer x(a, guard), gw(w, guard), y(a.size() * sizeof(float), guard);
              with_threads(threads, [&] { k.rms_norm(x.as<float>(), rows, n, gw.as(), wt, 1e-6f, y.as<float>()); });
              ASSERT_EQ(y.copy<float>(), want) << at << " rms_norm n=" << n << " " << dtype_name(wt);
            }
            using Op = void (*)(const float*, const float*, int64_t, float*);
            for (Op op : {k.silu_mul, k.add, k.gelu_tanh_mul}) {
              std::vector<float> want(a.size());
              op(a.data(), b.data(), int64_t(a.size()), want.data());
              GuardedBuffer x(a, guard), y(b, guard), out(a.size() * sizeof(float), guard);
              op(x.as<float>(), y.as<float>(), int64_t(a.size()), out.as<float>());
              ASSERT_EQ(out.copy<float>(), want) << at << " elementwise n=" << a.size();
            }
          }
        for (int64_t head_dim : {2, 6, 16, 34, 64})
          for (int64_t rotary : {head_dim, head_dim / 2 / 2 * 2})
            for (int64_t rows : {1, 5}) {
              const int64_t heads = 3, half = rotary / 2;
              std::vector<float> inv(size_t(std::max<int64_t>(half, 1)));
              for (int64_t i = 0; i < half; ++i)
                inv[size_t(i)] = float(std::pow(10000.0, -double(2 * i) / double(rotary)));
              std::vector<int64_t> pos(static_cast<size_t>(rows));
              for (int64_t r = 0; r < rows; ++r) pos[size_t(r)] = r * 7 + 3;
              const std::vector<float> x = random_floats(rng, size_t(rows * heads * head_dim));
              std::vector<float> want(x.size());
              k.rope(x.data(), want.data(), rows, heads, head_dim, rotary, pos.data(), inv.data(), 1.0f);
              GuardedBuffer gx(x, guard), gy(x.size() * sizeof(float), guard), gp(pos, guard);
              GuardedBuffer gi(inv.data(), size_t(half) * sizeof(float), guard);
              with_threads(threads, [&] {
                k.rope(gx.as<float>(), gy.as<float>(), rows, heads, head_dim, rotary, gp.as<int64_t>(), gi.as<float>(),
                       1.0f);
              });
              ASSERT_EQ(gy.copy<float>(), want) << at << " rope head_dim=" << head_dim << " rotary=" << rotary;
            }
      }
}

// Prefill rows and decode rows, grouped heads, head_dim off the vector width, contexts of one
// slot to several slices; the last row sees the cache's last slot.
TEST(GuardPages, Attention) {
  std::mt19937 rng(16);
  struct Case {
    int64_t rows, n_heads, n_kv_heads, head_dim, context;
  };
  const Case cases[] = {{1, 1, 1, 8, 1},   {1, 4, 2, 16, 33},  {2, 6, 2, 64, 130}, {3, 3, 3, 5, 7},
                        {4, 2, 2, 17, 50}, {5, 9, 3, 64, 200}, {9, 6, 1, 12, 40},  {1, 9, 3, 80, 700}};
  for (const Case& c : cases)
    for (DType ct : {DType::F32, DType::F16}) {
      const size_t cache_n = size_t(c.n_kv_heads * c.context * c.head_dim);
      const std::vector<uint8_t> kc = stored_bytes(rng, cache_n, ct), vc = stored_bytes(rng, cache_n, ct);
      const std::vector<float> q = random_floats(rng, size_t(c.rows * c.n_heads * c.head_dim));
      std::vector<float> mask(size_t(c.rows * c.context), kNegInf);
      for (int64_t r = 0; r < c.rows; ++r)
        for (int64_t j = 0; j <= std::max<int64_t>(0, c.context - c.rows + r); ++j) mask[size_t(r * c.context + j)] = 0;
      const float scale = 1.0f / std::sqrt(float(c.head_dim));
      for (Isa isa : all_isas())
        for (int threads : kThreads) {
          const KernelTable& k = *kernel_table(isa);
          std::vector<float> want(q.size());
          with_threads(threads, [&] {
            k.attention(q.data(), c.rows, c.n_heads, c.n_kv_heads, c.head_dim, kc.data(), vc.data(), ct, c.context,
                        mask.data(), scale, 0.0f, want.data());
          });
          for (Guard guard : kGuards) {
            GuardedBuffer gq(q, guard), gk(kc, guard), gv(vc, guard), gm(mask, guard);
            GuardedBuffer out(q.size() * sizeof(float), guard);
            with_threads(threads, [&] {
              k.attention(gq.as<float>(), c.rows, c.n_heads, c.n_kv_heads, c.head_dim, gk.as(), gv.as(), ct, c.context,
                          gm.as<float>(), scale, 0.0f, out.as<float>());
            });
            ASSERT_EQ(out.copy<float>(), want)
                << where(isa, guard, threads) << " attention rows=" << c.rows << " heads=" << c.n_heads << "/"
                << c.n_kv_heads << " head_dim=" << c.head_dim << " context=" << c.context << " " << dtype_name(ct);
          }
        }
    }
}

}  // namespace
}  // namespace hfstatic::kernels
