#include "executor/op_support.h"

namespace hfstatic::ops {

void expect_count(const std::vector<OpOperand>& in, size_t min, size_t max) {
  if (in.size() < min || in.size() > max)
    fail("takes ", min == max ? cat(min) : cat(min, " to ", max), " inputs, got ", in.size());
}

std::string describe(size_t i, const OpOperand& o) {
  return cat("input ", i, " '", o.spec->name, "' (", dtype_name(o.spec->dtype), " ", shape_str(o.spec->shape), ")");
}

void expect_float(size_t i, const OpOperand& o) {
  DType t = o.spec->dtype;
  if (t != DType::F32 && t != DType::F16 && t != DType::BF16)
    fail(describe(i, o), " must be float32, float16 or bfloat16");
}

void expect_dtype(size_t i, const OpOperand& o, DType t) {
  if (o.spec->dtype != t) fail(describe(i, o), " must be ", dtype_name(t));
}

void expect_rank(size_t i, const OpOperand& o, size_t rank) {
  if (o.spec->shape.size() != rank) fail(describe(i, o), " must have rank ", rank);
}

void expect_activation(size_t i, const OpOperand& o) {
  expect_dtype(i, o, DType::F32);
  expect_rank(i, o, 3);
  if (o.spec->shape[0] != 1) fail(describe(i, o), " must have batch 1");
}

void expect_cache(size_t i, const OpOperand& o) {
  if (o.spec->dtype != DType::F32 && o.spec->dtype != DType::F16)
    fail(describe(i, o), " must be a float32 or float16 cache");
  expect_rank(i, o, 4);
  if (o.spec->shape[0] != 1) fail(describe(i, o), " must have batch 1");
}

int64_t int_attr(const nlohmann::json& attrs, const char* key, int64_t min, int64_t max) {
  auto it = attrs.find(key);
  if (it == attrs.end()) fail("attribute '", key, "' is missing");
  if (!it->is_number_integer()) fail("attribute '", key, "' must be an integer");
  int64_t v = it->get<int64_t>();
  if (v < min || v > max) fail("attribute '", key, "' = ", v, " is outside [", min, ", ", max, "]");
  return v;
}

double float_attr(const nlohmann::json& attrs, const char* key, double min, double max) {
  auto it = attrs.find(key);
  if (it == attrs.end()) fail("attribute '", key, "' is missing");
  if (!it->is_number()) fail("attribute '", key, "' must be a number");
  double v = it->get<double>();
  if (!(v >= min && v <= max)) fail("attribute '", key, "' = ", v, " is outside [", min, ", ", max, "]");
  return v;
}

ValueSpec out_like(const ValueSpec& v) { return {"", v.dtype, v.shape}; }
ValueSpec f32(Shape s) { return {"", DType::F32, std::move(s)}; }

int64_t numel(const Tensor& t) { return *shape_numel(*t.shape); }

Shape check_quantized_weight(const std::vector<OpOperand>& in, const WeightQuant& q, int64_t in_width, size_t at) {
  const OpOperand& w = in[at];
  if (in.size() < at + 2)
    fail("input ", at + 1, ", the float16 scales of quantized weight '", w.spec->name, "', is missing");
  expect_rank(at, w, 2);
  const DType stored = quantized_storage_dtype(q);
  if (w.spec->dtype != stored)
    fail(describe(at, w), " must be ", dtype_name(stored), " to hold ", dtype_name(q.dtype), " values");
  const int64_t per_byte = q.dtype == DType::I4 ? 2 : 1;
  const Shape logical = {w.spec->shape[0], w.spec->shape[1] * per_byte};
  if (in_width >= 0 && logical[1] != in_width)
    fail(describe(at, w), " must be ", dtype_name(stored), " ", shape_str({logical[0], in_width / per_byte}), " (",
         in_width, " input features", per_byte == 2 ? ", two a byte" : "", ") to match ", describe(0, in[0]));
  if (logical[1] % q.group != 0)
    fail("attribute 'group_size' = ", q.group, " does not divide the ", logical[1], " input features of ",
         describe(at, w));
  const OpOperand& scales = in[at + 1];
  const Shape want = {logical[0], logical[1] / q.group};
  if (scales.spec->dtype != DType::F16 || scales.spec->shape != want)
    fail(describe(at + 1, scales), " must be the float16 scales of '", w.spec->name, "': float16 ", shape_str(want));
  return logical;
}

void expect_float_weight(size_t i, const OpOperand& o) {
  if (o.spec->dtype == DType::I8 || o.spec->dtype == DType::U8)
    fail(describe(i, o), " is quantized but the node has no attribute '", kWeightDtypeAttr, "'");
  expect_float(i, o);
}

kernels::QuantWeights quant_weights(const Tensor& scales, int64_t in_width) {
  return {scales.as<const uint16_t>(), in_width / scales.dim(1)};
}
DType stored_weight_type(const Tensor& w) { return w.dtype == DType::U8 ? DType::I4 : w.dtype; }
bool is_quantized(const Tensor& w) { return w.dtype == DType::I8 || w.dtype == DType::U8; }

}  // namespace hfstatic::ops
