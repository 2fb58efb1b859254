// Method graph validation and execution errors, on hand-built programs written with
// ProgramWriter, plus arena planning checked against values computed independently here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "executor/method.h"
#include "format/program.h"
#include "kernels/thread_pool.h"
#include "test_support.h"
#include "util/error.h"

namespace hfstatic {
namespace {

using nlohmann::json;
using testing::AllOf;
using testing::HasSubstr;
using testing::Not;

using test::error_of;

// A one-method program ("m") under construction: values, nodes, outputs and its weights.
struct Graph {
  struct Weight {
    std::string name;
    DType dtype;
    Shape shape;
    std::vector<uint8_t> bytes;
  };
  MethodSpec m;
  std::vector<Weight> weights;

  Graph() { m.name.assign(1, 'm'); }
  Graph& in(const std::string& n, DType t, Shape s) {
    m.inputs.push_back({n, t, std::move(s)});
    return *this;
  }
  Graph& val(const std::string& n, DType t, Shape s) {
    m.values.push_back({n, t, std::move(s)});
    return *this;
  }
  Graph& node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs, json attrs = json::object()) {
    m.nodes.push_back({op, std::move(ins), std::move(outs), std::move(attrs)});
    return *this;
  }
  Graph& out(const std::string& n, const std::string& value, OutputMemory memory) {
    m.outputs.push_back({n, value, memory});
    return *this;
  }
  Graph& weight(const std::string& n, Shape s, std::vector<float> v = {}) {
    if (v.empty()) v.assign(size_t(*shape_numel(s)), 0.5f);
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    weights.push_back({n, DType::F32, std::move(s), std::move(b)});
    return *this;
  }
  Graph& weight_i64(const std::string& n, Shape s) {
    weights.push_back({n, DType::I64, s, std::vector<uint8_t>(size_t(*shape_numel(s)) * 8)});
    return *this;
  }
};

class ExecutorErrors : public testing::Test {
 protected:
  test::TempDir dir{"executor"};
  int count_ = 0;

  std::shared_ptr<const Program> write(const Graph& g) {
    ProgramSpec spec;
    spec.metadata = {{"purpose", "executor test"}};
    spec.methods.push_back(g.m);
    ProgramWriter w(spec);
    for (const auto& wt : g.weights) w.add_weight_bytes(wt.name, wt.dtype, wt.shape, wt.bytes);
    std::string path = dir.file(cat("g", count_++, ".hfs"));
    w.write(path);
    return Program::load(path);
  }
  std::string load_error(const Graph& g) {
    auto p = write(g);
    return error_of([&] { Method::load(p, "m"); });
  }
  std::shared_ptr<const Method> load(const Graph& g, const RuntimeOptions& options = {}) {
    return Method::load(write(g), "m", options);
  }
};

const Shape X = {1, 2, 4};  // the activation shape of most graphs below

// ---- graph validation ----------------------------------------------------------------------

TEST_F(ExecutorErrors, UnknownMethod) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).node("copy", {"x"}, {"y"}).out("y", "y", OutputMemory::Planned);
  auto p = write(g);
  EXPECT_THAT(error_of([&] { Method::load(p, "prefill"); }), HasSubstr("program has no method 'prefill'"));
}

TEST_F(ExecutorErrors, UnknownOp) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).node("gelu", {"x"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("method 'm' node 0 (gelu): unknown op 'gelu'"));
}

TEST_F(ExecutorErrors, OperandUsedBeforeItIsProduced) {
  Graph g;
  g.in("x", DType::F32, X).val("a", DType::F32, X).val("b", DType::F32, X);
  g.node("add", {"x", "b"}, {"a"}).node("copy", {"x"}, {"b"}).out("a", "a", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("method 'm' node 0 (add): operand 'b' is used before any node produces it"));
}

TEST_F(ExecutorErrors, OperandNeitherInputWeightNorValue) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).node("add", {"x", "ghost"}, {"y"}).out("y", "y", OutputMemory::Planned);
  g.weight("w", {3, 4});
  EXPECT_THAT(load_error(g), HasSubstr("method 'm' node 0 (add): operand 'ghost' is not an input, a weight or a declared value"));
}

TEST_F(ExecutorErrors, ValueProducedTwice) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X);
  g.node("copy", {"x"}, {"y"}).node("add", {"x", "x"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("method 'm' node 1 (add): value 'y' is produced twice"));
}

TEST_F(ExecutorErrors, ValueDefinedTwice) {
  Graph g;
  g.in("x", DType::F32, X).val("x", DType::F32, X).node("copy", {"x"}, {"x"}).out("x", "x", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("method 'm': value 'x' is defined twice"));
}

TEST_F(ExecutorErrors, DeclaredValueNeverProduced) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).val("z", DType::F32, {1, 2, 8});
  g.node("copy", {"x"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("method 'm': value 'z' is declared but no node produces it"));
}

TEST_F(ExecutorErrors, DeclaredShapeDiffersFromOp) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).weight("w", {3, 4});
  g.node("linear", {"x", "w"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("method 'm' node 0 (linear): output 'y' is declared float32 [1, 2, 4] but the op "
                                       "produces float32 [1, 2, 3]"));
}

