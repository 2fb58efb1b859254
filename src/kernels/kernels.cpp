#include "kernels/kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/parallel.h"

namespace hfstatic::kernels {

void load_row(const void* src, DType type, int64_t n, float* dst) {
  switch (type) {
    case DType::F32:
      std::memcpy(dst, src, size_t(n) * sizeof(float));
      break;
    case DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      break;
    }
    case DType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      break;
    }
    default:
      break;
  }
}

void store_row(const float* src, int64_t n, void* dst, DType type) {
  if (type == DType::F32) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
  } else {
    uint16_t* d = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
  }
}

static inline float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int k = 0; k < 8; ++k) s += acc[k];
  return s;
}

void linear(const float* x, int64_t rows, int64_t in, const void* w, DType w_type, int64_t out,
            const void* bias, DType bias_type, float* y) {
  const size_t w_row_bytes = size_t(in) * dtype_size(w_type);
  parallel_for(out, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> w_row(static_cast<size_t>(in));
    float b = 0;
    for (int64_t o = begin; o < end; ++o) {
      const float* wr;
      if (w_type == DType::F32) {
        wr = reinterpret_cast<const float*>(static_cast<const uint8_t*>(w) + size_t(o) * w_row_bytes);
      } else {
        load_row(static_cast<const uint8_t*>(w) + size_t(o) * w_row_bytes, w_type, in, w_row.data());
        wr = w_row.data();
      }
      if (bias) load_row(static_cast<const uint8_t*>(bias) + size_t(o) * dtype_size(bias_type), bias_type, 1, &b);
      for (int64_t r = 0; r < rows; ++r) y[r * out + o] = dot(x + r * in, wr, in) + b;
    }
  });
}

void rms_norm(const float* x, int64_t rows, int64_t n, const void* w, DType w_type, float eps, float* y) {
  std::vector<float> weight(static_cast<size_t>(n));
  load_row(w, w_type, n, weight.data());
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += double(xr[i]) * xr[i];
    float inv = float(1.0 / std::sqrt(ss / double(n) + double(eps)));
    for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * inv * weight[i];
  }
}

void rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, const int64_t* positions, const float* inv_freq) {
  const int64_t half = head_dim / 2;
  std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      // Angles in double: positions up to the context length times the highest frequency.
      double angle = double(positions[r]) * double(inv_freq[i]);
      cos_t[i] = float(std::cos(angle));
      sin_t[i] = float(std::sin(angle));
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (r * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        float a = v[i], b = v[i + half];
        v[i] = a * cos_t[i] - b * sin_t[i];
        v[i + half] = b * cos_t[i] + a * sin_t[i];
      }
    }
  }
}

void attention(const float* q, int64_t rows, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
               const void* k_cache, const void* v_cache, DType cache_type, int64_t max_context,
               const float* mask, float scale, float* out) {
  const int64_t group = n_heads / n_kv_heads;
  const size_t elem = dtype_size(cache_type);
  const uint8_t* kc = static_cast<const uint8_t*>(k_cache);
  const uint8_t* vc = static_cast<const uint8_t*>(v_cache);
  parallel_for(rows * n_heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(max_context)), row(static_cast<size_t>(head_dim)), acc(static_cast<size_t>(head_dim));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t r = task / n_heads, h = task % n_heads, g = h / group;
      const float* qr = q + (r * n_heads + h) * head_dim;
      const float* m = mask + r * max_context;
      float* o = out + (r * n_heads + h) * head_dim;
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < max_context; ++j) {
        if (m[j] == -std::numeric_limits<float>::infinity()) {
          scores[j] = m[j];
          continue;
        }
        const uint8_t* kr = kc + size_t((g * max_context + j) * head_dim) * elem;
        load_row(kr, cache_type, head_dim, row.data());
        scores[j] = dot(qr, row.data(), head_dim) * scale + m[j];
        if (scores[j] > best) best = scores[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      if (!(best > -std::numeric_limits<float>::infinity())) {  // fully masked (or NaN): zeros
        std::memcpy(o, acc.data(), size_t(head_dim) * sizeof(float));
        continue;
      }
      double denom = 0;
      for (int64_t j = 0; j < max_context; ++j) {
        if (scores[j] == -std::numeric_limits<float>::infinity()) continue;
        float p = std::exp(scores[j] - best);
        denom += p;
        const uint8_t* vr = vc + size_t((g * max_context + j) * head_dim) * elem;
        load_row(vr, cache_type, head_dim, row.data());
        for (int64_t d = 0; d < head_dim; ++d) acc[d] += p * row[d];
      }
      const float inv = float(1.0 / denom);
      for (int64_t d = 0; d < head_dim; ++d) o[d] = acc[d] * inv;
    }
  });
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace hfstatic::kernels
