#include "executor/ops.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "executor/op_support.h"
#include "executor/ops_moe.h"
#include "kernels/kernels.h"

namespace hfstatic {

using nlohmann::json;

namespace {

using namespace ops;

// ---- embedding -----------------------------------------------------------------------------

OpSignature check_embedding(const std::vector<OpOperand>& in, const json& attrs) {
  std::optional<WeightQuant> q = weight_quant_from_attrs(attrs);
  expect_count(in, 2, q ? 3 : 2);
  expect_dtype(0, in[0], DType::I64);
  expect_rank(0, in[0], 2);
  Shape table = in[1].spec->shape;
  if (q) {
    table = check_quantized_weight(in, *q, -1);
  } else {
    expect_float_weight(1, in[1]);
    expect_rank(1, in[1], 2);
  }
  return {{f32({in[0].spec->shape[0], in[0].spec->shape[1], table[1]})}, {}, {}};
}

Status run_embedding(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                     const void*) {
  const int64_t* ids = in[0].as<int64_t>();
  const int64_t rows = numel(in[0]), vocab = in[1].dim(0), width = out[0].dim(2);
  const bool quantized = is_quantized(in[1]);
  const kernels::QuantWeights quant = quantized ? quant_weights(in[2], width) : kernels::QuantWeights{};
  const size_t row_bytes = size_t(width) * dtype_size(in[1].dtype);
  for (int64_t r = 0; r < rows; ++r) {
    if (ids[r] < 0 || ids[r] >= vocab)
      return Status::error(cat("token id ", ids[r], " at row ", r, " is outside the vocabulary [0, ", vocab, ")"));
    float* dst = out[0].as<float>() + r * width;
    if (quantized)
      k.load_quant_row(in[1].data, stored_weight_type(in[1]), quant.scales, quant.group, ids[r], width, dst);
    else
      k.load_row(in[1].as<uint8_t>() + size_t(ids[r]) * row_bytes, in[1].dtype, width, dst);
  }
  return {};
}

// ---- rms_norm and head_rms_norm ------------------------------------------------------------

struct NormAttrs {
  float eps;
  int64_t group;  // normalised length: the last dimension, or head_dim for head_rms_norm
};

OpSignature check_rms_norm(const std::vector<OpOperand>& in, const json& attrs) {
  expect_count(in, 2, 2);
  expect_activation(0, in[0]);
  expect_float(1, in[1]);
  expect_rank(1, in[1], 1);
  if (in[1].spec->shape[0] != in[0].spec->shape[2])
    fail(describe(1, in[1]), " must have length ", in[0].spec->shape[2], " to match ", describe(0, in[0]));
  float eps = float(float_attr(attrs, "eps", 0, 1));
  return {{out_like(*in[0].spec)}, {}, prepared(NormAttrs{eps, in[0].spec->shape[2]})};
}

OpSignature check_head_rms_norm(const std::vector<OpOperand>& in, const json& attrs) {
  expect_count(in, 2, 2);
  expect_activation(0, in[0]);
  expect_float(1, in[1]);
  expect_rank(1, in[1], 1);
  int64_t head_dim = in[1].spec->shape[0];
  if (head_dim == 0 || in[0].spec->shape[2] % head_dim != 0)
    fail(describe(1, in[1]), " length must divide the width of ", describe(0, in[0]));
  float eps = float(float_attr(attrs, "eps", 0, 1));
  return {{out_like(*in[0].spec)}, {}, prepared(NormAttrs{eps, head_dim})};
}

Status run_rms_norm(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                    const void* p) {
  const auto& a = *static_cast<const NormAttrs*>(p);
  k.rms_norm(in[0].as<float>(), numel(in[0]) / a.group, a.group, in[1].data, in[1].dtype, a.eps, out[0].as<float>());
  return {};
}

kernels::KernelPlan plan_rms_norm(const kernels::KernelTable& k, bool, std::span<const std::vector<Tensor>>,
                                  const void* p, kernels::FoldedOp) {
  return k.plan_rms_norm(static_cast<const NormAttrs*>(p)->group);
}

// The norm computed inside the linear group that reads it (OpDef::linear_fusion).
kernels::LinearFusion rms_norm_fusion(const std::vector<Tensor>& in, const void* p) {
  kernels::LinearFusion fusion;
  fusion.norm_w = in[1].data;
  fusion.norm_type = in[1].dtype;
  fusion.norm_eps = static_cast<const NormAttrs*>(p)->eps;
  return fusion;
}

// ---- linear --------------------------------------------------------------------------------

OpSignature check_linear(const std::vector<OpOperand>& in, const json& attrs) {
  std::optional<WeightQuant> q = weight_quant_from_attrs(attrs);
  const size_t bias_at = q ? 3 : 2;
  expect_count(in, 2, bias_at + 1);
  expect_activation(0, in[0]);
  const Shape& x = in[0].spec->shape;
  Shape w = in[1].spec->shape;
  if (q) {
    w = check_quantized_weight(in, *q, x[2]);
  } else {
    expect_float_weight(1, in[1]);
    expect_rank(1, in[1], 2);
  }
  if (w[1] != x[2]) fail(describe(1, in[1]), " must have ", x[2], " columns to match ", describe(0, in[0]));
  if (in.size() == bias_at + 1) {
    expect_float(bias_at, in[bias_at]);
    expect_rank(bias_at, in[bias_at], 1);
    if (in[bias_at].spec->shape[0] != w[0]) fail(describe(bias_at, in[bias_at]), " must have length ", w[0]);
  }
  return {{f32({1, x[1], w[0]})}, {}, {}};
}

// out may be empty (no destination: only the weights are wanted).
kernels::LinearOutput linear_output(const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
  const bool quantized = is_quantized(in[1]);
  const size_t bias_at = quantized ? 3 : 2;
  const Tensor* bias = in.size() == bias_at + 1 ? &in[bias_at] : nullptr;
  kernels::LinearOutput o{in[1].data,
                          stored_weight_type(in[1]),
                          in[1].dim(0),
                          bias ? bias->data : nullptr,
                          bias ? bias->dtype : DType::F32,
                          out.empty() ? nullptr : out[0].as<float>()};
  if (quantized) o.quant = quant_weights(in[2], in[0].dim(2));
  return o;
}

std::vector<PrefetchRange> linear_first_reads(const kernels::KernelTable& k, std::span<const std::vector<Tensor>> in,
                                              int threads, size_t bytes) {
  std::vector<kernels::LinearOutput> group;
  for (const auto& node : in) group.push_back(linear_output(node, {}));
  const Tensor& x = in[0][0];
  return k.linear_group_first_reads(x.dim(1), x.dim(2), group.data(), int(group.size()), threads, bytes);
}

kernels::KernelPlan plan_linear(const kernels::KernelTable& k, bool many_rows, std::span<const std::vector<Tensor>> in,
                                const void*, kernels::FoldedOp folded) {
  std::vector<kernels::LinearOutput> group;
  for (const auto& node : in) group.push_back(linear_output(node, {}));
  const Tensor& x = in[0][0];
  return k.plan_linear(many_rows, x.dim(1), x.dim(2), group.data(), int(group.size()), folded);
}

Status run_linear(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                  const void*) {
  const kernels::LinearOutput one = linear_output(in, out);
  k.linear_group(in[0].as<float>(), in[0].dim(1), in[0].dim(2), &one, 1, nullptr);
  return {};
}

Status run_linear_group(const kernels::KernelTable& k, std::span<const std::vector<Tensor>> in,
                        std::span<const std::vector<Tensor>> out, const kernels::LinearFusion* fusion) {
  std::vector<kernels::LinearOutput> group;
  group.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) group.push_back(linear_output(in[i], out[i]));
  const Tensor& x = in[0][0];
  k.linear_group(x.as<float>(), x.dim(1), x.dim(2), group.data(), int(group.size()), fusion);
  return {};
}

// ---- rope ----------------------------------------------------------------------------------

struct RopeAttrs {
  int64_t head_dim, rotary_dim;
  std::vector<float> inv_freq;
  float attention_factor;
};

// Frequencies as Hugging Face computes them (default and "llama3" rope_scaling) over `dim` values.
std::vector<float> rope_inv_freq(int64_t dim, double theta, const json& scaling) {
  std::vector<double> inv(size_t(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) inv[i] = 1.0 / std::pow(theta, double(2 * i) / double(dim));
  if (!scaling.is_null()) {
    if (!scaling.is_object()) fail("attribute 'scaling' must be an object or null");
    if (scaling.contains("type") && !scaling["type"].is_string())
      fail("attribute 'scaling.type' = ", scaling["type"].dump(), " is not a string");
    std::string type = scaling.value("type", std::string());
    if (type != "llama3") fail("attribute 'scaling' has unsupported type '", type, "' (supported: llama3)");
    double factor = float_attr(scaling, "factor", 1e-6, 1e6);
    double low = float_attr(scaling, "low_freq_factor", 1e-6, 1e6);
    double high = float_attr(scaling, "high_freq_factor", 1e-6, 1e6);
    double original = float_attr(scaling, "original_max_position_embeddings", 1, 1e12);
    if (!(high > low)) fail("attribute 'scaling' needs high_freq_factor > low_freq_factor");
    const double low_wavelen = original / low, high_wavelen = original / high;
    const double pi = 3.14159265358979323846;
    for (auto& f : inv) {
      double wavelen = 2 * pi / f;
      if (wavelen < high_wavelen) continue;
      if (wavelen > low_wavelen) {
        f = f / factor;
      } else {
        double smooth = (original / wavelen - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
  }
  return std::vector<float>(inv.begin(), inv.end());
}

// Frequencies given as a list (rope scaling computed by the exporter): rotary_dim / 2 of them.
std::vector<float> listed_inv_freq(const json& list, int64_t rotary_dim) {
  if (!list.is_array() || int64_t(list.size()) != rotary_dim / 2)
    fail("attribute 'inv_freq' must be a list of rotary_dim / 2 = ", rotary_dim / 2, " numbers");
  std::vector<float> inv;
  for (const json& f : list) {
    if (!f.is_number() || !(f.get<double>() > 0 && f.get<double>() < 1e6))
      fail("attribute 'inv_freq' holds ", f.dump(), ", not a frequency in (0, 1e6)");
    inv.push_back(float(f.get<double>()));
  }
  return inv;
}

// attrs: head_dim; rotary_dim (optional, default head_dim: the leading values of each head that
// rotate); either theta with an optional llama3 scaling, or inv_freq; attention_factor (optional,
// default 1: scales cos and sin).
OpSignature check_rope(const std::vector<OpOperand>& in, const json& attrs) {
  expect_count(in, 2, 2);
  expect_activation(0, in[0]);
  expect_dtype(1, in[1], DType::I64);
  expect_rank(1, in[1], 2);
  if (in[1].spec->shape[1] != in[0].spec->shape[1])
    fail(describe(1, in[1]), " must have one position per row of ", describe(0, in[0]));
  int64_t head_dim = int_attr(attrs, "head_dim", 2, 1 << 16);
  if (head_dim % 2 != 0) fail("attribute 'head_dim' must be even");
  if (in[0].spec->shape[2] % head_dim != 0) fail(describe(0, in[0]), " width is not a multiple of head_dim ", head_dim);
  int64_t rotary_dim = attrs.contains("rotary_dim") ? int_attr(attrs, "rotary_dim", 2, head_dim) : head_dim;
  if (rotary_dim % 2 != 0) fail("attribute 'rotary_dim' must be even");
  float factor = attrs.contains("attention_factor") ? float(float_attr(attrs, "attention_factor", 1e-6, 1e6)) : 1.0f;
  std::vector<float> inv;
  if (attrs.contains("inv_freq")) {
    if (attrs.contains("scaling")) fail("attributes 'inv_freq' and 'scaling' exclude each other");
    inv = listed_inv_freq(attrs["inv_freq"], rotary_dim);
  } else {
    double theta = float_attr(attrs, "theta", 1, 1e12);
    json scaling = attrs.contains("scaling") ? attrs["scaling"] : json();
    inv = rope_inv_freq(rotary_dim, theta, scaling);
  }
  return {{out_like(*in[0].spec)}, {}, prepared(RopeAttrs{head_dim, rotary_dim, std::move(inv), factor})};
}

Status run_rope(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                const void* p) {
  const auto& a = *static_cast<const RopeAttrs*>(p);
  int64_t rows = in[0].dim(1), heads = in[0].dim(2) / a.head_dim;
  k.rope(in[0].as<float>(), out[0].as<float>(), rows, heads, a.head_dim, a.rotary_dim, in[1].as<int64_t>(),
         a.inv_freq.data(), a.attention_factor);
  return {};
}

// ---- cache_write ---------------------------------------------------------------------------
// inputs: k [1,T,H*D], v [1,T,H*D], k_cache [1,H,C,D], v_cache [1,H,C,D], counter int64 [1],
// mask [1,1,T,C]. Writes the real rows (those whose mask row is not all -inf) at slots
// counter + i and advances counter by their number.

void check_mask(size_t i, const OpOperand& o, int64_t rows, int64_t context) {
  expect_dtype(i, o, DType::F32);
  expect_rank(i, o, 4);
  const Shape& s = o.spec->shape;
  if (s[0] != 1 || s[1] != 1 || s[2] != rows || s[3] != context)
    fail(describe(i, o), " must be [1, 1, ", rows, ", ", context, "]");
}

OpSignature check_cache_write(const std::vector<OpOperand>& in, const json&) {
  expect_count(in, 6, 6);
  expect_activation(0, in[0]);
  expect_activation(1, in[1]);
  expect_cache(2, in[2]);
  expect_cache(3, in[3]);
  const Shape& kc = in[2].spec->shape;
  if (in[3].spec->shape != kc || in[3].spec->dtype != in[2].spec->dtype)
    fail(describe(3, in[3]), " must match ", describe(2, in[2]));
  const int64_t rows = in[0].spec->shape[1];
  for (size_t i : {0, 1})
    if (in[i].spec->shape[1] != rows || in[i].spec->shape[2] != kc[1] * kc[3])
      fail(describe(i, in[i]), " must be [1, ", rows, ", ", kc[1] * kc[3], "] to fit the cache");
  expect_dtype(4, in[4], DType::I64);
  if (in[4].spec->shape != Shape{1}) fail(describe(4, in[4]), " must have shape [1]");
  check_mask(5, in[5], rows, kc[2]);
  return {{}, {2, 3, 4}, {}};
}

// Number of real rows: a prefix of rows whose mask is not -inf everywhere. Returns -1 if a real
// row follows a padding row.
int64_t count_real_rows(const float* mask, int64_t rows, int64_t context) {
  int64_t real = 0;
  bool padding_seen = false;
  for (int64_t r = 0; r < rows; ++r) {
    const float* m = mask + r * context;
    bool is_real = false;
    for (int64_t j = 0; j < context && !is_real; ++j) is_real = m[j] != -std::numeric_limits<float>::infinity();
    if (is_real) {
      if (padding_seen) return -1;
      ++real;
    } else {
      padding_seen = true;
    }
  }
  return real;
}

Status run_cache_write(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>&,
                       const void*) {
  const int64_t rows = in[0].dim(1), heads = in[2].dim(1), context = in[2].dim(2), head_dim = in[2].dim(3);
  int64_t& counter = *in[4].as<int64_t>();
  int64_t real = count_real_rows(in[5].as<float>(), rows, context);
  if (real < 0) return Status::error("mask has a real row after a padding row; real rows must come first");
  if (counter < 0 || counter > context - real)
    return Status::error(
        cat("counter ", counter, " with ", real, " real rows does not fit the cache of ", context, " slots"));
  const size_t elem = dtype_size(in[2].dtype);
  // Items (k or v, row, head), a head's row each, shared out to the threads.
  parallel_for(2 * real * heads, 64, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t which = item / (real * heads), r = item / heads % real, h = item % heads;
      k.store_row(in[which].as<float>() + (r * heads + h) * head_dim, head_dim,
                  in[2 + which].as<uint8_t>() + size_t((h * context + counter + r) * head_dim) * elem, in[2].dtype);
    }
  });
  counter += real;
  return {};
}

// ---- attention -----------------------------------------------------------------------------

struct AttentionAttrs {
  int64_t n_heads, head_dim;
  float scale;
  float softcap;  // 0: none
};

OpSignature check_attention(const std::vector<OpOperand>& in, const json& attrs) {
  expect_count(in, 4, 4);
  expect_activation(0, in[0]);
  expect_cache(1, in[1]);
  expect_cache(2, in[2]);
  const Shape& kc = in[1].spec->shape;
  if (in[2].spec->shape != kc || in[2].spec->dtype != in[1].spec->dtype)
    fail(describe(2, in[2]), " must match ", describe(1, in[1]));
  const int64_t rows = in[0].spec->shape[1];
  check_mask(3, in[3], rows, kc[2]);
  int64_t n_heads = int_attr(attrs, "n_heads", 1, 1 << 16);
  int64_t head_dim = kc[3];
  if (in[0].spec->shape[2] != n_heads * head_dim)
    fail(describe(0, in[0]), " width must be n_heads * head_dim = ", n_heads * head_dim);
  if (kc[1] == 0 || n_heads % kc[1] != 0)
    fail("n_heads ", n_heads, " is not a multiple of the cache's ", kc[1], " kv heads");
  double scale = attrs.contains("scale") ? float_attr(attrs, "scale", 0, 1e6) : 1.0 / std::sqrt(double(head_dim));
  // softcap (optional, 0 = none): scores capped to softcap * tanh(score / softcap) before the mask.
  double softcap = attrs.contains("softcap") ? float_attr(attrs, "softcap", 0, 1e6) : 0.0;
  return {{out_like(*in[0].spec)}, {}, prepared(AttentionAttrs{n_heads, head_dim, float(scale), float(softcap)})};
}

Status run_attention(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                     const void* p) {
  const auto& a = *static_cast<const AttentionAttrs*>(p);
  k.attention(in[0].as<float>(), in[0].dim(1), a.n_heads, in[1].dim(1), a.head_dim, in[1].data, in[2].data, in[1].dtype,
              in[1].dim(2), in[3].as<float>(), a.scale, a.softcap, out[0].as<float>());
  return {};
}

kernels::KernelPlan plan_attention(const kernels::KernelTable& k, bool many_rows,
                                   std::span<const std::vector<Tensor>> in, const void* p, kernels::FoldedOp) {
  const auto& a = *static_cast<const AttentionAttrs*>(p);
  const std::vector<Tensor>& node = in[0];
  return k.plan_attention(many_rows, node[0].dim(1), a.n_heads, node[1].dim(1), a.head_dim, node[1].dtype,
                          node[1].dim(2));
}

// ---- elementwise and copy ------------------------------------------------------------------

OpSignature check_binary(const std::vector<OpOperand>& in, const json&) {
  expect_count(in, 2, 2);
  expect_activation(0, in[0]);
  expect_activation(1, in[1]);
  if (in[0].spec->shape != in[1].spec->shape) fail(describe(1, in[1]), " must have the shape of ", describe(0, in[0]));
  return {{out_like(*in[0].spec)}, {}, {}};
}

Status run_silu_mul(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                    const void*) {
  k.silu_mul(in[0].as<float>(), in[1].as<float>(), numel(in[0]), out[0].as<float>());
  return {};
}

kernels::LinearFusion silu_mul_fusion(const std::vector<Tensor>& in, const void*) {
  kernels::LinearFusion fusion;
  fusion.up = in[1].as<float>();
  return fusion;
}

// out = gelu(gate) * up, GELU with the tanh approximation (Hugging Face's gelu_pytorch_tanh).
Status run_gelu_tanh_mul(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                         const void*) {
  k.gelu_tanh_mul(in[0].as<float>(), in[1].as<float>(), numel(in[0]), out[0].as<float>());
  return {};
}

kernels::LinearFusion gelu_tanh_mul_fusion(const std::vector<Tensor>& in, const void*) {
  kernels::LinearFusion fusion;
  fusion.up = in[1].as<float>();
  fusion.gelu_tanh = true;
  return fusion;
}

Status run_add(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
               const void*) {
  k.add(in[0].as<float>(), in[1].as<float>(), numel(in[0]), out[0].as<float>());
  return {};
}

// y = x * factor (attr "factor", a number).
OpSignature check_scale(const std::vector<OpOperand>& in, const json& attrs) {
  expect_count(in, 1, 1);
  expect_dtype(0, in[0], DType::F32);
  float factor =
      float(float_attr(attrs, "factor", std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max()));
  return {{out_like(*in[0].spec)}, {}, prepared(factor)};
}

Status run_scale(const kernels::KernelTable&, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                 const void* p) {
  const float factor = *static_cast<const float*>(p);
  const float* x = in[0].as<float>();
  float* y = out[0].as<float>();
  parallel_for(numel(in[0]), 32768, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] * factor;
  });
  return {};
}

// out = gelu(gate) * up with the exact GELU, gate * (1 + erf(gate / sqrt 2)) / 2 (Hugging Face's
// "gelu"); no kernel folds it into the linear step that reads it.
Status run_gelu_mul(const kernels::KernelTable&, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                    const void*) {
  const float *gate = in[0].as<float>(), *up = in[1].as<float>();
  float* y = out[0].as<float>();
  parallel_for(numel(in[0]), 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = 0.5f * gate[i] * (1.0f + std::erf(gate[i] * float(M_SQRT1_2))) * up[i];
  });
  return {};
}

