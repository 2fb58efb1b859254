// The argument types of the linear kernels (kernels.h), apart from the table of kernels so that
// callers that only describe a product need not see it.
#pragma once
#include <cstdint>

#include "util/dtype.h"

namespace hfstatic::kernels {

// The scales of quantized weights (w_type I8 or I4; layouts in README.md): each row of w is cut
// into groups of `group` consecutive input features, weight = q * float32(scale of its group).
struct QuantWeights {
  const uint16_t* scales = nullptr;  // float16 [out][in / group]
  int64_t group = 0;                 // 32, 64 or 128, dividing in
};

// One product of a linear group: y[rows, out] = x * w[out, in]^T (+ bias[out]).
struct LinearOutput {
  const void* w;
  DType w_type;  // F32, F16, BF16, or I8 / I4 with quant set
  int64_t out;
  const void* bias;  // may be null
  DType bias_type;
  float* y;
  QuantWeights quant{};
  // x_rows > 0: the product reads rows [x_row, x_row + x_rows) of x alone and writes x_rows rows
  // of y (a group of products each over its own rows: a mixture's experts); 0: every row.
  int64_t x_row = 0, x_rows = 0;
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
  bool gelu_tanh = false;  // with up: gelu_tanh_mul(x, up) in place of silu_mul
};

// Which op a linear group folds in, for planning (before the operands' addresses are known).
enum class FoldedOp : uint8_t { None, Norm, Gate };

}  // namespace hfstatic::kernels
