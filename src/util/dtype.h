// Element types of tensors and their conversions.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hfstatic {

// I8 and I4 hold quantized weights (src/kernels/README.md): I4 packs two values a byte, so
// byte counts go through dtype_bytes, never dtype_size.
enum class DType : uint8_t { F32, F16, BF16, I64, I32, U8, I8, I4 };

size_t dtype_size(DType t);
// Bytes of numel elements of type t: numel / 2 for I4 (numel even), numel * dtype_size(t) otherwise.
int64_t dtype_bytes(DType t, int64_t numel);
// Program-level names: float32, float16, bfloat16, int64, int32, uint8, int8, int4.
const char* dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
// Safetensors names: F32, F16, BF16, I64, I32, U8, I8; "" for I4, which has none.
const char* dtype_safetensors_name(DType t);
std::optional<DType> dtype_from_safetensors_name(std::string_view name);

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "[1, 2, 64, 8]"
// Number of elements, or nullopt when a dimension is negative or the product overflows int64.
std::optional<int64_t> shape_numel(const Shape& s);

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, as hardware conversion (F16C, numpy) does.
inline uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {                                 // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000u) return uint16_t(sign);
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - exp;  // value / 2^-24 == mant * 2^(exp - 126)
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

inline float bf16_to_f32(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet NaN
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

// Converts n floating-point elements between F32, F16 and BF16 (src and dst may not overlap).
void convert_floats(const void* src, DType src_type, void* dst, DType dst_type, size_t n);

}  // namespace hfstatic
