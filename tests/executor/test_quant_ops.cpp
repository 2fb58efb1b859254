// Quantized weights in linear and embedding nodes: values computed against hand-made int8 and
// int4 tensors (the int4 nibble layout included), and every malformed weight, scales tensor or
// attribute refused at load with an error naming the tensor.
#include <gmock/gmock.h>

#include "graph_test.h"
#include "kernels/isa.h"
#include "kernels/thread_pool.h"

namespace hfstatic {
namespace {

using testing::HasSubstr;

// Row-major int values q[rows][cols] as the program stores them: int8 bytes, or int4 packed in
// blocks of 32 (byte j of a block: value j low nibble, value j + 16 high nibble, each q + 8).
std::vector<uint8_t> pack(const std::vector<int>& q, int64_t rows, int64_t cols, DType t) {
  std::vector<uint8_t> out;
  for (int64_t r = 0; r < rows; ++r) {
    const int* row = q.data() + r * cols;
    if (t == DType::I8) {
      for (int64_t c = 0; c < cols; ++c) out.push_back(uint8_t(int8_t(row[c])));
      continue;
    }
    for (int64_t b = 0; b < cols / 32; ++b)
      for (int j = 0; j < 16; ++j) out.push_back(uint8_t((row[32 * b + j] + 8) | ((row[32 * b + j + 16] + 8) << 4)));
  }
  return out;
}

std::vector<uint8_t> f16_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out;
  for (float f : v) {
    const uint16_t h = f32_to_f16(f);
    out.push_back(uint8_t(h)), out.push_back(uint8_t(h >> 8));
  }
  return out;
}

// q[r][c] for a 4 x 64 matrix: distinct per position within a group so that any layout error
// moves a value; int4 values stay within [-7, 7].
int q_value(int64_t r, int64_t c, DType t) {
  const int span = t == DType::I4 ? 15 : 255;
  return int((r * 37 + c * 11) % span) - span / 2;
}

struct QuantGraph {
  DType t;
  int64_t rows = 4, cols = 64, group = 32;
  std::vector<int> q;
  std::vector<float> scales;  // [rows][cols / group]

  explicit QuantGraph(DType type) : t(type) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) q.push_back(q_value(r, c, t));
    for (int64_t i = 0; i < rows * cols / group; ++i) scales.push_back(0.25f * float(i + 1));  // exact in float16
  }
  double w(int64_t r, int64_t c) const {
    return q[size_t(r * cols + c)] * double(scales[size_t(r * (cols / group) + c / group)]);
  }
  json attrs() const { return {{"weight_dtype", dtype_name(t)}, {"group_size", group}}; }
  void add_weights(Graph& g) const {
    const Shape stored = {rows, t == DType::I4 ? cols / 2 : cols};
    g.weights.push_back({"w", t == DType::I4 ? DType::U8 : DType::I8, stored, pack(q, rows, cols, t)});
    g.weights.push_back({"w.scales", DType::F16, {rows, cols / group}, f16_bytes(scales)});
  }
};

class QuantOps : public GraphTest, public testing::WithParamInterface<DType> {};

