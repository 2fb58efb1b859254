#include "export/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#include "util/error.h"
#include "util/quant_layout.h"

namespace hfstatic {

std::string quant_scales_name(const std::string& weight) { return weight + ".scales"; }

namespace {

constexpr int64_t kInt4Block = 32;  // int4 groups are packed in blocks of 32 values, 16 bytes

int quant_max(const WeightQuant& q) { return q.dtype == DType::I4 ? 7 : 127; }

// One row: scales, then values q = clamp(rint(x / scale), -max, max) with scale the float16
// rounded max|x| / max of each group (0 for an all-zero group, whose values are 0).
void quantize_row(const std::string& name, const float* x, int64_t row, int64_t cols, const WeightQuant& q,
                  uint8_t* packed, uint16_t* scales, std::vector<int8_t>& values) {
  const int max = quant_max(q);
  for (int64_t g = 0; g < cols / q.group; ++g) {
    const float* xg = x + g * q.group;
    float amax = 0;
    for (int64_t i = 0; i < q.group; ++i) {
      if (!std::isfinite(xg[i]))
        fail("tensor '", name, "' holds ", xg[i], " at [", row, ", ", g * q.group + i,
             "]; only finite weights quantize");
      amax = std::max(amax, std::fabs(xg[i]));
    }
    const uint16_t scale_bits = f32_to_f16(amax / float(max));
    const float scale = f16_to_f32(scale_bits);
    if (std::isinf(scale))
      fail("tensor '", name, "' row ", row, " has a group of magnitude ", amax, ", beyond float16 scales");
    if (scales) scales[g] = scale_bits;
    for (int64_t i = 0; i < q.group; ++i) {
      const float v = scale == 0 ? 0.0f : std::nearbyint(xg[i] / scale);
      values[size_t(g * q.group + i)] = int8_t(std::clamp(v, float(-max), float(max)));
    }
  }
  if (!packed) return;
  // Each group's bytes (int4: blocks of 32 values, value j and j + 16 in a byte's low and high
  // nibble, as q + 8), placed where the row layout puts them.
  const int64_t groups = cols / q.group, group_bytes = dtype_bytes(q.dtype, q.group);
  for (int64_t g = 0; g < groups; ++g) {
    const int8_t* v = values.data() + g * q.group;
    for (int64_t b = 0; b < group_bytes; ++b) {
      uint8_t byte = uint8_t(v[b]);
      if (q.dtype == DType::I4) {
        const int64_t i = b / 16 * kInt4Block + b % 16;
        byte = uint8_t((v[i] + 8) | ((v[i + 16] + 8) << 4));
      }
      packed[quant_byte_offset(group_bytes, groups, g, b)] = byte;
    }
  }
}

std::string fitting_group_sizes(int64_t cols) {
  std::string fits;
  for (int64_t g : kQuantGroupSizes)
    if (cols % g == 0) fits += cat(fits.empty() ? "" : ", ", g);
  return fits.empty() ? "none: the width is not a multiple of 32" : "group sizes that fit: " + fits;
}

}  // namespace

void quantize_matrix(const std::string& name, const float* x, int64_t rows, int64_t cols, const WeightQuant& q,
                     uint8_t* packed, uint16_t* scales) {
  const int64_t packed_row = q.dtype == DType::I4 ? cols / 2 : cols, scales_row = cols / q.group;
  const int64_t threads = std::clamp<int64_t>(rows / 64, 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  std::vector<std::string> errors(static_cast<size_t>(threads));
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<int8_t> values(static_cast<size_t>(cols));
      try {
        for (int64_t r = rows * t / threads; r < rows * (t + 1) / threads; ++r)
          quantize_row(name, x + r * cols, r, cols, q, packed ? packed + r * packed_row : nullptr,
                       scales ? scales + r * scales_row : nullptr, values);
      } catch (const Error& e) {
        errors[size_t(t)] = e.what();
      }
    });
  for (auto& th : pool) th.join();
  for (const auto& e : errors)
    if (!e.empty()) fail(e);
}

std::set<std::string> quantize_graph(ProgramSpec& spec, const WeightQuant& q, const std::vector<WeightUse>& weights) {
  std::map<std::string, Shape> shapes;
  for (const WeightUse& w : weights) shapes[w.name] = w.shape;
  if (!is_quant_group_size(q.group))
    fail("--group-size ", q.group, " is not a group size the kernels implement (", quant_group_sizes_text(), ")");
  std::set<std::string> quantized;
  // Whether input i of a node is a weight to quantize: a linear's or embedding's matrix, and
  // every expert matrix of a moe node (its router, input 1, stays float: routing is a choice
  // that rounding must not flip).
  auto quantizes = [](const NodeSpec& node, size_t i) {
    if (node.op == "linear" || node.op == "embedding") return i == 1;
    return node.op == "moe" && i >= 2;
  };
  for (MethodSpec& m : spec.methods)
    for (NodeSpec& node : m.nodes) {
      std::vector<std::string> inputs;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const std::string& w = node.inputs[i];
        inputs.push_back(w);
        auto shape = shapes.find(w);
        if (!quantizes(node, i) || shape == shapes.end() || shape->second.size() != 2) continue;
        const int64_t cols = shape->second[1];
        if (cols % q.group != 0)
          fail("tensor '", w, "' ", shape_str(shape->second), " has ", cols, " input features, not a multiple of ",
               "--group-size ", q.group, " (", fitting_group_sizes(cols), ")");
        inputs.push_back(quant_scales_name(w));
        node.attrs.update(weight_quant_attrs(q));
        quantized.insert(w);
      }
      node.inputs = std::move(inputs);
    }
  return quantized;
}

}  // namespace hfstatic
