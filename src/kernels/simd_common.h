// Shared by the SIMD kernel translation units; included before their target pragmas so that
// everything declared here is compiled for the baseline target.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/quant.h"
#include "util/dtype.h"

namespace hfstatic::kernels::detail {

// The SIMD linear kernels multiply fewer rows than this as matrix-vector products, splitting
// the output features over the threads in grains of kMatvecGrain.
constexpr int64_t kMatvecMaxRows = kManyRows;
// Attention of this many rows or more goes by blocks of query rows (prefill).
constexpr int64_t kAttentionManyRows = kManyRows;
constexpr int64_t kMatvecGrain = 64;

// A group's items laid end to end: the range a parallel_for over the whole group covers.
template <typename Items>
int64_t total_items(const LinearOutput* outputs, int count, Items items) {
  int64_t total = 0;
  for (int i = 0; i < count; ++i) total += items(outputs[i]);
  return total;
}

// The items of a matrix-vector group: each product's output features.
inline int64_t matvec_features(const LinearOutput& t) { return t.out; }

// Items [0, total) of a group: output i owns [offset_i, offset_i + items(output i)). Calls
// fn(i, lo, hi) with the part of [begin, end) that falls in each output, in its own items.
template <typename Items, typename Fn>
void for_each_part(const LinearOutput* outputs, int count, Items items, int64_t begin, int64_t end, Fn&& fn) {
  int64_t offset = 0;
  for (int i = 0; i < count && offset < end; ++i) {
    const int64_t n = items(outputs[i]);
    const int64_t lo = std::max(begin, offset), hi = std::min(end, offset + n);
    if (lo < hi) fn(i, lo - offset, hi - offset);
    offset += n;
  }
}

// Bytes ahead of its reads that a matrix-vector product prefetches a weight row's lines. Float
// rows: float_prefetch_ahead(), 1 KiB on AMD CPUs before family 26, 8 KiB on AMD's family 26
// (Zen 5) and kPrefetchAhead (3 KiB) on others. Quantized rows: quant_prefetch_ahead(), 0 for none,
// on AMD's family 25 with AVX-512 (Zen 4) 16 KiB but none for int8 rows against one input row
// (the CPU's own prefetcher read those faster), 3 KiB on others. The distances measured best on an AMD
// EPYC Zen 3, a Zen 4, a Zen 5 and an Intel Xeon host (docs/log/2026-12-04-quantized-kernels.md,
// docs/log/2026-12-06-zen5-512-bit-block-sums.md, docs/log/2026-12-07-zen4-quantized-decode.md).
constexpr int64_t kPrefetchAhead = 3072;
// The cache lines of bytes [p, p + bytes), prefetched for reading: kLocality 2 into L2, 3 into L1.
template <int kLocality = 2>
__attribute__((always_inline)) inline void prefetch_lines(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b, 0, kLocality);
}
int64_t float_prefetch_ahead();
int64_t quant_prefetch_ahead(DType w_type, int64_t rows);

// The instructions of the quantized products: vpmaddubsw, the VNNI dot instruction on 256-bit
// vectors, or on 512-bit blocks (which add their sums in another order).
enum class QuantDots { kPlain, kVnni, kVnni512 };

// The rows x of a matrix-vector group quantized to int8 for the quantized products with groups
// of `group` inputs: x[r * in + i] ~ value i of row r * scale[r * (groups + 8) + i / group], and
// minus_offset8 (same layout) = -8 * (the sum of the group's values): what takes an int4 weight's
// stored offset of 8 off the group's integer dot product. Each row's scales and offsets are padded
// with 8 zeros. The values come twice, each in the order the weights' 32-byte loads meet them
// (util/quant_layout.h): q8 for int8 weights (in a whole block of 8 groups, load c holds values
// 4c .. 4c + 3 of each group; the groups after it in order), q4 for int4 weights (in a whole
// block, load c's low nibbles then its high nibbles; after it, the groups' 32-value blocks two
// at a time: values 0-15, 32-47, 16-31, 48-63 of each 64, a last 32 in order).
struct QuantRows {
  const int8_t* q8 = nullptr;
  const int8_t* q4 = nullptr;
  const float* scale = nullptr;
  const int32_t* minus_offset8 = nullptr;
  int64_t in = 0, group = 0;
};

// x from row `row` on.
inline QuantRows quant_rows_from(const QuantRows& x, int64_t row) {
  const int64_t scales = x.in / x.group + 8;  // a row's scales and offsets, padded
  return {x.q8 + row * x.in, x.q4 + row * x.in, x.scale + row * scales, x.minus_offset8 + row * scales, x.in, x.group};
}

// KernelTable::linear_group_first_reads of the SIMD tables: the start of each thread's stretch
// of a matrix-vector group's output features.
std::vector<PrefetchRange> matvec_first_reads(int64_t rows, int64_t in, const LinearOutput* outputs, int count,
                                              int threads, size_t bytes);

inline float scalar_at(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::F32: return static_cast<const float*>(p)[i];
    case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return 0.0f;
  }
}

// The rotary table of the last call on this thread, reused while positions and frequencies
// repeat (every layer of a method run rotates q and k at the same positions).
struct RopeTable {
  // cos and sin multiplied by factor.
  const float* cos(const int64_t* positions, int64_t rows, const float* inv_freq, int64_t half, float factor);
  const float* sin() const { return sin_.get(); }

 private:
  std::unique_ptr<float[]> cos_, sin_, inv_;
  std::unique_ptr<int64_t[]> pos_;
  float factor_ = 0;
  int64_t rows_ = -1, half_ = -1, capacity_ = 0, rows_capacity_ = 0, half_capacity_ = 0;
};
RopeTable& rope_table();

}  // namespace hfstatic::kernels::detail