TEST_F(ExecutorErrors, DeclaredDtypeDiffersFromOp) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F16, X).node("copy", {"x"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (copy): output 'y' is declared float16 [1, 2, 4] but the op produces float32 [1, 2, 4]"));
}

TEST_F(ExecutorErrors, NodeOutputsMismatch) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).val("z", DType::F32, X);
  g.node("copy", {"x"}, {"y", "z"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (copy): produces 1 outputs, the node lists 2"));

  Graph h;
  h.in("x", DType::F32, X).val("y", DType::F32, X).node("copy", {"x"}, {"q"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(h), HasSubstr("node 0 (copy): output 'q' is not a declared value"));

  Graph i;
  i.in("x", DType::F32, X).in("x2", DType::F32, X).node("copy", {"x"}, {"x2"}).out("o", "x2", OutputMemory::Planned);
  EXPECT_THAT(load_error(i), HasSubstr("node 0 (copy): output 'x2' names an input or a weight"));
}

TEST_F(ExecutorErrors, OpInputCount) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).node("add", {"x"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (add): takes 2 inputs, got 1"));
}

TEST_F(ExecutorErrors, OpInputDtype) {
  Graph g;
  g.in("tokens", DType::F32, {1, 2}).val("e", DType::F32, X).weight("emb", {5, 4});
  g.node("embedding", {"tokens", "emb"}, {"e"}).out("e", "e", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (embedding): input 0 'tokens' (float32 [1, 2]) must be int64"));

  Graph h;
  h.in("x", DType::F32, X).val("y", DType::F32, {1, 2, 3}).weight_i64("w", {3, 4});
  h.node("linear", {"x", "w"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(h), HasSubstr("node 0 (linear): input 1 'w' (int64 [3, 4]) must be float32, float16 or bfloat16"));
}

TEST_F(ExecutorErrors, OpInputRank) {
  Graph g;
  g.in("x", DType::F32, X).in("r", DType::F32, {2, 4}).val("y", DType::F32, X);
  g.node("add", {"x", "r"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (add): input 1 'r' (float32 [2, 4]) must have rank 3"));
  Graph h;
  h.in("x", DType::F32, {2, 2, 4}).in("r", DType::F32, {2, 2, 4}).val("y", DType::F32, {2, 2, 4});
  h.node("add", {"x", "r"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(h), HasSubstr("node 0 (add): input 0 'x' (float32 [2, 2, 4]) must have batch 1"));
}

TEST_F(ExecutorErrors, AddShapesDiffer) {
  Graph g;
  g.in("x", DType::F32, X).in("r", DType::F32, {1, 2, 5}).val("y", DType::F32, X);
  g.node("silu_mul", {"x", "r"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (silu_mul): input 1 'r' (float32 [1, 2, 5]) must have the shape of input 0 'x' "
                                       "(float32 [1, 2, 4])"));
}

TEST_F(ExecutorErrors, LinearMismatchedColumns) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, {1, 2, 3}).weight("w", {3, 5});
  g.node("linear", {"x", "w"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (linear): input 1 'w' (float32 [3, 5]) must have 4 columns to match input 0 'x' "
                                       "(float32 [1, 2, 4])"));
}

TEST_F(ExecutorErrors, LinearBiasLength) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, {1, 2, 3}).weight("w", {3, 4}).weight("b", {2});
  g.node("linear", {"x", "w", "b"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (linear): input 2 'b' (float32 [2]) must have length 3"));
}

TEST_F(ExecutorErrors, RmsNormWeightLengthAndAttributes) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).weight("nw", {5});
  g.node("rms_norm", {"x", "nw"}, {"y"}, {{"eps", 1e-5}}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (rms_norm): input 1 'nw' (float32 [5]) must have length 4 to match input 0 'x'"));

  Graph h;
  h.in("x", DType::F32, X).val("y", DType::F32, X).weight("nw", {4});
  h.node("rms_norm", {"x", "nw"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(h), HasSubstr("node 0 (rms_norm): attribute 'eps' is missing"));
  h.m.nodes[0].attrs = {{"eps", 2}};
  EXPECT_THAT(load_error(h), HasSubstr("node 0 (rms_norm): attribute 'eps' = 2 is outside [0, 1]"));
  h.m.nodes[0].attrs = {{"eps", "small"}};
  EXPECT_THAT(load_error(h), HasSubstr("attribute 'eps' must be a number"));
}

TEST_F(ExecutorErrors, RopeAttributes) {
  Graph g;
  g.in("x", DType::F32, X).in("pos", DType::I64, {1, 2}).val("y", DType::F32, X);
  g.node("rope", {"x", "pos"}, {"y"}, {{"head_dim", 3}, {"theta", 10000.0}}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (rope): attribute 'head_dim' must be even"));
  g.m.nodes[0].attrs = {{"head_dim", 4}, {"theta", 10000.0}, {"scaling", {{"type", "yarn"}}}};
  EXPECT_THAT(load_error(g), HasSubstr("attribute 'scaling' has unsupported type 'yarn'"));
  g.m.nodes[0].attrs = {{"head_dim", 2}};
  EXPECT_THAT(load_error(g), HasSubstr("attribute 'theta' is missing"));
}

// Attention / cache_write operands: q [1,T,NH*D], caches [1,H,C,D], mask [1,1,T,C].
Graph attention_graph(int64_t n_heads, int64_t kv_heads, int64_t head_dim, int64_t context, int64_t rows = 2) {
  Graph g;
  g.in("q", DType::F32, {1, rows, n_heads * head_dim});
  g.in("kc", DType::F32, {1, kv_heads, context, head_dim}).in("vc", DType::F32, {1, kv_heads, context, head_dim});
  g.in("mask", DType::F32, {1, 1, rows, context});
  g.val("a", DType::F32, {1, rows, n_heads * head_dim});
  g.node("attention", {"q", "kc", "vc", "mask"}, {"a"}, {{"n_heads", n_heads}}).out("a", "a", OutputMemory::Planned);
  return g;
}

TEST_F(ExecutorErrors, AttentionHeadsNotMultipleOfKvHeads) {
  EXPECT_THAT(load_error(attention_graph(3, 2, 4, 8)), HasSubstr("node 0 (attention): n_heads 3 is not a multiple of the cache's 2 kv heads"));
  EXPECT_NO_THROW(load(attention_graph(4, 2, 4, 8)));
  Graph g = attention_graph(4, 2, 4, 8);
  g.m.nodes[0].attrs = {{"n_heads", 2}};
  EXPECT_THAT(load_error(g), HasSubstr("input 0 'q' (float32 [1, 2, 16]) width must be n_heads * head_dim = 8"));
}

// cache_write operands for H kv heads of D, context C: k, v [1,T,H*D], caches, counter, mask.
Graph cache_write_graph(int64_t heads, int64_t head_dim, int64_t context, int64_t rows, Shape mask) {
  Graph g;
  g.in("k", DType::F32, {1, rows, heads * head_dim}).in("v", DType::F32, {1, rows, heads * head_dim});
  g.in("kc", DType::F32, {1, heads, context, head_dim}).in("vc", DType::F32, {1, heads, context, head_dim});
  g.in("counter", DType::I64, {1}).in("mask", DType::F32, std::move(mask));
  g.node("cache_write", {"k", "v", "kc", "vc", "counter", "mask"}, {});
  g.out("kc_updated", "kc", OutputMemory::Alias).out("vc_updated", "vc", OutputMemory::Alias);
  g.out("counter_updated", "counter", OutputMemory::Alias);
  return g;
}

TEST_F(ExecutorErrors, CacheWriteMaskShape) {
  EXPECT_THAT(load_error(cache_write_graph(2, 4, 8, 2, {1, 1, 2, 7})),
              HasSubstr("node 0 (cache_write): input 5 'mask' (float32 [1, 1, 2, 7]) must be [1, 1, 2, 8]"));
  EXPECT_THAT(load_error(cache_write_graph(2, 4, 8, 2, {1, 1, 3, 8})), HasSubstr("input 5 'mask' (float32 [1, 1, 3, 8]) must be [1, 1, 2, 8]"));
  EXPECT_NO_THROW(load(cache_write_graph(2, 4, 8, 2, {1, 1, 2, 8})));
}

TEST_F(ExecutorErrors, CacheWriteOperandShapes) {
  Graph g = cache_write_graph(2, 4, 8, 2, {1, 1, 2, 8});
  g.m.inputs[4].shape = {2};
  EXPECT_THAT(load_error(g), HasSubstr("input 4 'counter' (int64 [2]) must have shape [1]"));
  g = cache_write_graph(2, 4, 8, 2, {1, 1, 2, 8});
  g.m.inputs[0].shape = {1, 2, 6};
  EXPECT_THAT(load_error(g), HasSubstr("input 0 'k' (float32 [1, 2, 6]) must be [1, 2, 8] to fit the cache"));
  g = cache_write_graph(2, 4, 8, 2, {1, 1, 2, 8});
  g.m.inputs[3].dtype = DType::F16;
  EXPECT_THAT(load_error(g), HasSubstr("input 3 'vc' (float16 [1, 2, 8, 4]) must match input 2 'kc' (float32 [1, 2, 8, 4])"));
}

TEST_F(ExecutorErrors, WeightUpdatedInPlaceIsRejected) {
  Graph g;
  g.in("k", DType::F32, {1, 2, 8}).in("v", DType::F32, {1, 2, 8});
  g.weight("kc", {1, 2, 8, 4}).in("vc", DType::F32, {1, 2, 8, 4});
  g.in("counter", DType::I64, {1}).in("mask", DType::F32, {1, 1, 2, 8});
  g.node("cache_write", {"k", "v", "kc", "vc", "counter", "mask"}, {});
  g.out("counter_updated", "counter", OutputMemory::Alias);
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (cache_write): updates operand 'kc' in place, but only method inputs may be updated"));
}

TEST_F(ExecutorErrors, InputWithTheNameOfAWeight) {
  Graph g;
  g.in("w", DType::F32, X).val("y", DType::F32, X).node("copy", {"w"}, {"y"}).out("y", "y", OutputMemory::Planned);
  g.weight("w", {4});
  EXPECT_THAT(load_error(g), HasSubstr("method 'm': input 'w' has the name of a weight"));
}

TEST_F(ExecutorErrors, AliasOutputNamingANonInput) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).node("copy", {"x"}, {"y"}).out("y_alias", "y", OutputMemory::Alias);
  EXPECT_THAT(load_error(g), HasSubstr("method 'm' output 0 'y_alias': an alias output must name a method input, 'y' is not one"));
}

TEST_F(ExecutorErrors, AliasOutputOfAnInputNoNodeUpdates) {
  Graph g = cache_write_graph(1, 2, 4, 2, {1, 1, 2, 4});
  g.out("k_alias", "k", OutputMemory::Alias);
  EXPECT_THAT(load_error(g), HasSubstr("method 'm' output 3 'k_alias': aliases input 'k', which no node updates"));
}

TEST_F(ExecutorErrors, PlannedOutputNamingAnInput) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).node("copy", {"x"}, {"y"});
  g.out("y", "y", OutputMemory::Planned).out("x_out", "x", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("method 'm' output 1 'x_out': a planned output must name a value a node produces"));
}

TEST_F(ExecutorErrors, OutputProblems) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).node("copy", {"x"}, {"y"});
  g.out("y", "y", OutputMemory::Planned).out("z", "nope", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), HasSubstr("method 'm' output 1 'z': value 'nope' does not exist"));
  g.m.outputs[1] = {"y", "y", OutputMemory::Planned};
  EXPECT_THAT(load_error(g), HasSubstr("method 'm' output 1 'y': output name is used twice"));
  g.m.outputs[1] = {"y2", "y", OutputMemory::Unplanned};
  EXPECT_THAT(load_error(g), HasSubstr("method 'm' output 0 'y': a planned output must name a value a node produces"));
}

