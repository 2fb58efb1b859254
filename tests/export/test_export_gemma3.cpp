// Gemma 3 through the exporter: norm weights exported as float32 1 + w, the graph's
// family-specific parts (embedding scale, attention scale, local rope base, GeGLU, which mask
// each layer reads), and the config fields it refuses. Values are worked out by hand from the
// tiny-gemma3 preset: hidden 64, head_dim 32, query_pre_attn_scalar 24, rope_theta 1e6,
// rope_local_base_freq 1e4, 3 layers with sliding_window_pattern 3.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "format/program.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using nlohmann::json;
using testing::HasSubstr;

class ExportGemma3 : public test::CheckpointTest {
 protected:
  ExportGemma3() : CheckpointTest("export-gemma3") {}
  static GraphOptions small() {
    GraphOptions g;
    g.prefill_len = 4;
    g.max_context = 32;
    return g;
  }
  std::string export_ok(const std::string& ckpt, std::optional<DType> wd = std::nullopt) {
    return test::export_to(ckpt, dir.file(cat("ok", count_++, ".hfs")), small(), wd);
  }
  std::vector<float> floats(const Program& p, const std::string& name) {
    WeightRef w = p.weight(name);
    EXPECT_NE(w.info, nullptr) << name;
    if (!w.info) return {};
    EXPECT_EQ(w.info->dtype, DType::F32) << name;
    std::vector<float> v(w.info->size / 4);
    std::memcpy(v.data(), w.data, w.info->size);
    return v;
  }
};

TEST_F(ExportGemma3, NormsBecomeFloat32OnePlusW) {
  auto c = checkpoint("tiny-gemma3");
  // Written into the checkpoint: w = 0, -1, 0.5, 2^-30 at the front of every norm.
  const std::vector<float> w = {0.0f, -1.0f, 0.5f, 0x1p-30f};
  const std::vector<float> want = {1.0f, 0.0f, 1.5f, 1.0f};  // 1 + 2^-30 rounds to 1 in float32
  test::rewrite_tensors(c, [&](test::TensorBytes t) {
    if (t.name.find("norm.weight") != std::string::npos) std::memcpy(t.bytes.data(), w.data(), w.size() * 4);
    return std::vector{std::move(t)};
  });
  auto program = Program::load(export_ok(c, DType::BF16));
  for (const char* name :
       {"model.norm.weight", "model.layers.0.input_layernorm.weight", "model.layers.1.post_attention_layernorm.weight",
        "model.layers.2.pre_feedforward_layernorm.weight", "model.layers.2.post_feedforward_layernorm.weight",
        "model.layers.0.self_attn.q_norm.weight", "model.layers.1.self_attn.k_norm.weight"}) {
    std::vector<float> got = floats(*program, name);
    ASSERT_GE(got.size(), want.size()) << name;
    EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + 4), want) << name;
  }
  EXPECT_EQ(program->weight("model.layers.0.self_attn.q_proj.weight").info->dtype, DType::BF16);
}

