// Numeric kernels. Activations are float32; weights may be float32, float16, bfloat16 or
// quantized to int8 / int4 with float16 scales per group of inputs (QuantWeights); KV
// caches float32 or float16. Shapes are validated by the caller. Every kernel exists once per
// instruction set, gathered in a KernelTable; isa.h hands out the table of an ISA.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/kernel_types.h"
#include "kernels/parallel.h"
#include "kernels/scratch.h"
#include "util/dtype.h"

namespace hfstatic::kernels {

// Linear products and attention of this many rows or more run their many-rows variant (the
// blocked multiply, blocks of query rows); fewer, their few-rows one (matrix-vector products,
// slices of each row's slots).
constexpr int64_t kManyRows = 4;

// One implementation of every kernel.
struct KernelTable {
  // dst[0..n) = float32 of src[0..n) stored as `type` (F32, F16 or BF16).
  void (*load_row)(const void* src, DType type, int64_t n, float* dst);
  // Stores float32 values as `type` (F32 or F16).
  void (*store_row)(const float* src, int64_t n, void* dst, DType type);
  // dst[0..n) = row `row` of a quantized matrix w [rows, n] (w_type I8 or I4, scales [rows][n /
  // group]), dequantized: the embedding gather of quantized weights.
  void (*load_quant_row)(const void* w, DType w_type, const uint16_t* scales, int64_t group, int64_t row, int64_t n,
                         float* dst);
  // Several linear products of the same x (q/k/v, gate/up) as one parallel pass: x is packed
  // once and the threads share out the output features of all of them together. fusion: the
  // op folded in before the products, or null.
  void (*linear_group)(const float* x, int64_t rows, int64_t in, const LinearOutput* outputs, int count,
                       const LinearFusion* fusion);
  // linear_group with its variant named instead of picked by the number of rows: matrix-vector
  // products that read each weight row once for all the rows (decode), or a blocked multiply
  // (prefill). Each row's result depends on the variant and its own inputs only.
  void (*linear_few_rows)(const float* x, int64_t rows, int64_t in, const LinearOutput* outputs, int count,
                          const LinearFusion* fusion);
  void (*linear_many_rows)(const float* x, int64_t rows, int64_t in, const LinearOutput* outputs, int count,
                           const LinearFusion* fusion);
  // Where each of `threads` threads starts reading the weights when linear_group runs with
  // these arguments (at most `bytes` each): what it can prefetch while it waits before that
  // region (ScopedIdlePrefetch). Empty where the split is not known in advance: many rows (the
  // blocked multiply), one thread, the scalar kernels.
  std::vector<PrefetchRange> (*linear_group_first_reads)(int64_t rows, int64_t in, const LinearOutput* outputs,
                                                         int count, int threads, size_t bytes);
  // y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, for rows of length n.
  void (*rms_norm)(const float* x, int64_t rows, int64_t n, const void* w, DType w_type, float eps, float* y);
  // y = x[rows, heads * head_dim] with the first rotary_dim values of each head rotated, HF
  // rotate_half style: the pairs (i, i + rotary_dim / 2) by angle positions[r] * inv_freq[i],
  // with cos and sin multiplied by attention_factor; the other head_dim - rotary_dim values
  // pass unchanged. rotary_dim is even and at most head_dim; y may be x.
  void (*rope)(const float* x, float* y, int64_t rows, int64_t heads, int64_t head_dim, int64_t rotary_dim,
               const int64_t* positions, const float* inv_freq, float attention_factor);
  // Scaled dot-product attention of q[rows, n_heads * D] over caches [n_kv_heads, max_context,
  // D] with additive mask[rows, max_context]. A row whose mask is -inf everywhere gets zeros.
  // softcap > 0 caps each scaled score s to softcap * tanh(s / softcap) before the mask is added
  // (Gemma 2's attn_logit_softcapping); 0 leaves the scores as they are.
  void (*attention)(const float* q, int64_t rows, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                    const void* k_cache, const void* v_cache, DType cache_type, int64_t max_context, const float* mask,
                    float scale, float softcap, float* out);
  // attention with its variant named: tasks by KV head over slices of each row's visible slots
  // (decode), or blocks of query rows (prefill). Each row's result depends on the variant and
  // its own query and mask row only.
  void (*attention_few_rows)(const float* q, int64_t rows, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                             const void* k_cache, const void* v_cache, DType cache_type, int64_t max_context,
                             const float* mask, float scale, float softcap, float* out);
  void (*attention_many_rows)(const float* q, int64_t rows, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                              const void* k_cache, const void* v_cache, DType cache_type, int64_t max_context,
                              const float* mask, float scale, float softcap, float* out);
  // What linear_group runs for these arguments (the many-rows variant or the few-rows one) and
  // the scratch it takes; `outputs` need only their weights (y may be null).
  KernelPlan (*plan_linear)(bool many_rows, int64_t rows, int64_t in, const LinearOutput* outputs, int count,
                            FoldedOp folded);
  // What attention runs for these arguments and the scratch it takes, at most max_context slots
  // visible to each row.
  KernelPlan (*plan_attention)(bool many_rows, int64_t rows, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                               DType cache_type, int64_t max_context);
  // The scratch of rms_norm over rows of n values.
  KernelPlan (*plan_rms_norm)(int64_t n);
  // out = silu(gate) * up
  void (*silu_mul)(const float* gate, const float* up, int64_t n, float* out);
  void (*add)(const float* a, const float* b, int64_t n, float* out);
  // out = gelu(gate) * up, GELU's tanh approximation written as gate * sigmoid(2 z),
  // z = sqrt(2 / pi) (gate + 0.044715 gate^3)
  void (*gelu_tanh_mul)(const float* gate, const float* up, int64_t n, float* out);

  // This table with linear_group and attention fixed to the variants `rows` rows take: a
  // method planned for T rows that runs on its first n (active rows) computes each of them
  // exactly as the run of all T would.
  KernelTable for_rows(int64_t rows) const;

  // y[rows, out] = x[rows, in] * w[out, in]^T (+ bias[out]): a group of one.
  void linear(const float* x, int64_t rows, int64_t in, const void* w, DType w_type, int64_t out, const void* bias,
              DType bias_type, float* y) const {
    const LinearOutput one{w, w_type, out, bias, bias_type, y, {}};
    linear_group(x, rows, in, &one, 1, nullptr);
  }
};

}  // namespace hfstatic::kernels
