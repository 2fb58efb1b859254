// The mixture-of-experts ops of the op table (ops.cpp).
//   moe (attributes n_experts, top_k, normalize; weight_dtype and group_size when quantized):
//     inputs x [1, T, E], the router [n_experts, E] (float), then each expert's gate [F, E], up
//     [F, E] and down [E, F] projections (each followed by its scales when quantized); output
//     [1, T, E]: per row, the softmax of the router's scores, its top_k experts (among equal
//     probabilities the lower index first) weighted by their probabilities (renormalised over
//     the k with normalize), each expert down(silu(gate x) * up x), summed in expert order. Only
//     the chosen experts' weights are read; the rows of an expert run as one product.
//   sigmoid_scale: x [1, T, N] times sigmoid(g) of its row's g [1, T, 1].
#pragma once
#include "executor/ops.h"

namespace hfstatic {

OpSignature check_moe(const std::vector<OpOperand>& in, const nlohmann::json& attrs);
kernels::KernelPlan plan_moe(const kernels::KernelTable& k, bool many_rows, std::span<const std::vector<Tensor>> inputs,
                             const void* prepared, kernels::FoldedOp folded);
std::vector<PrefetchRange> moe_first_reads(const kernels::KernelTable& k, std::span<const std::vector<Tensor>> inputs,
                                           int threads, size_t bytes);
Status run_moe(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
               const void* prepared);

OpSignature check_sigmoid_scale(const std::vector<OpOperand>& in, const nlohmann::json& attrs);
Status run_sigmoid_scale(const kernels::KernelTable& k, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                         const void* prepared);

}  // namespace hfstatic