// The scalar kernels multiply by the dequantized weights in float32; the SIMD ones may round
// each group of 32 activations to int8 first (scale max|x| / 127), which moves a product by at
// most the sum over groups of max|x| / 254 * sum |w|.
TEST_P(QuantOps, LinearComputesWithTheDequantizedWeights) {
  const QuantGraph qg(GetParam());
  for (kernels::Isa isa : {kernels::Isa::Scalar, kernels::Isa::Avx512})
    for (int64_t T : {1, 5}) {
      SCOPED_TRACE(cat(kernels::isa_name(kernels::best_isa(isa)), ", ", T, " rows"));
      Graph g;
      g.in("x", DType::F32, {1, T, qg.cols}).val("y", DType::F32, {1, T, qg.rows});
      qg.add_weights(g);
      g.node("linear", {"x", "w", "w.scales"}, {"y"}, qg.attrs()).out("y", "y", OutputMemory::Planned);
      RuntimeOptions options;
      options.isa = isa;
      auto method = load(g, options);
      std::vector<float> x(size_t(T * qg.cols));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::cos(0.7 * double(i)));
      ThreadPool pool(2);
      Execution ex(method);
      ex.bind_input(0, x.data());
      ASSERT_TRUE(ex.run(&pool).ok());
      const float* y = static_cast<const float*>(ex.output_data(0));
      for (int64_t t = 0; t < T; ++t)
        for (int64_t r = 0; r < qg.rows; ++r) {
          double want = 0, rounding = 0;
          for (int64_t g0 = 0; g0 < qg.cols; g0 += 32) {
            double amax = 0, wsum = 0;
            for (int64_t c = g0; c < g0 + 32; ++c) {
              const double xv = x[size_t(t * qg.cols + c)];
              want += xv * qg.w(r, c);
              amax = std::max(amax, std::fabs(xv));
              wsum += std::fabs(qg.w(r, c));
            }
            rounding += amax / 254 * wsum;
          }
          const double tolerance =
              1e-4 * (1 + std::fabs(want)) + (method->isa() == kernels::Isa::Scalar ? 0 : rounding);
          EXPECT_NEAR(y[t * qg.rows + r], want, tolerance) << "row " << t << " feature " << r;
        }
    }
}

TEST_P(QuantOps, EmbeddingGathersDequantizedRows) {
  const QuantGraph qg(GetParam());
  Graph g;
  g.in("ids", DType::I64, {1, 3}).val("e", DType::F32, {1, 3, qg.cols});
  qg.add_weights(g);
  g.node("embedding", {"ids", "w", "w.scales"}, {"e"}, qg.attrs()).out("e", "e", OutputMemory::Planned);
  auto method = load(g);
  std::vector<int64_t> ids = {2, 0, 3};
  Execution ex(method);
  ex.bind_input(0, ids.data());
  ASSERT_TRUE(ex.run().ok());
  const float* e = static_cast<const float*>(ex.output_data(0));
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t c = 0; c < qg.cols; ++c)
      EXPECT_EQ(e[int64_t(i) * qg.cols + c], float(qg.w(ids[i], c))) << "token " << ids[i] << " feature " << c;
}