// ---- execution -----------------------------------------------------------------------------

std::vector<float> iota(size_t n, float start, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * float(i);
  return v;
}

TEST_F(ExecutorErrors, UnboundUnplannedOutputIsAnErrorNotACrash) {
  Graph g;
  g.in("x", DType::F32, X).val("s", DType::F32, X).val("c", DType::F32, X);
  g.node("add", {"x", "x"}, {"s"}).node("copy", {"s"}, {"c"});
  g.out("sum", "s", OutputMemory::Planned).out("copied", "c", OutputMemory::Unplanned);
  auto method = load(g);
  EXPECT_EQ(method->output_memory(1), OutputMemory::Unplanned);
  Execution ex(method);
  std::vector<float> x = iota(8, 1, 1), out(8, -1);
  ex.bind_input(0, x.data());
  Status s = ex.run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("method 'm': output 1 'copied' is unplanned and has no bound buffer"));
  // Bound, it runs and both outputs hold 2x.
  ex.bind_output(1, out.data());
  ASSERT_TRUE(ex.run().ok());
  EXPECT_EQ(ex.output_data(1), out.data());
  const float* sum = static_cast<const float*>(ex.output_data(0));
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(out[i], 2 * x[i]);
    EXPECT_EQ(sum[i], 2 * x[i]);
  }
}

