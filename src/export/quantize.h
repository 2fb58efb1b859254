// Quantized weights for export: symmetric round-to-nearest int8 / int4 with float16 scales per
// group of input features (docs/program-format.md, "Quantized weights").
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "export/hf_config.h"
#include "format/program_spec.h"

namespace hfstatic {

// Name of the scales tensor of a quantized weight.
std::string quant_scales_name(const std::string& weight);

// Quantizes a row-major float32 matrix [rows, cols] (cols a multiple of q.group): packed values
// (int8 [rows, cols], or int4 [rows, cols / 2]; each row laid out as util/quant_layout.h says)
// into `packed` and float16 scales [rows, cols / q.group] into `scales`; either may be null.
// Throws Error naming `name` for a value that is not finite or a scale beyond float16's range.
void quantize_matrix(const std::string& name, const float* x, int64_t rows, int64_t cols, const WeightQuant& q,
                     uint8_t* packed, uint16_t* scales);

// Makes the graphs read every weight of a linear or embedding node quantized: the node gets
// its scales tensor after the weight and the quantization attributes. Throws Error naming a
// weight whose input width the group size does not divide (with the group sizes that would).
// Returns the names of the quantized weights (the tied embedding table once).
std::set<std::string> quantize_graph(ProgramSpec& spec, const WeightQuant& q, const std::vector<WeightUse>& weights);

}  // namespace hfstatic