// y = cap * tanh(x / cap) (attr "cap" > 0): Gemma 2's final_logit_softcapping, row by row.
OpSignature check_softcap(const std::vector<OpOperand>& in, const json& attrs) {
  expect_count(in, 1, 1);
  expect_activation(0, in[0]);
  const double cap = float_attr(attrs, "cap", 0, 1e6);
  if (!(cap > 0)) fail("attribute 'cap' = ", cap, " must be positive");
  return {{out_like(*in[0].spec)}, {}, prepared(float(cap))};
}

Status run_softcap(const kernels::KernelTable&, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                   const void* p) {
  const float cap = *static_cast<const float*>(p);
  const float* x = in[0].as<float>();
  float* y = out[0].as<float>();
  parallel_for(numel(in[0]), 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = cap * std::tanh(x[i] / cap);
  });
  return {};
}

OpSignature check_copy(const std::vector<OpOperand>& in, const json&) {
  expect_count(in, 1, 1);
  return {{out_like(*in[0].spec)}, {}, {}};
}

Status run_copy(const kernels::KernelTable&, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                const void*) {
  // An output bound to the very buffer it copies from is already up to date.
  if (out[0].data != in[0].data) std::memmove(out[0].data, in[0].data, size_t(numel(in[0])) * dtype_size(in[0].dtype));
  return {};
}