TEST_F(ExecutorErrors, UnboundInputIsAnError) {
  Graph g;
  g.in("x", DType::F32, X).in("x2", DType::F32, X).val("s", DType::F32, X);
  g.node("add", {"x", "x2"}, {"s"}).out("sum", "s", OutputMemory::Planned);
  Execution ex(load(g));
  std::vector<float> x(8, 1);
  ex.bind_input(0, x.data());
  Status s = ex.run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("method 'm': input 1 'x2' is not bound"));
  Execution ex2(load(g));
  EXPECT_THAT(ex2.run().message(), HasSubstr("input 0 'x' is not bound"));
}

TEST_F(ExecutorErrors, BindOutputOnlyForUnplannedOutputs) {
  Graph g = cache_write_graph(1, 2, 4, 2, {1, 1, 2, 4});
  g.val("kk", DType::F32, {1, 2, 2}).node("add", {"k", "k"}, {"kk"}).out("double_k", "kk", OutputMemory::Planned);
  Execution ex(load(g));
  float buf[16];
  EXPECT_THAT(error_of([&] { ex.bind_output(3, buf); }),
              HasSubstr("method 'm': output 3 'double_k' is planned, only unplanned outputs take a buffer"));
  EXPECT_THAT(error_of([&] { ex.bind_output(0, buf); }),
              HasSubstr("method 'm': output 0 'kc_updated' is alias, only unplanned outputs take a buffer"));
  EXPECT_THAT(error_of([&] { ex.bind_output(4, buf); }), HasSubstr("output index 4 out of range (4 outputs)"));
  EXPECT_THAT(error_of([&] { ex.bind_input(6, buf); }), HasSubstr("input index 6 out of range (6 inputs)"));
}

TEST_F(ExecutorErrors, EmbeddingTokenOutOfRange) {
  Graph g;
  g.in("tokens", DType::I64, {1, 3}).val("e", DType::F32, {1, 3, 4}).weight("emb", {5, 4}, iota(20, 0, 1));
  g.node("embedding", {"tokens", "emb"}, {"e"}).out("e", "e", OutputMemory::Planned);
  auto method = load(g);
  Execution ex(method);
  std::vector<int64_t> tokens = {1, 7, 2};
  ex.bind_input(0, tokens.data());
  Status s = ex.run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("method 'm' node 0 (embedding): token id 7 at row 1 is outside the vocabulary [0, 5)"));
  tokens = {-1, 0, 0};
  EXPECT_THAT(ex.run().message(), HasSubstr("token id -1 at row 0 is outside the vocabulary [0, 5)"));
  tokens = {4, 0, 2};
  ASSERT_TRUE(ex.run().ok());
  const float* e = static_cast<const float*>(ex.output_data(0));
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(e[r * 4 + c], float(tokens[size_t(r)] * 4 + c));
}

TEST_F(ExecutorErrors, CacheWriteCounterOverflowIsAnError) {
  // One kv head of 2, a cache of 4 slots, 2 rows per call.
  auto method = load(cache_write_graph(1, 2, 4, 2, {1, 1, 2, 4}));
  Execution ex(method);
  std::vector<float> k = {1, 2, 3, 4}, v = {5, 6, 7, 8}, kc(8, 0), vc(8, 0), mask(8, 0);
  int64_t counter = 3;
  void* bufs[] = {k.data(), v.data(), kc.data(), vc.data(), &counter, mask.data()};
  for (size_t i = 0; i < 6; ++i) ex.bind_input(i, bufs[i]);
  Status s = ex.run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("method 'm' node 0 (cache_write): counter 3 with 2 real rows does not fit the cache of 4 slots"));
  EXPECT_EQ(counter, 3) << "a failed write must not advance the counter";
  EXPECT_EQ(kc, std::vector<float>(8, 0)) << "a failed write must not touch the cache";

  counter = 2;
  ASSERT_TRUE(ex.run().ok());
  EXPECT_EQ(counter, 4);
  EXPECT_EQ(kc, (std::vector<float>{0, 0, 0, 0, 1, 2, 3, 4}));
  EXPECT_EQ(vc, (std::vector<float>{0, 0, 0, 0, 5, 6, 7, 8}));
  EXPECT_EQ(ex.output_data(2), &counter);
  // Full now: another write overflows.
  EXPECT_THAT(ex.run().message(), HasSubstr("counter 4 with 2 real rows does not fit the cache of 4 slots"));
  counter = -1;
  EXPECT_THAT(ex.run().message(), HasSubstr("counter -1 with 2 real rows does not fit"));
  counter = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(ex.run().ok());
  // A padding row (all -inf) may only follow the real rows.
  counter = 0;
  const float ninf = -std::numeric_limits<float>::infinity();
  mask = {ninf, ninf, ninf, ninf, 0, 0, 0, 0};
  EXPECT_THAT(ex.run().message(), HasSubstr("mask has a real row after a padding row"));
  mask = {0, 0, 0, 0, ninf, ninf, ninf, ninf};
  counter = 3;
  ASSERT_TRUE(ex.run().ok()) << "one real row fits the last slot";
  EXPECT_EQ(counter, 4);
}

