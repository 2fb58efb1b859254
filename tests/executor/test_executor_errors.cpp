// Method graph validation and execution errors, on hand-built programs written with
// ProgramWriter (the happy paths are in test_executor.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "executor/method.h"
#include "format/program.h"
#include "graph_test.h"
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

class ExecutorErrors : public GraphTest {};

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
  g.in("x", DType::F32, X)
      .val("y", DType::F32, X)
      .node("add", {"x", "ghost"}, {"y"})
      .out("y", "y", OutputMemory::Planned);
  g.weight("w", {3, 4});
  EXPECT_THAT(load_error(g),
              HasSubstr("method 'm' node 0 (add): operand 'ghost' is not an input, a weight or a declared value"));
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
  EXPECT_THAT(load_error(g),
              HasSubstr("method 'm' node 0 (linear): output 'y' is declared float32 [1, 2, 4] but the op "
                        "produces float32 [1, 2, 3]"));
}

TEST_F(ExecutorErrors, DeclaredDtypeDiffersFromOp) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F16, X).node("copy", {"x"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(
      load_error(g),
      HasSubstr("node 0 (copy): output 'y' is declared float16 [1, 2, 4] but the op produces float32 [1, 2, 4]"));
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
  EXPECT_THAT(load_error(h),
              HasSubstr("node 0 (linear): input 1 'w' (int64 [3, 4]) must be float32, float16 or bfloat16"));
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
  EXPECT_THAT(load_error(g),
              HasSubstr("node 0 (silu_mul): input 1 'r' (float32 [1, 2, 5]) must have the shape of input 0 'x' "
                        "(float32 [1, 2, 4])"));
}

TEST_F(ExecutorErrors, LinearMismatchedColumns) {
  Graph g;
  g.in("x", DType::F32, X).val("y", DType::F32, {1, 2, 3}).weight("w", {3, 5});
  g.node("linear", {"x", "w"}, {"y"}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g),
              HasSubstr("node 0 (linear): input 1 'w' (float32 [3, 5]) must have 4 columns to match input 0 'x' "
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
  EXPECT_THAT(load_error(g),
              HasSubstr("node 0 (rms_norm): input 1 'nw' (float32 [5]) must have length 4 to match input 0 'x'"));

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
  // A type that is not a string names the attribute (it was a JSON library's type error).
  g.m.nodes[0].attrs = {{"head_dim", 4}, {"theta", 10000.0}, {"scaling", {{"type", 3}}}};
  EXPECT_THAT(load_error(g), HasSubstr("node 0 (rope): attribute 'scaling.type' = 3 is not a string"));
  g.m.nodes[0].attrs = {{"head_dim", 4}, {"theta", 10000.0}, {"scaling", {{"type", "llama3"}, {"factor", "x"}}}};
  EXPECT_THAT(load_error(g), AllOf(HasSubstr(".hfs: method 'm' node 0 (rope)"), Not(HasSubstr("json.exception"))));
}

TEST_F(ExecutorErrors, ZeroSizedOperandsAreRefused) {
  // A hidden size of 0 validated and then divided by zero in the norm.
  Graph g;
  g.in("x", DType::F32, {1, 2, 0}).weight("w", {0}).val("y", DType::F32, {1, 2, 0});
  g.node("rms_norm", {"x", "w"}, {"y"}, {{"eps", 1e-5}}).out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), AllOf(HasSubstr(".hfs: method 'm' node 0 (rms_norm): operand 'x' has shape [1, 2, 0]"),
                                   HasSubstr("a dimension of 0")));
}

TEST_F(ExecutorErrors, ErrorsNameTheProgramFile) {
  Graph g;
  g.in("x", DType::F32, X)
      .val("y", DType::F32, X)
      .node("frobnicate", {"x"}, {"y"})
      .out("y", "y", OutputMemory::Planned);
  EXPECT_THAT(load_error(g), testing::StartsWith(dir.path()));
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
  EXPECT_THAT(load_error(attention_graph(3, 2, 4, 8)),
              HasSubstr("node 0 (attention): n_heads 3 is not a multiple of the cache's 2 kv heads"));
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
  EXPECT_THAT(load_error(cache_write_graph(2, 4, 8, 2, {1, 1, 3, 8})),
              HasSubstr("input 5 'mask' (float32 [1, 1, 3, 8]) must be [1, 1, 2, 8]"));
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
  EXPECT_THAT(load_error(g),
              HasSubstr("input 3 'vc' (float16 [1, 2, 8, 4]) must match input 2 'kc' (float32 [1, 2, 8, 4])"));
}

TEST_F(ExecutorErrors, WeightUpdatedInPlaceIsRejected) {
  Graph g;
  g.in("k", DType::F32, {1, 2, 8}).in("v", DType::F32, {1, 2, 8});
  g.weight("kc", {1, 2, 8, 4}).in("vc", DType::F32, {1, 2, 8, 4});
  g.in("counter", DType::I64, {1}).in("mask", DType::F32, {1, 1, 2, 8});
  g.node("cache_write", {"k", "v", "kc", "vc", "counter", "mask"}, {});
  g.out("counter_updated", "counter", OutputMemory::Alias);
  EXPECT_THAT(load_error(g),
              HasSubstr("node 0 (cache_write): updates operand 'kc' in place, but only method inputs may be updated"));
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
  EXPECT_THAT(load_error(g),
              HasSubstr("method 'm' output 0 'y_alias': an alias output must name a method input, 'y' is not one"));
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
  EXPECT_THAT(load_error(g),
              HasSubstr("method 'm' output 1 'x_out': a planned output must name a value a node produces"));
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
  EXPECT_THAT(s.message(),
              HasSubstr("method 'm' node 0 (embedding): token id 7 at row 1 is outside the vocabulary [0, 5)"));
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
  EXPECT_THAT(
      s.message(),
      HasSubstr("method 'm' node 0 (cache_write): counter 3 with 2 real rows does not fit the cache of 4 slots"));
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

}  // namespace
}  // namespace hfstatic
