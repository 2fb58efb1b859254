// Quantized test matrices: random weights quantized as the exporter does, stored in the layout of
// src/kernels/README.md (written here from that description, not by the code under test).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/kernel_types.h"
#include "util/dtype.h"

namespace hfstatic::kernels::test {

// A quantized matrix and the float32 values it stands for.
struct Quantized {
  DType type;
  int64_t out, in, group;
  std::vector<uint8_t> w;
  std::vector<uint16_t> scales;
  std::vector<float> values;  // [out][in], q * float32(scale)

  LinearOutput output(float* y, const void* bias = nullptr, DType bias_type = DType::F32) const {
    return {w.data(), type, out, bias, bias_type, y, {scales.data(), group}};
  }
};

// Random weights quantized as the exporter does (scale max|x| / qmax as float16, q rounded to
// nearest), with a zero group (scale 0) and, for int4, some nibbles 0 (-8).
inline Quantized quantize(std::mt19937& rng, DType type, int64_t out, int64_t in, int64_t group) {
  const int qmax = type == DType::I8 ? 127 : 7;
  Quantized m{type, out, in, group, {}, {}, {}};
  std::vector<float> x = random_floats(rng, size_t(out * in), -0.3f, 0.3f);
  // A zero group: scale 0, all q 0.
  for (int64_t i = 0; i < group; ++i) x[size_t(i)] = 0.0f;
  std::vector<int> q(x.size());
  m.scales.resize(size_t(out * (in / group)));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t g = 0; g < in / group; ++g) {
      float amax = 0;
      for (int64_t i = 0; i < group; ++i) amax = std::max(amax, std::fabs(x[size_t(o * in + g * group + i)]));
      const uint16_t s = f32_to_f16(amax / float(qmax));
      m.scales[size_t(o * (in / group) + g)] = s;
      const float sf = f16_to_f32(s);
      for (int64_t i = 0; i < group; ++i) {
        const size_t at = size_t(o * in + g * group + i);
        q[at] = sf == 0 ? 0 : std::max(-qmax, std::min(qmax, int(std::lround(x[at] / sf))));
      }
    }
  // Byte b of group g of row o: groups in whole blocks of 8 interleaved 4 bytes at a time (bytes
  // 4c .. 4c + 3 of group j at 32c + 4j in the block), the rest one after another.
  const int64_t group_bytes = type == DType::I4 ? group / 2 : group, row_bytes = in / group * group_bytes;
  const int64_t blocked = in / group / 8 * 8;
  auto byte_at = [&](int64_t o, int64_t g, int64_t b) -> uint8_t& {
    const int64_t at = g < blocked ? g / 8 * 8 * group_bytes + b / 4 * 32 + g % 8 * 4 + b % 4 : g * group_bytes + b;
    return m.w[size_t(o * row_bytes + at)];
  };
  m.w.assign(size_t(out * row_bytes), 0);
  if (type == DType::I4) {
    // Nibble 0 stands for -8, which the exporter never writes but a file may hold.
    for (size_t i = 7; i < q.size(); i += 97) q[i] = -8;
    // In a group, block k of 32 values is 16 bytes: value 32k + j in byte 16k + j % 16, low nibble
    // for j < 16.
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) {
        const int64_t v = i % group, j = v % 32;
        uint8_t& byte = byte_at(o, i / group, v / 32 * 16 + j % 16);
        const uint8_t nibble = uint8_t(q[size_t(o * in + i)] + 8);
        byte = uint8_t(j < 16 ? (byte & 0xf0) | nibble : (byte & 0x0f) | (nibble << 4));
      }
  } else {
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) byte_at(o, i / group, i % group) = uint8_t(int8_t(q[size_t(o * in + i)]));
  }
  m.values.resize(q.size());
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i)
      m.values[size_t(o * in + i)] =
          float(q[size_t(o * in + i)]) * f16_to_f32(m.scales[size_t(o * (in / group) + i / group)]);
  return m;
}

}  // namespace hfstatic::kernels::test