// ---- arena planning ------------------------------------------------------------------------

TEST_F(ExecutorErrors, TinyPresetArenaReusesMemory) {
  GraphOptions o;
  o.prefill_len = 8;
  o.max_context = 32;
  auto program = Program::load(test::export_to(test::cached_checkpoint("tiny", 2), dir.file("tiny.hfs"), o));
  for (const char* name : {"prefill", "decode"}) {
    SCOPED_TRACE(name);
    auto method = Method::load(program, name);
    uint64_t sum = 0, largest = 0;
    for (const auto& v : method->spec().values) {
      uint64_t b = uint64_t(*shape_numel(v.shape)) * dtype_size(v.dtype);
      sum += b;
      largest = std::max(largest, b);
    }
    EXPECT_GT(method->spec().values.size(), 10u);
    EXPECT_LT(method->arena_bytes(), sum);
    EXPECT_GE(method->arena_bytes(), largest);
    EXPECT_EQ(method->arena_bytes() % 64, 0u);
  }
}

// y = x W^T + b, row-major, in double.
std::vector<double> ref_linear(const std::vector<double>& x, int64_t rows, int64_t in, const std::vector<float>& w, int64_t out,
                               const std::vector<float>* b = nullptr) {
  std::vector<double> y(size_t(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b ? double((*b)[size_t(o)]) : 0.0;
      for (int64_t i = 0; i < in; ++i) s += x[size_t(r * in + i)] * double(w[size_t(o * in + i)]);
      y[size_t(r * out + o)] = s;
    }
  return y;
}
std::vector<double> ref_silu_mul(const std::vector<double>& g, const std::vector<double>& u) {
  std::vector<double> y(g.size());
  for (size_t i = 0; i < g.size(); ++i) y[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return y;
}
std::vector<double> ref_add(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> y(a.size());
  for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[i];
  return y;
}

TEST_F(ExecutorErrors, ArenaPlanKeepsLiveValuesApart) {
  // A chain where some values die early (their memory can be reused) and others live long.
  const int64_t T = 4, N = 16;
  const Shape A = {1, T, N};
  std::vector<float> w1(N * N), w2(N * N), b1(N);
  for (int64_t i = 0; i < N * N; ++i) {
    w1[size_t(i)] = float(std::sin(0.37 * double(i))) * 0.3f;
    w2[size_t(i)] = float(std::cos(0.11 * double(i))) * 0.25f;
  }
  for (int64_t i = 0; i < N; ++i) b1[size_t(i)] = 0.05f * float(i) - 0.4f;
  Graph g;
  g.in("x", DType::F32, A).weight("w1", {N, N}, w1).weight("w2", {N, N}, w2).weight("b1", {N}, b1);
  for (const char* v : {"a", "b", "c", "d", "e", "f", "h", "i"}) g.val(v, DType::F32, A);
  g.node("linear", {"x", "w1", "b1"}, {"a"});  // a dies at c
  g.node("silu_mul", {"a", "x"}, {"b"});       // b lives until h
  g.node("add", {"a", "b"}, {"c"});            // c dies at e
  g.node("linear", {"c", "w2"}, {"d"});        // d is an output: lives to the end
  g.node("silu_mul", {"d", "c"}, {"e"});
  g.node("add", {"e", "x"}, {"f"});
  g.node("add", {"f", "b"}, {"h"});
  g.node("add", {"h", "h"}, {"i"});
  g.out("d", "d", OutputMemory::Planned).out("i", "i", OutputMemory::Planned).out("b", "b", OutputMemory::Planned);
  auto method = load(g);
  const uint64_t value_bytes = uint64_t(T * N) * 4;
  EXPECT_LT(method->arena_bytes(), 8 * value_bytes) << "intermediates that are dead must share memory";

  Execution ex(method);
  for (int trial = 0; trial < 3; ++trial) {
    SCOPED_TRACE(trial);
    std::vector<float> x(size_t(T * N));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(double(i) * 0.7 + trial)) * (1.0f + float(trial));
    ex.bind_input(0, x.data());
    ASSERT_TRUE(ex.run().ok());

    std::vector<double> xd(x.begin(), x.end());
    auto a = ref_linear(xd, T, N, w1, N, &b1);
    auto b = ref_silu_mul(a, xd);
    auto c = ref_add(a, b);
    auto d = ref_linear(c, T, N, w2, N);
    auto e = ref_silu_mul(d, c);
    auto f = ref_add(e, xd);
    auto h = ref_add(f, b);
    auto i = ref_add(h, h);
    auto compare = [&](size_t out, const std::vector<double>& want, const char* what) {
      const float* got = static_cast<const float*>(ex.output_data(out));
      double worst = 0;
      for (size_t k = 0; k < want.size(); ++k) worst = std::max(worst, std::fabs(double(got[k]) - want[k]) / (1.0 + std::fabs(want[k])));
      EXPECT_LT(worst, 1e-5) << what;
    };
    compare(0, d, "d");
    compare(1, i, "i");
    compare(2, b, "b");
  }
  // Planned outputs, all alive at the end, occupy disjoint memory.
  for (size_t p = 0; p < 3; ++p)
    for (size_t q = p + 1; q < 3; ++q) {
      auto lo = static_cast<const uint8_t*>(ex.output_data(p)), hi = static_cast<const uint8_t*>(ex.output_data(q));
      if (lo > hi) std::swap(lo, hi);
      EXPECT_GE(uint64_t(hi - lo), value_bytes) << "outputs " << p << " and " << q << " overlap";
    }
}

TEST_F(ExecutorErrors, LinearNodesSharingAnInputRunAsOneStep) {
  // Three products of s run as one step and two of a as another. Each output must equal its
  // product computed alone, for decode-like (3) and prefill-like (20) row counts, with and
  // without a thread pool sharing out the group's output features.
  const int64_t N = 16;
  const int64_t outs[] = {130, 8, 70};
  auto weights = [](int64_t rows, int64_t cols, double phase) {
    std::vector<float> v(size_t(rows * cols));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(std::sin(0.3 * double(i) + phase)) * 0.25f;
    return v;
  };
  const std::vector<float> w0 = weights(outs[0], N, 0), w1 = weights(outs[1], N, 1), w2 = weights(outs[2], N, 2);
  const std::vector<float> wa = weights(N, outs[0], 3), wb = weights(5, outs[0], 4), bias = weights(1, outs[1], 5);
  for (int64_t T : {3, 20}) {
    SCOPED_TRACE(T);
    Graph g;
    g.in("x", DType::F32, {1, T, N}).weight("w0", {outs[0], N}, w0).weight("w1", {outs[1], N}, w1);
    g.weight("w2", {outs[2], N}, w2).weight("b1", {outs[1]}, bias).weight("wa", {N, outs[0]}, wa).weight("wb", {5, outs[0]}, wb);
    g.val("s", DType::F32, {1, T, N}).val("a", DType::F32, {1, T, outs[0]}).val("b", DType::F32, {1, T, outs[1]});
    g.val("c", DType::F32, {1, T, outs[2]}).val("d", DType::F32, {1, T, N}).val("e", DType::F32, {1, T, 5});
    g.node("add", {"x", "x"}, {"s"});
    g.node("linear", {"s", "w0"}, {"a"});
    g.node("linear", {"s", "w1", "b1"}, {"b"});
    g.node("linear", {"s", "w2"}, {"c"});
    g.node("linear", {"a", "wa"}, {"d"});
    g.node("linear", {"a", "wb"}, {"e"});
    for (const char* v : {"a", "b", "c", "d", "e"}) g.out(v, v, OutputMemory::Planned);
    auto method = load(g);
    EXPECT_EQ(method->num_nodes(), 6u);
    EXPECT_EQ(method->num_steps(), 3u);

    std::vector<float> x(size_t(T * N));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::cos(0.9 * double(i)));
    std::vector<double> sd(x.size());
    for (size_t i = 0; i < x.size(); ++i) sd[i] = 2.0 * double(x[i]);
    const auto a = ref_linear(sd, T, N, w0, outs[0]);
    const std::vector<std::vector<double>> want = {a, ref_linear(sd, T, N, w1, outs[1], &bias), ref_linear(sd, T, N, w2, outs[2]),
                                                   ref_linear(a, T, outs[0], wa, N), ref_linear(a, T, outs[0], wb, 5)};
    // With two threads, the threads waiting at the end of each step prefetch the next group's
    // weights, or not: the results are the same.
    RuntimeOptions no_idle_prefetch;
    no_idle_prefetch.idle_prefetch = false;
    const auto without = load(g, no_idle_prefetch);
    for (auto [threads, idle_prefetch] : {std::pair{1, true}, std::pair{2, true}, std::pair{2, false}}) {
      SCOPED_TRACE(cat(threads, " threads, idle prefetch ", idle_prefetch));
      ThreadPool pool(threads);
      Execution ex(idle_prefetch ? method : without);
      ex.bind_input(0, x.data());
      const bool ran = ex.run(&pool).ok() && ex.run(&pool).ok();
      ASSERT_TRUE(ran);
      for (size_t o = 0; o < want.size(); ++o) {
        const float* got = static_cast<const float*>(ex.output_data(o));
        for (size_t k = 0; k < want[o].size(); ++k)
          ASSERT_NEAR(got[k], want[o][k], 1e-5 * (1.0 + std::fabs(want[o][k]))) << "output " << o << " at " << k;
      }
    }
  }
}