constexpr OpDef kOps[] = {
    {.name = "embedding", .check = check_embedding, .run = run_embedding, .row_inputs = 0b1, .row_outputs = 0b1},
    {.name = "rms_norm",
     .check = check_rms_norm,
     .run = run_rms_norm,
     .row_inputs = 0b1,
     .row_outputs = 0b1,
     .row_wise = true,
     .linear_fusion = rms_norm_fusion,
     .plan = plan_rms_norm},
    {.name = "head_rms_norm",
     .check = check_head_rms_norm,
     .run = run_rms_norm,
     .row_inputs = 0b1,
     .row_outputs = 0b1,
     .row_wise = true,
     .plan = plan_rms_norm},
    {.name = "linear",
     .check = check_linear,
     .run = run_linear,
     .run_group = run_linear_group,
     .row_inputs = 0b1,
     .row_outputs = 0b1,
     .row_wise = true,
     .first_reads = linear_first_reads,
     .takes_linear_fusion = true,
     .plan = plan_linear},
    {.name = "rope", .check = check_rope, .run = run_rope, .row_inputs = 0b11, .row_outputs = 0b1},
    // k, v and the mask; the mask's padding rows are what it does not write.
    {.name = "cache_write", .check = check_cache_write, .run = run_cache_write, .row_inputs = 0b100011},
    // q and the mask.
    {.name = "attention",
     .check = check_attention,
     .run = run_attention,
     .row_inputs = 0b1001,
     .row_outputs = 0b1,
     .plan = plan_attention},
    {.name = "silu_mul",
     .check = check_binary,
     .run = run_silu_mul,
     .row_inputs = 0b11,
     .row_outputs = 0b1,
     .row_wise = true,
     .linear_fusion = silu_mul_fusion},
    {.name = "gelu_tanh_mul",
     .check = check_binary,
     .run = run_gelu_tanh_mul,
     .row_inputs = 0b11,
     .row_outputs = 0b1,
     .row_wise = true,
     .linear_fusion = gelu_tanh_mul_fusion},
    {.name = "add", .check = check_binary, .run = run_add, .row_inputs = 0b11, .row_outputs = 0b1, .row_wise = true},
    {.name = "scale", .check = check_scale, .run = run_scale, .row_inputs = 0b1, .row_outputs = 0b1, .row_wise = true},
    {.name = "gelu_mul",
     .check = check_binary,
     .run = run_gelu_mul,
     .row_inputs = 0b11,
     .row_outputs = 0b1,
     .row_wise = true},
    {.name = "softcap",
     .check = check_softcap,
     .run = run_softcap,
     .row_inputs = 0b1,
     .row_outputs = 0b1,
     .row_wise = true},
    {.name = "copy", .check = check_copy, .run = run_copy},
    {.name = "moe",
     .check = check_moe,
     .run = run_moe,
     .row_inputs = 0b1,
     .row_outputs = 0b1,
     .row_wise = true,
     .first_reads = moe_first_reads,
     .plan = plan_moe},
    {.name = "sigmoid_scale",
     .check = check_sigmoid_scale,
     .run = run_sigmoid_scale,
     .row_inputs = 0b11,
     .row_outputs = 0b1,
     .row_wise = true},
};

}  // namespace

const OpDef* find_op(const std::string& name) {
  for (const auto& op : kOps)
    if (name == op.name) return &op;
  return nullptr;
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const auto& op : kOps) names.push_back(op.name);
  return names;
}

}  // namespace hfstatic
