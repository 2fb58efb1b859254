// What the ops' load-time checks and run functions share: operand checks that name the operand
// at fault, attribute readers, and the reading of quantized weights.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/ops.h"

namespace hfstatic::ops {

void expect_count(const std::vector<OpOperand>& in, size_t min, size_t max);
// "input i 'name' (dtype [shape])"
std::string describe(size_t i, const OpOperand& o);
void expect_float(size_t i, const OpOperand& o);
void expect_dtype(size_t i, const OpOperand& o, DType t);
void expect_rank(size_t i, const OpOperand& o, size_t rank);
// x: float32 activations [1, T, N]
void expect_activation(size_t i, const OpOperand& o);
void expect_cache(size_t i, const OpOperand& o);
int64_t int_attr(const nlohmann::json& attrs, const char* key, int64_t min, int64_t max);
double float_attr(const nlohmann::json& attrs, const char* key, double min, double max);

ValueSpec out_like(const ValueSpec& v);
ValueSpec f32(Shape s);
template <typename T>
std::shared_ptr<const void> prepared(T value) {
  return std::make_shared<const T>(std::move(value));
}
int64_t numel(const Tensor& t);

// A quantized weight (attributes weight_dtype, group_size) is input `at`, stored as int8 [N, K]
// or packed int4 uint8 [N, K / 2], and its float16 scales [N, K / group] are input at + 1.
// Checks them against q; returns the weight's logical [N, K]. in_width: the K the node's
// activations (input 0) have, or -1 (the caller checks K).
Shape check_quantized_weight(const std::vector<OpOperand>& in, const WeightQuant& q, int64_t in_width, size_t at = 1);
// A weight operand that is not float: name the attributes that would make it a quantized one.
void expect_float_weight(size_t i, const OpOperand& o);
// A quantized weight at run time (checked at load): its dtype follows from the stored one
// (stored_weight_type), its group from the input width over the scales' width.
kernels::QuantWeights quant_weights(const Tensor& scales, int64_t in_width);
DType stored_weight_type(const Tensor& w);
bool is_quantized(const Tensor& w);

}  // namespace hfstatic::ops