TEST_F(ExecutorErrors, OnlyTheWantedRowsOfAnOutputAreComputed) {
  // y = linear(rms_norm(x)): with rows [2, 4) of y wanted, the linear runs on those rows alone
  // and the other rows keep what the caller left there.
  const int64_t T = 6, N = 8, O = 5;
  std::vector<float> w(size_t(O * N)), norm(size_t(N), 1.0f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(std::sin(0.5 * double(i))) * 0.3f;
  Graph g;
  g.in("x", DType::F32, {1, T, N}).weight("w", {O, N}, w).weight("g", {N}, norm);
  g.val("h", DType::F32, {1, T, N}).val("y", DType::F32, {1, T, O});
  g.node("rms_norm", {"x", "g"}, {"h"}, {{"eps", 1e-6}});
  g.node("linear", {"h", "w"}, {"y"});
  g.out("y", "y", OutputMemory::Planned);
  auto method = load(g);
  EXPECT_EQ(method->num_folded_steps(), 1u);  // the norm is computed as the linear reads its rows
  Execution ex(method);
  std::vector<float> x(size_t(T * N));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::cos(0.37 * double(i))) + 0.1f;
  ex.bind_input(0, x.data());
  std::vector<double> h(x.size());
  for (int64_t r = 0; r < T; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < N; ++i) ss += double(x[size_t(r * N + i)]) * x[size_t(r * N + i)];
    for (int64_t i = 0; i < N; ++i) h[size_t(r * N + i)] = x[size_t(r * N + i)] / std::sqrt(ss / N + 1e-6);
  }
  const std::vector<double> want = ref_linear(h, T, N, w, O);
  float* y = static_cast<float*>(ex.output_data(0));
  const float sentinel = 12345.0f;

  ex.set_output_rows(0, 2, 4);
  std::fill_n(y, T * O, sentinel);
  ASSERT_TRUE(ex.run().ok());
  for (int64_t r = 0; r < T; ++r)
    for (int64_t o = 0; o < O; ++o) {
      const float got = y[r * O + o];
      if (r >= 2 && r < 4) EXPECT_NEAR(got, want[size_t(r * O + o)], 1e-5) << "row " << r;
      else EXPECT_EQ(got, sentinel) << "row " << r << " was computed";
    }

  ex.set_output_rows(0, 0, T);  // all rows again
  std::fill_n(y, T * O, sentinel);
  ASSERT_TRUE(ex.run().ok());
  for (int64_t k = 0; k < T * O; ++k) EXPECT_NEAR(y[k], want[size_t(k)], 1e-5) << "element " << k;

  EXPECT_THAT(error_of([&] { ex.set_output_rows(0, 3, 3); }), HasSubstr("output 0 'y': rows [3, 3)"));
  EXPECT_THAT(error_of([&] { ex.set_output_rows(0, 0, T + 1); }), HasSubstr("within its 6 rows"));
  EXPECT_THAT(error_of([&] { ex.set_output_rows(1, 0, 1); }), HasSubstr("output index 1 out of range"));
}

