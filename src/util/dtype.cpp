#include "util/dtype.h"

#include "util/error.h"

namespace hfstatic {
namespace {
struct DTypeInfo {
  DType type;
  size_t size;
  const char* name;
  const char* st_name;
};
constexpr DTypeInfo kTypes[] = {
    {DType::F32, 4, "float32", "F32"}, {DType::F16, 2, "float16", "F16"}, {DType::BF16, 2, "bfloat16", "BF16"},
    {DType::I64, 8, "int64", "I64"},   {DType::I32, 4, "int32", "I32"},   {DType::U8, 1, "uint8", "U8"},
    {DType::I8, 1, "int8", "I8"},      {DType::I4, 1, "int4", ""},
};
const DTypeInfo& info(DType t) { return kTypes[static_cast<int>(t)]; }
}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
int64_t dtype_bytes(DType t, int64_t numel) { return t == DType::I4 ? numel / 2 : numel * int64_t(info(t).size); }
const char* dtype_name(DType t) { return info(t).name; }
const char* dtype_safetensors_name(DType t) { return info(t).st_name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kTypes)
    if (name == i.name) return i.type;
  return std::nullopt;
}

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
  for (const auto& i : kTypes)
    if (*i.st_name && name == i.st_name) return i.type;
  return std::nullopt;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

std::optional<int64_t> shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

void convert_floats(const void* src, DType src_type, void* dst, DType dst_type, size_t n) {
  auto load = [&](size_t i) -> float {
    switch (src_type) {
      case DType::F32: return static_cast<const float*>(src)[i];
      case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(src)[i]);
      case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(src)[i]);
      default: fail("convert_floats: ", dtype_name(src_type), " is not a floating-point type");
    }
  };
  if (src_type == dst_type) {
    std::memcpy(dst, src, n * dtype_size(src_type));
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    float v = load(i);
    switch (dst_type) {
      case DType::F32: static_cast<float*>(dst)[i] = v; break;
      case DType::F16: static_cast<uint16_t*>(dst)[i] = f32_to_f16(v); break;
      case DType::BF16: static_cast<uint16_t*>(dst)[i] = f32_to_bf16(v); break;
      default: fail("convert_floats: ", dtype_name(dst_type), " is not a floating-point type");
    }
  }
}

}  // namespace hfstatic
