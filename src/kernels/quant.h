// Quantized weights (DType::I8, DType::I4 with QuantWeights; layouts in README.md): what the
// scalar kernels and the SIMD ones share about them. Internal to the kernels module.
#pragma once
#include <cstdint>

#include "util/dtype.h"
#include "util/quant_layout.h"

namespace hfstatic::kernels::quant {

// Values per int4 block: block b of a group is 16 bytes, byte j holding value 32b + j in its low
// nibble and value 32b + j + 16 in its high nibble, each as q + 8.
constexpr int64_t kBlock = 32;
constexpr int64_t kBlockBytes = 16;

constexpr bool is_quantized(DType t) { return t == DType::I8 || t == DType::I4; }

// Bytes of one weight row of n values.
inline int64_t row_bytes(DType t, int64_t n) { return dtype_bytes(t, n); }

// Value i of a quantized row of n values in groups of `group` (before its scale).
inline int quantized_value(const uint8_t* row, DType t, int64_t n, int64_t group, int64_t i) {
  const int64_t g = i / group, v = i % group, group_bytes = dtype_bytes(t, group);
  if (t == DType::I8) return int(static_cast<int8_t>(row[quant_byte_offset(group_bytes, n / group, g, v)]));
  const uint8_t byte = row[quant_byte_offset(group_bytes, n / group, g, v / kBlock * kBlockBytes + v % kBlockBytes)];
  return int((v % kBlock < kBlockBytes ? byte & 15 : byte >> 4)) - 8;
}

// dst[0..n) = row `row` of w [rows][n] dequantized: q * float32(scale of its group).
inline void dequantize_row(const void* w, DType t, const uint16_t* scales, int64_t group, int64_t row, int64_t n,
                           float* dst) {
  const uint8_t* r = static_cast<const uint8_t*>(w) + row * row_bytes(t, n);
  const uint16_t* s = scales + row * (n / group);
  for (int64_t i = 0; i < n; ++i) dst[i] = float(quantized_value(r, t, n, group, i)) * f16_to_f32(s[i / group]);
}

}  // namespace hfstatic::kernels::quant