TEST_F(ExecutorErrors, NormAndSiluMulFoldIntoTheLinearsOnlyWhenNothingElseReadsThem) {
  // h = rms_norm(x); a, b = linear(h); s = silu_mul(a, b); y = linear(s). Both ops fold into
  // the linears after them, unless h or s is also a method output or read by another node; the
  // results are the same every way, for matrix-vector (3) and matrix-multiply (40) row counts.
  const int64_t N = 70, F = 29, O = 13;
  auto weights = [](int64_t n, double phase) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(std::sin(0.7 * double(i) + phase)) * 0.2f;
    return v;
  };
  const std::vector<float> norm = weights(N, 1), w1 = weights(F * N, 2), w2 = weights(F * N, 3), w3 = weights(O * F, 4);
  for (int64_t T : {3, 40})
    for (int variant = 0; variant < 4; ++variant) {  // plain, h an output, s an output, s read by an add
      SCOPED_TRACE(cat("T = ", T, ", variant ", variant));
      Graph g;
      g.in("x", DType::F32, {1, T, N}).weight("g", {N}, norm).weight("w1", {F, N}, w1).weight("w2", {F, N}, w2);
      g.weight("w3", {O, F}, w3);
      g.val("h", DType::F32, {1, T, N}).val("a", DType::F32, {1, T, F}).val("b", DType::F32, {1, T, F});
      g.val("s", DType::F32, {1, T, F}).val("y", DType::F32, {1, T, O});
      g.node("rms_norm", {"x", "g"}, {"h"}, {{"eps", 1e-5}});
      g.node("linear", {"h", "w1"}, {"a"}).node("linear", {"h", "w2"}, {"b"});
      g.node("silu_mul", {"a", "b"}, {"s"}).node("linear", {"s", "w3"}, {"y"});
      g.out("y", "y", OutputMemory::Planned);
      if (variant == 1) g.out("h", "h", OutputMemory::Planned);
      if (variant == 2) g.out("s", "s", OutputMemory::Planned);
      if (variant == 3) g.val("z", DType::F32, {1, T, F}).node("add", {"s", "s"}, {"z"}).out("z", "z", OutputMemory::Planned);
      auto method = load(g);
      EXPECT_EQ(method->num_folded_steps(), variant == 0 ? 2u : 1u);

      std::vector<float> x(size_t(T * N));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::cos(0.37 * double(i))) * 2.0f;
      std::vector<double> h(x.size());
      for (int64_t r = 0; r < T; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < N; ++i) ss += double(x[size_t(r * N + i)]) * x[size_t(r * N + i)];
        for (int64_t i = 0; i < N; ++i) h[size_t(r * N + i)] = x[size_t(r * N + i)] / std::sqrt(ss / N + 1e-5) * norm[size_t(i)];
      }
      const std::vector<double> s_want = ref_silu_mul(ref_linear(h, T, N, w1, F), ref_linear(h, T, N, w2, F));
      const std::vector<double> y_want = ref_linear(s_want, T, F, w3, O);
      Execution ex(method);
      ex.bind_input(0, x.data());
      ThreadPool pool(2);
      ASSERT_TRUE(ex.run(&pool).ok());
      auto expect_values = [&](size_t output, const std::vector<double>& want) {
        const float* got = static_cast<const float*>(ex.output_data(output));
        for (size_t k = 0; k < want.size(); ++k)
          ASSERT_NEAR(got[k], want[k], 1e-5 * (1.0 + std::fabs(want[k]))) << "output " << output << " at " << k;
      };
      expect_values(0, y_want);
      if (variant == 1) expect_values(1, h);
      if (variant == 2) expect_values(1, s_want);
    }
}