TEST_F(ExportGemma3, GraphHasTheFamilysParts) {
  auto program = Program::load(export_ok(checkpoint("tiny-gemma3")));
  const json& m = program->metadata();
  EXPECT_EQ(m["version"], 2);
  EXPECT_EQ(m["layer_types"], json::parse(R"(["local", "local", "global"])"));
  EXPECT_EQ(m["sliding_window"], 6);
  const MethodSpec& decode = *program->spec().find_method("decode");
  std::vector<double> thetas;
  std::vector<std::string> masks;
  int gelu = 0, silu = 0;
  for (const NodeSpec& n : decode.nodes) {
    if (n.op == "scale") {
      EXPECT_EQ(n.attrs["factor"].get<double>(), 8.0);  // sqrt(64)
    }
    if (n.op == "attention") {
      EXPECT_NEAR(n.attrs["scale"].get<double>(), 0.2041241452, 1e-9);  // 24^-0.5
      masks.push_back(n.inputs[3]);
    }
    if (n.op == "rope" && n.outputs[0].find("q_rope") != std::string::npos) thetas.push_back(n.attrs["theta"]);
    gelu += n.op == "gelu_tanh_mul";
    silu += n.op == "silu_mul";
  }
  EXPECT_EQ(thetas, (std::vector<double>{1e4, 1e4, 1e6}));
  EXPECT_EQ(masks, (std::vector<std::string>{"local_mask", "local_mask", "mask"}));
  EXPECT_EQ(gelu, 3);
  EXPECT_EQ(silu, 0);
  // With the window covering the context, every layer is global (version 1), the local rope
  // base stays on layers 0 and 1.
  GraphOptions g = small();
  g.max_context = 6;
  auto v1 = Program::load(test::export_to(checkpoint("tiny-gemma3"), dir.file("v1.hfs"), g));
  EXPECT_EQ(v1->metadata()["version"], 1);
  EXPECT_FALSE(v1->metadata().contains("layer_types"));
}

// Soft-caps, the exact GELU and rope scaling, which Gemma3TextConfig takes too: the scaling
// rotates the global layer only, the local ones keep their plain base.
TEST_F(ExportGemma3, SoftcapsExactGeluAndGlobalRopeScaling) {
  auto c = checkpoint("tiny-gemma3");
  edit_config(c, [](json& j) {
    j["final_logit_softcapping"] = 30.0;
    j["attn_logit_softcapping"] = 20.0;
    j["hidden_activation"] = "gelu";
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  });
  auto program = Program::load(export_ok(c));
  const MethodSpec& decode = *program->spec().find_method("decode");
  int gelu = 0, caps = 0;
  std::vector<json> ropes;
  for (const NodeSpec& n : decode.nodes) {
    if (n.op == "attention") {
      EXPECT_EQ(n.attrs["softcap"], 20.0);
    }
    if (n.op == "rope" && n.outputs[0].find("q_rope") != std::string::npos) ropes.push_back(n.attrs);
    gelu += n.op == "gelu_mul";
    caps += n.op == "softcap" && n.attrs["cap"] == 30.0;
  }
  EXPECT_EQ(gelu, 3);
  EXPECT_EQ(caps, 1);
  ASSERT_EQ(ropes.size(), 3u);
  EXPECT_EQ(ropes[0], json({{"head_dim", 32}, {"theta", 1e4}}));
  EXPECT_EQ(ropes[1], ropes[0]);
  ASSERT_EQ(ropes[2]["inv_freq"].size(), 16u);
  for (int i = 0; i < 16; ++i)
    EXPECT_NEAR(ropes[2]["inv_freq"][i].get<double>(), std::pow(1e6, -i / 16.0) / 8, 1e-15) << i;
}

TEST_F(ExportGemma3, RefusesWhatItDoesNotImplement) {
  auto c = checkpoint("tiny-gemma3");
  auto error = [&] { return test::error_of([&] { export_ok(c); }); };
  edit_config(c, [](json& j) { j["hidden_activation"] = "gelu_new"; });
  EXPECT_THAT(error(), HasSubstr("config.json: config field 'hidden_activation' = \"gelu_new\" is not supported "
                                 "(supported: gelu_pytorch_tanh, gelu)"));
  edit_config(c, [](json& j) {
    j["hidden_activation"] = "gelu_pytorch_tanh";
    j["use_bidirectional_attention"] = true;
  });
  EXPECT_THAT(error(), HasSubstr("config.json: config field 'use_bidirectional_attention' = true is not supported"));
  edit_config(c, [](json& j) {
    j.erase("use_bidirectional_attention");
    j["rope_scaling"] = {{"rope_type", "ntk"}, {"factor", 8.0}};
  });
  EXPECT_THAT(error(), HasSubstr("config.json: config field 'rope_scaling' type 'ntk' is not supported"));
}

}  // namespace
}  // namespace hfstatic
