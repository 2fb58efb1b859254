// The mixture-of-experts ops: moe (router, top-k, the chosen SiLU-gated experts) and
// sigmoid_scale (qwen2_moe's gate on its shared expert).
#include "executor/ops_moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "executor/op_support.h"
#include "kernels/kernels.h"

namespace hfstatic {

using nlohmann::json;
using namespace ops;

namespace {

struct MoeAttrs {
  int64_t experts, top_k, expert_size;
  bool normalize;
  size_t per_weight;  // operands a weight takes: 1, or 2 with its scales
};

size_t weight_at(const MoeAttrs& a, int64_t expert, int which) {
  return 2 + (size_t(expert) * 3 + size_t(which)) * a.per_weight;
}

// Expert e's gate (which 0), up (1) or down (2) product, writing y.
kernels::LinearOutput expert_output(const std::vector<Tensor>& in, const MoeAttrs& a, int64_t expert, int which,
                                    float* y) {
  const size_t at = weight_at(a, expert, which);
  const Tensor& w = in[at];
  const int64_t in_width = which == 2 ? a.expert_size : in[0].dim(2);
  kernels::LinearOutput o{w.data, stored_weight_type(w), w.dim(0), nullptr, DType::F32, y};
  if (a.per_weight == 2) o.quant = quant_weights(in[at + 1], in_width);
  return o;
}

// Floats of the routing buffer and of the rows buffer for T rows.
size_t routing_floats(const MoeAttrs& a, int64_t T) {
  return size_t(T * a.experts + 4 * T * a.top_k + 2 * a.experts + 1);
}
// Gathered rows and their down, gate and up outputs, for a batch of at most max(T, k) rows.
size_t rows_floats(const MoeAttrs& a, int64_t T, int64_t E) {
  const int64_t cap = std::max(T, a.top_k);
  return size_t(2 * cap * E + 2 * cap * a.expert_size);
}

}  // namespace

OpSignature check_moe(const std::vector<OpOperand>& in, const json& attrs) {
  const int64_t experts = int_attr(attrs, "n_experts", 1, 1 << 12);
  const int64_t top_k = int_attr(attrs, "top_k", 1, experts);
  auto normalize = attrs.find("normalize");
  if (normalize == attrs.end() || !normalize->is_boolean()) fail("attribute 'normalize' must be a boolean");
  const std::optional<WeightQuant> q = weight_quant_from_attrs(attrs);
  MoeAttrs a{experts, top_k, 0, normalize->get<bool>(), size_t(q ? 2 : 1)};
  expect_count(in, weight_at(a, experts, 0), weight_at(a, experts, 0));
  expect_activation(0, in[0]);
  const int64_t E = in[0].spec->shape[2];
  expect_float_weight(1, in[1]);
  expect_rank(1, in[1], 2);
  if (in[1].spec->shape != Shape{experts, E})
    fail(describe(1, in[1]), ", the router, must be ", shape_str({experts, E}), " (n_experts, input width)");
  for (int64_t e = 0; e < experts; ++e)
    for (int which = 0; which < 3; ++which) {
      const size_t at = weight_at(a, e, which);
      Shape w = in[at].spec->shape;
      if (q) {
        w = check_quantized_weight(in, *q, -1, at);
      } else {
        expect_float_weight(at, in[at]);
        expect_rank(at, in[at], 2);
      }
      if (a.expert_size == 0) a.expert_size = w[0];
      const Shape want = which == 2 ? Shape{E, a.expert_size} : Shape{a.expert_size, E};
      if (w != want)
        fail(describe(at, in[at]), " must be ", q ? "logically " : "", shape_str(want), ", expert ", e, "'s ",
             which == 0   ? "gate"
             : which == 1 ? "up"
                          : "down",
             " projection of ", a.expert_size, " features over the input width ", E);
    }
  return {{f32(in[0].spec->shape)}, {}, prepared(a)};
}

kernels::KernelPlan plan_moe(const kernels::KernelTable& k, bool many_rows, std::span<const std::vector<Tensor>> inputs,
                             const void* p, kernels::FoldedOp) {
  const auto& a = *static_cast<const MoeAttrs*>(p);
  const std::vector<Tensor>& in = inputs[0];
  const int64_t T = in[0].dim(1), E = in[0].dim(2);
  const kernels::LinearOutput router{in[1].data, in[1].dtype, a.experts, nullptr, DType::F32, nullptr};
  kernels::KernelPlan plan = k.plan_linear(many_rows, T, E, &router, 1, kernels::FoldedOp::None);
  std::vector<kernels::LinearOutput> gate_up;
  for (int64_t e = 0; e < a.top_k; ++e)
    for (int which = 0; which < 2; ++which) gate_up.push_back(expert_output(in, a, e, which, nullptr));
  const kernels::KernelPlan experts =
      k.plan_linear(many_rows, std::max(T, a.top_k), E, gate_up.data(), int(gate_up.size()), kernels::FoldedOp::None);
  const kernels::LinearOutput down = expert_output(in, a, 0, 2, nullptr);
  plan.scratch.merge(experts.scratch);
  plan.scratch.merge(
      k.plan_linear(many_rows, std::max(T, a.top_k), a.expert_size, &down, 1, kernels::FoldedOp::Gate).scratch);
  plan.scratch[kernels::ScratchBuffer::ExpertRouting] = routing_floats(a, T);
  plan.scratch[kernels::ScratchBuffer::ExpertRows] = rows_floats(a, T, E);
  plan.variant = cat(experts.variant, ", ", a.top_k, " of ", a.experts, " experts");
  return plan;
}

// The router's rows, which every row reads first (the experts are not known before it runs).
std::vector<PrefetchRange> moe_first_reads(const kernels::KernelTable& k, std::span<const std::vector<Tensor>> inputs,
                                           int threads, size_t bytes) {
  const std::vector<Tensor>& in = inputs[0];
  const kernels::LinearOutput router{in[1].data, in[1].dtype, in[1].dim(0), nullptr, DType::F32, nullptr};
  return k.linear_group_first_reads(in[0].dim(1), in[0].dim(2), &router, 1, threads, bytes);
}

Status run_moe(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
               const void* p) {
  const auto& a = *static_cast<const MoeAttrs*>(p);
  const int64_t T = in[0].dim(1), E = in[0].dim(2), N = a.experts, K = a.top_k, F = a.expert_size;
  const float* x = in[0].as<float>();
  float* y = out[0].as<float>();
  // Routing: probabilities [T, N]; each row's chosen experts and their weights [T, K]; the rows
  // of each expert in expert then row order with their weights [T * K], the experts' offsets
  // into them [N + 1] and a cursor each [N].
  float* probs = kernels::detail::scratch(kernels::ScratchBuffer::ExpertRouting, routing_floats(a, T));
  float* weights = probs + T * N;
  float* order_weight = weights + T * K;
  auto* chosen = reinterpret_cast<int32_t*>(order_weight + T * K);
  int32_t* order = chosen + T * K;
  int32_t* offsets = order + T * K;
  int32_t* fill = offsets + N + 1;
  k.linear(x, T, E, in[1].data, in[1].dtype, N, nullptr, DType::F32, probs);
  std::fill(offsets, offsets + N + 1, 0);
  for (int64_t r = 0; r < T; ++r) {
    float* pr = probs + r * N;
    const float top = *std::max_element(pr, pr + N);
    float sum = 0;
    for (int64_t e = 0; e < N; ++e) sum += pr[e] = std::exp(pr[e] - top);
    for (int64_t e = 0; e < N; ++e) pr[e] /= sum;
    // The k largest; among equal probabilities the lower expert first.
    float picked = 0;
    for (int64_t j = 0; j < K; ++j) {
      int64_t best = -1;
      for (int64_t e = 0; e < N; ++e) {
        if (std::find(chosen + r * K, chosen + r * K + j, int32_t(e)) != chosen + r * K + j) continue;
        if (best < 0 || pr[e] > pr[best]) best = e;
      }
      chosen[r * K + j] = int32_t(best);
      weights[r * K + j] = pr[best];
      picked += pr[best];
      ++offsets[best + 1];
    }
    if (a.normalize)
      for (int64_t j = 0; j < K; ++j) weights[r * K + j] /= picked;
  }
  for (int64_t e = 0; e < N; ++e) offsets[e + 1] += offsets[e];

  // Each expert's rows and their weights, in expert then row order.
  std::copy(offsets, offsets + N, fill);
  for (int64_t r = 0; r < T; ++r)
    for (int64_t j = 0; j < K; ++j) {
      const int32_t e = chosen[r * K + j];
      order[fill[e]] = int32_t(r);
      order_weight[fill[e]++] = weights[r * K + j];
    }
  // Gathered rows, their down outputs [cap, E], gate and up outputs [cap, F].
  const int64_t cap = std::max(T, K);
  float* rows = kernels::detail::scratch(kernels::ScratchBuffer::ExpertRows, rows_floats(a, T, E));
  float* down = rows + cap * E;
  float* gate = down + cap * E;
  float* up = gate + cap * F;
  std::fill(y, y + T * E, 0.0f);
  auto add_weighted = [&](int64_t r, float w, const float* d) {
    float* yr = y + r * E;
    for (int64_t i = 0; i < E; ++i) yr[i] += w * d[i];
  };
  // Rows [begin, begin + n) of the order, gathered.
  auto gather = [&](int64_t begin, int64_t n) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(rows + i * E, x + order[begin + i] * E, size_t(E) * sizeof(float));
  };
  kernels::LinearFusion silu;
  silu.up = up;
  // Float weights in a table that runs many rows by the blocked multiply: an expert at a time.
  if (a.per_weight == 1 && k.linear_group != k.linear_few_rows) {
    for (int64_t e = 0; e < N; ++e) {
      const int64_t begin = offsets[e], count = offsets[e + 1] - begin;
      if (count == 0) continue;
      gather(begin, count);
      const kernels::LinearOutput gate_up[2] = {expert_output(in, a, e, 0, gate), expert_output(in, a, e, 1, up)};
      k.linear_group(rows, count, E, gate_up, 2, nullptr);
      const kernels::LinearOutput d = expert_output(in, a, e, 2, down);
      k.linear_group(gate, count, F, &d, 1, &silu);
      for (int64_t i = 0; i < count; ++i) add_weighted(order[begin + i], order_weight[begin + i], down + i * E);
    }
    return {};
  }
  // Otherwise matrix-vector products, each expert's over its own rows (LinearOutput::x_rows): the
  // experts in batches of at most `cap` rows, each batch's gate and up products as one parallel
  // pass and its down products as one more.
  std::vector<kernels::LinearOutput> products;
  // Projection `which` of experts [e0, e1), whose rows start at row `base` of the order.
  auto add_products = [&](int64_t e0, int64_t e1, int64_t base, int which) {
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t first = offsets[e] - base, count = offsets[e + 1] - offsets[e];
      if (count == 0) continue;
      float* out_rows = which == 0 ? gate + first * F : which == 1 ? up + first * F : down + first * E;
      products.push_back(expert_output(in, a, e, which, out_rows));
      products.back().x_row = first;
      products.back().x_rows = count;
    }
  };
  for (int64_t e0 = 0, e1 = 0; e0 < N; e0 = e1) {
    while (e1 < N && offsets[e1 + 1] - offsets[e0] <= cap) ++e1;
    const int64_t base = offsets[e0], n = offsets[e1] - base;
    if (n == 0) continue;
    gather(base, n);
    products.clear();
    add_products(e0, e1, base, 0);
    add_products(e0, e1, base, 1);
    k.linear_group(rows, n, E, products.data(), int(products.size()), nullptr);
    products.clear();
    add_products(e0, e1, base, 2);
    k.linear_group(gate, n, F, products.data(), int(products.size()), &silu);
    for (int64_t i = 0; i < n; ++i) add_weighted(order[base + i], order_weight[base + i], down + i * E);
  }
  return {};
}

OpSignature check_sigmoid_scale(const std::vector<OpOperand>& in, const json&) {
  expect_count(in, 2, 2);
  expect_activation(0, in[0]);
  expect_activation(1, in[1]);
  const Shape& x = in[0].spec->shape;
  if (in[1].spec->shape != Shape{1, x[1], 1})
    fail(describe(1, in[1]), " must be float32 ", shape_str({1, x[1], 1}), ": one gate a row of ", describe(0, in[0]));
  return {{out_like(*in[0].spec)}, {}, {}};
}

Status run_sigmoid_scale(const kernels::KernelTable&, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                         const void*) {
  const int64_t T = in[0].dim(1), N = in[0].dim(2);
  const float* x = in[0].as<float>();
  const float* g = in[1].as<float>();
  float* y = out[0].as<float>();
  for (int64_t r = 0; r < T; ++r) {
    const float s = 1.0f / (1.0f + std::exp(-g[r]));
    for (int64_t i = 0; i < N; ++i) y[r * N + i] = x[r * N + i] * s;
  }
  return {};
}

}  // namespace hfstatic