INSTANTIATE_TEST_SUITE_P(Int8AndInt4, QuantOps, testing::Values(DType::I8, DType::I4),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// ---- malformed quantized operands ----------------------------------------------------------

class QuantErrors : public GraphTest {
 protected:
  // A linear [1, 2, 64] -> 4 over int4 weights; `edit` breaks one thing.
  std::string linear_error(const std::function<void(Graph&, json&, std::vector<std::string>&)>& edit) {
    const QuantGraph qg(DType::I4);
    Graph g;
    g.in("x", DType::F32, {1, 2, 64}).val("y", DType::F32, {1, 2, 4});
    qg.add_weights(g);
    json attrs = qg.attrs();
    std::vector<std::string> inputs = {"x", "w", "w.scales"};
    edit(g, attrs, inputs);
    g.node("linear", inputs, {"y"}, attrs).out("y", "y", OutputMemory::Planned);
    return load_error(g);
  }
  static void replace_weight(Graph& g, const std::string& name, DType t, Shape s) {
    for (auto& w : g.weights)
      if (w.name == name) w = {name, t, s, std::vector<uint8_t>(size_t(*shape_numel(s)) * dtype_size(t))};
  }
};

TEST_F(QuantErrors, MissingScales) {
  EXPECT_THAT(linear_error([](Graph&, json&, std::vector<std::string>& in) { in.pop_back(); }),
              HasSubstr("method 'm' node 0 (linear): input 2, the float16 scales of quantized weight 'w', is missing"));
}

TEST_F(QuantErrors, ShortScales) {
  EXPECT_THAT(linear_error([](Graph& g, json&, auto&) {
                replace_weight(g, "w.scales", DType::F16, {4, 1});
              }),
              HasSubstr("node 0 (linear): input 2 'w.scales' (float16 [4, 1]) must be the float16 scales of 'w': "
                        "float16 [4, 2]"));
}

TEST_F(QuantErrors, MistypedScales) {
  EXPECT_THAT(linear_error([](Graph& g, json&, auto&) {
                replace_weight(g, "w.scales", DType::F32, {4, 2});
              }),
              HasSubstr("input 2 'w.scales' (float32 [4, 2]) must be the float16 scales of 'w': float16 [4, 2]"));
}

TEST_F(QuantErrors, ScalesOfTheWrongRowCount) {
  EXPECT_THAT(linear_error([](Graph& g, json&, auto&) {
                replace_weight(g, "w.scales", DType::F16, {2, 2});
              }),
              HasSubstr("input 2 'w.scales' (float16 [2, 2]) must be the float16 scales of 'w': float16 [4, 2]"));
}

TEST_F(QuantErrors, GroupSizeThatDoesNotDivideTheWidth) {
  EXPECT_THAT(linear_error([](Graph& g, json& a, auto&) {
                a["group_size"] = 128;
                replace_weight(g, "w.scales", DType::F16, {4, 1});
              }),
              HasSubstr("attribute 'group_size' = 128 does not divide the 64 input features of input 1 'w' "
                        "(uint8 [4, 32])"));
  EXPECT_THAT(linear_error([](Graph&, json& a, auto&) { a["group_size"] = 48; }),
              HasSubstr("attribute 'group_size' = 48 is not a group size the kernels implement (32, 64 or 128)"));
  // Multiples of 32 that divide the width but that no kernel implements: refused, not misread.
  for (int group : {96, 192, 576})
    EXPECT_THAT(linear_error([group](Graph&, json& a, auto&) { a["group_size"] = group; }),
                HasSubstr("attribute 'group_size' = " + std::to_string(group) +
                          " is not a group size the kernels implement (32, 64 or 128)"));
  EXPECT_THAT(linear_error([](Graph&, json& a, auto&) { a.erase("group_size"); }),
              HasSubstr("attribute 'group_size' is missing (a quantized weight needs it)"));
}

TEST_F(QuantErrors, PackedSizeThatDoesNotMatchTheWidth) {
  EXPECT_THAT(linear_error([](Graph& g, json&, auto&) {
                replace_weight(g, "w", DType::U8, {4, 64});
              }),
              HasSubstr("input 1 'w' (uint8 [4, 64]) must be uint8 [4, 32] (64 input features, two a byte) to "
                        "match input 0 'x' (float32 [1, 2, 64])"));
}

TEST_F(QuantErrors, WeightOfAnotherDtype) {
  EXPECT_THAT(linear_error([](Graph& g, json&, auto&) {
                replace_weight(g, "w", DType::I8, {4, 64});
              }),
              HasSubstr("input 1 'w' (int8 [4, 64]) must be uint8 to hold int4 values"));
  EXPECT_THAT(linear_error([](Graph&, json& a, auto&) { a["weight_dtype"] = "int3"; }),
              HasSubstr("attribute 'weight_dtype' = \"int3\" is not \"int8\" or \"int4\""));
  // Quantized bytes without the attributes are not read as float weights.
  EXPECT_THAT(linear_error([](Graph&, json& a, std::vector<std::string>& in) {
                a = json::object();
                in.pop_back();
              }),
              HasSubstr("input 1 'w' (uint8 [4, 32]) is quantized but the node has no attribute 'weight_dtype'"));
}

TEST_F(QuantErrors, EmbeddingScalesAreCheckedToo) {
  const QuantGraph qg(DType::I8);
  Graph g;
  g.in("ids", DType::I64, {1, 3}).val("e", DType::F32, {1, 3, 64});
  qg.add_weights(g);
  replace_weight(g, "w.scales", DType::F16, {4, 3});
  g.node("embedding", {"ids", "w", "w.scales"}, {"e"}, qg.attrs()).out("e", "e", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (embedding): input 2 'w.scales' (float16 [4, 3]) must be the float16 "
                                       "scales of 'w': float16 [4, 2]"));
}

}  // namespace
}  // namespace hfstatic
