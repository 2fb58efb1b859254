// Numeric kernels. Activations are float32; weights may be float32, float16 or bfloat16; KV
// caches float32 or float16. Shapes are validated by the caller.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/parallel.h"
#include "util/dtype.h"

namespace hfstatic::kernels {

// dst[0..n) = float32 of src[0..n) stored as `type` (F32, F16 or BF16).
void load_row(const void* src, DType type, int64_t n, float* dst);
// Stores float32 values as `type` (F32 or F16).
void store_row(const float* src, int64_t n, void* dst, DType type);

// y[rows, out] = x[rows, in] * w[out, in]^T (+ bias[out]).
void linear(const float* x, int64_t rows, int64_t in, const void* w, DType w_type, int64_t out,
            const void* bias, DType bias_type, float* y);

// One product of a linear group: y[rows, out] = x * w[out, in]^T (+ bias[out]).
struct LinearOutput {
  const void* w;
  DType w_type;
  int64_t out;
  const void* bias;  // may be null
  DType bias_type;
  float* y;
};
// The elementwise op a linear group may fold in before its products: they multiply its result,
// computed as the rows are read (bit for bit what the separate kernel gives), instead of x.
struct LinearFusion {
  // rms_norm(x, norm_w, norm_eps)
  const void* norm_w = nullptr;
  DType norm_type = DType::F32;
  float norm_eps = 0;
  // silu_mul(x, up): x is the gate, up [rows, in]
  const float* up = nullptr;
};
// Several linear products of the same x (q/k/v, gate/up) as one parallel pass: x is packed
// once and the threads share out the output features of all of them together.
void linear_group(const float* x, int64_t rows, int64_t in, const LinearOutput* outputs, int count,
                  const LinearFusion* fusion = nullptr);
// Where each of `threads` threads starts reading the weights when linear_group runs with
// these arguments (at most `bytes` each): what it can prefetch while it waits before that
// region (ScopedIdlePrefetch). Empty where the split is not known in advance: many rows (the
// blocked multiply), one thread, the scalar kernels.
std::vector<PrefetchRange> linear_group_first_reads(int64_t rows, int64_t in, const LinearOutput* outputs, int count,
                                                    int threads, size_t bytes);

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, for rows of length n.
void rms_norm(const float* x, int64_t rows, int64_t n, const void* w, DType w_type, float eps, float* y);

// y = x[rows, heads * head_dim] with the pairs (i, i + half) of each head rotated, HF
// rotate_half style, by angle positions[r] * inv_freq[i]; y may be x.
void rope(const float* x, float* y, int64_t rows, int64_t heads, int64_t head_dim, const int64_t* positions,
          const float* inv_freq);

// Scaled dot-product attention of q[rows, n_heads * D] over the first `columns` slots of
// caches [n_kv_heads, max_context, D] with additive mask[rows, max_context]. A row whose mask
// is -inf everywhere gets zeros.
void attention(const float* q, int64_t rows, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
               const void* k_cache, const void* v_cache, DType cache_type, int64_t max_context,
               const float* mask, float scale, float* out);

// out = silu(gate) * up
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
void add(const float* a, const float* b, int64_t n, float* out);

}  // namespace hfstatic::kernels