// A folded value is computed inside the step that reads it and never stored: it takes no
// arena space (here the arena holds y alone), where unfolded it is live with y.
TEST_F(ExecutorErrors, AFoldedValueTakesNoArenaSpace) {
  const int64_t T = 8, N = 512, O = 16;
  Graph g;
  g.in("x", DType::F32, {1, T, N}).weight("g", {N}, std::vector<float>(size_t(N), 1.0f));
  g.weight("w", {O, N}, std::vector<float>(size_t(O * N), 0.5f));
  g.val("h", DType::F32, {1, T, N}).val("y", DType::F32, {1, T, O});
  g.node("rms_norm", {"x", "g"}, {"h"}, {{"eps", 1e-5}}).node("linear", {"h", "w"}, {"y"});
  g.out("y", "y", OutputMemory::Planned);
  const uint64_t h_bytes = uint64_t(T * N) * sizeof(float), y_bytes = uint64_t(T * O) * sizeof(float);
  RuntimeOptions no_folding;
  no_folding.fold_ops = false;
  auto unfolded = load(g, no_folding);
  auto folded = load(g);
  ASSERT_EQ(unfolded->num_folded_steps(), 0u);
  ASSERT_EQ(folded->num_folded_steps(), 1u);
  EXPECT_GE(unfolded->arena_bytes(), h_bytes + y_bytes);
  EXPECT_EQ(folded->arena_bytes(), y_bytes);
  // Both give y = 0.5 * sum(x / rms(x)) for every feature.
  std::vector<float> x(size_t(T * N));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::cos(0.37 * double(i)));
  for (const auto& method : {unfolded, folded}) {
    Execution ex(method);
    ex.bind_input(0, x.data());
    ASSERT_TRUE(ex.run(nullptr).ok());
    const float* y = static_cast<const float*>(ex.output_data(0));
    for (int64_t r = 0; r < T; ++r) {
      double ss = 0, sum = 0;
      for (int64_t i = 0; i < N; ++i) ss += double(x[size_t(r * N + i)]) * x[size_t(r * N + i)], sum += x[size_t(r * N + i)];
      const double want = 0.5 * sum / std::sqrt(ss / N + 1e-5);
      for (int64_t o = 0; o < O; ++o) ASSERT_NEAR(y[r * O + o], want, 1e-4 * (1.0 + std::fabs(want))) << r << " " << o;
    }
  }
}

TEST_F(ExecutorErrors, RowsOfANonActivationOutputCannotBeLimited) {
  Graph g;
  g.in("x", DType::F32, {1, 1, 2, 4}).val("y", DType::F32, {1, 1, 2, 4}).node("copy", {"x"}, {"y"});
  g.out("y", "y", OutputMemory::Planned);
  Execution ex(load(g));
  EXPECT_THAT(error_of([&] { ex.set_output_rows(0, 0, 1); }), HasSubstr("output 0 'y' is [1, 1, 2, 4], not [1, T, N]"));
}

TEST_F(ExecutorErrors, UnplannedOutputNamingAnInput) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, X).node("copy", {"x"}, {"y"});
  g.out("y", "y", OutputMemory::Planned).out("x_out", "x", OutputMemory::Unplanned);
  std::string e = load_error(g);
  EXPECT_THAT(e, HasSubstr("method 'm' output 1 'x_out'"));
  EXPECT_THAT(e, AllOf(HasSubstr("'x'"), Not(HasSubstr("backs more than one output"))));
}

TEST_F(ExecutorErrors, ArenaPlanWithMixedSizes) {
  // Values of different widths: a large short-lived one, small long-lived ones.
  const int64_t T = 2;
  Graph g;
  std::vector<float> up(64 * 8), down(8 * 64);
  for (size_t i = 0; i < up.size(); ++i) up[i] = float(std::sin(double(i))) * 0.2f;
  for (size_t i = 0; i < down.size(); ++i) down[i] = float(std::cos(double(i) * 1.3)) * 0.2f;
  g.in("x", DType::F32, {1, T, 8}).weight("up", {64, 8}, up).weight("down", {8, 64}, down);
  g.val("s", DType::F32, {1, T, 8}).val("wide", DType::F32, {1, T, 64}).val("wide2", DType::F32, {1, T, 64});
  g.val("narrow", DType::F32, {1, T, 8}).val("r", DType::F32, {1, T, 8});
  g.node("add", {"x", "x"}, {"s"});
  g.node("linear", {"s", "up"}, {"wide"});
  g.node("silu_mul", {"wide", "wide"}, {"wide2"});
  g.node("linear", {"wide2", "down"}, {"narrow"});
  g.node("add", {"narrow", "s"}, {"r"});
  g.out("r", "r", OutputMemory::Planned);
  Execution ex(load(g));
  std::vector<float> x = iota(size_t(T * 8), -1, 0.13f);
  ex.bind_input(0, x.data());
  ASSERT_TRUE(ex.run().ok());
  std::vector<double> xd(x.begin(), x.end());
  auto s = ref_add(xd, xd);
  auto wide = ref_linear(s, T, 8, up, 64);
  auto wide2 = ref_silu_mul(wide, wide);
  auto narrow = ref_linear(wide2, T, 64, down, 8);
  auto r = ref_add(narrow, s);
  const float* got = static_cast<const float*>(ex.output_data(0));
  for (size_t k = 0; k < r.size(); ++k) EXPECT_NEAR(got[k], r[k], 1e-4 * (1 + std::fabs(r[k]))) << k;
}

}  // namespace
}  // namespace hfstatic
