// Mixture-of-experts checkpoints through the exporter: the config keys as transformers reads
// them (which layers have experts, how many, the top-k), the graph's moe nodes, quantized
// experts next to float routers, and the refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "export/hf_config.h"
#include "format/program.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using nlohmann::json;
using testing::HasSubstr;

class ExportMoe : public test::CheckpointTest {
 protected:
  ExportMoe() : CheckpointTest("export-moe") {}
  static GraphOptions small() {
    GraphOptions g;
    g.prefill_len = 4;
    g.max_context = 32;
    return g;
  }
  std::string export_ok(const std::string& ckpt) {
    return test::export_to(ckpt, dir.file(cat("ok", count_++, ".hfs")), small());
  }
  std::string export_error(const std::string& ckpt) {
    return test::error_of([&] { test::export_to(ckpt, dir.file("refused.hfs"), small()); });
  }
};

// The nodes of method `method` with op `op`.
std::vector<NodeSpec> nodes_of(const Program& p, const std::string& method, const std::string& op) {
  std::vector<NodeSpec> out;
  for (const NodeSpec& n : p.spec().find_method(method)->nodes)
    if (n.op == op) out.push_back(n);
  return out;
}

HfConfig parse_preset_with(const std::string& preset, const std::function<void(json&)>& edit) {
  json config = json::parse(find_checkpoint_preset(preset).config_json);
  edit(config);
  return HfConfig::parse(config, "config.json");
}

TEST(MoeConfig, QwenLayersFollowMlpOnlyLayersAndTheSparseStep) {
  // 6 layers, every 2nd has experts (layers 1, 3, 5), and layer 3 is named dense.
  const HfConfig c = parse_preset_with("tiny-qwen3-moe", [](json& j) {
    j["num_hidden_layers"] = 6;
    j["decoder_sparse_step"] = 2;
    j["mlp_only_layers"] = {3};
  });
  ASSERT_TRUE(c.moe);
  EXPECT_EQ(c.moe->layers, (std::vector<bool>{false, true, false, false, false, true}));
  EXPECT_EQ(c.moe->experts, 8);
  EXPECT_EQ(c.moe->top_k, 3);
  EXPECT_EQ(c.moe->expert_size, 64);
  EXPECT_TRUE(c.moe->normalize_top_k);
  EXPECT_EQ(c.moe->shared_expert_size, 0);
}

TEST(MoeConfig, FamiliesReadTheirOwnKeysAndDefaults) {
  const HfConfig mixtral = parse_preset_with("tiny-mixtral", [](json& j) {
    j.erase("num_local_experts");
    j.erase("num_experts_per_tok");
  });
  EXPECT_EQ(mixtral.moe->experts, 8);  // MixtralConfig's defaults
  EXPECT_EQ(mixtral.moe->top_k, 2);
  EXPECT_EQ(mixtral.moe->expert_size, 96);  // intermediate_size
  EXPECT_TRUE(mixtral.moe->normalize_top_k);
  const HfConfig qwen2 = parse_preset_with("tiny-qwen2-moe", [](json& j) { j.erase("norm_topk_prob"); });
  EXPECT_FALSE(qwen2.moe->normalize_top_k);
  EXPECT_EQ(qwen2.moe->shared_expert_size, 96);
  EXPECT_EQ(qwen2.moe->layers, (std::vector<bool>{true, false, true}));
  const HfConfig olmoe = parse_preset_with("tiny-olmoe", [](json&) {});
  EXPECT_TRUE(olmoe.qk_norm && olmoe.qk_norm_whole);
  EXPECT_EQ(olmoe.moe->expert_size, 32);
}

TEST(MoeConfig, BadRoutingKeysAreErrorsNamingThem) {
  auto error = [](const std::string& preset, const std::function<void(json&)>& edit) {
    return test::error_of([&] { parse_preset_with(preset, edit); });
  };
  EXPECT_EQ(error("tiny-olmoe", [](json& j) { j["num_experts_per_tok"] = 9; }),
            "config.json: config field 'num_experts_per_tok' = 9 exceeds num_experts = 8");
  EXPECT_EQ(error("tiny-mixtral", [](json& j) { j["num_local_experts"] = 0; }),
            "config.json: config field 'num_local_experts' = 0 is outside [1, 4096]");
  EXPECT_EQ(error("tiny-qwen3-moe", [](json& j) { j["mlp_only_layers"] = {4}; }),
            "config.json: config field 'mlp_only_layers' holds 4, not a layer index in [0, 4)");
  EXPECT_EQ(error("tiny-qwen2-moe", [](json& j) { j["mlp_only_layers"] = "1"; }),
            "config.json: config field 'mlp_only_layers' = \"1\" is not a list");
  EXPECT_EQ(error("tiny-olmoe", [](json& j) { j["clip_qkv"] = 8.0; }),
            "config.json: config field 'clip_qkv' = 8.0 is not supported (only null)");
  EXPECT_THAT(error("tiny-qwen2-moe", [](json& j) { j["use_sliding_window"] = true; }),
              HasSubstr("config field 'use_sliding_window' = true is not supported"));
  EXPECT_THAT(error("tiny-mixtral", [](json& j) { j["model_type"] = "deepseek_v3"; }),
              HasSubstr("'model_type' = 'deepseek_v3' is not supported (supported: llama, "));
}

TEST_F(ExportMoe, EveryExpertLayerIsOneMoeNodeOverItsRouterAndExperts) {
  auto p = Program::load(export_ok(checkpoint("tiny-qwen2-moe")));
  for (const std::string method : {"prefill", "decode"}) {
    const std::vector<NodeSpec> moe = nodes_of(*p, method, "moe");
    ASSERT_EQ(moe.size(), 2u) << method;  // layers 0 and 2; layer 1 is dense
    const NodeSpec& n = moe[1];
    EXPECT_EQ(n.attrs["n_experts"], 6);
    EXPECT_EQ(n.attrs["top_k"], 2);
    EXPECT_EQ(n.attrs["normalize"], false);
    ASSERT_EQ(n.inputs.size(), 2u + 3 * 6);
    EXPECT_EQ(n.inputs[1], "model.layers.2.mlp.gate.weight");
    EXPECT_EQ(n.inputs[2 + 3 * 5 + 2], "model.layers.2.mlp.experts.5.down_proj.weight");
    EXPECT_EQ(nodes_of(*p, method, "sigmoid_scale").size(), 2u);  // the shared experts' gates
  }
  EXPECT_NE(p->weight("model.layers.1.mlp.gate_proj.weight").info, nullptr);
  EXPECT_EQ(p->weight("model.layers.0.mlp.gate_proj.weight").info, nullptr);
}

TEST_F(ExportMoe, MixtralReadsBlockSparseTensorsAsGateUpDown) {
  auto p = Program::load(export_ok(checkpoint("tiny-mixtral")));
  const NodeSpec n = nodes_of(*p, "decode", "moe")[0];
  EXPECT_EQ(n.inputs[1], "model.layers.0.block_sparse_moe.gate.weight");
  EXPECT_EQ(n.inputs[2], "model.layers.0.block_sparse_moe.experts.0.w1.weight");  // gate
  EXPECT_EQ(n.inputs[3], "model.layers.0.block_sparse_moe.experts.0.w3.weight");  // up
  EXPECT_EQ(n.inputs[4], "model.layers.0.block_sparse_moe.experts.0.w2.weight");  // down
  EXPECT_EQ(n.attrs["normalize"], true);
}

TEST_F(ExportMoe, QuantizedProgramsKeepRoutersFloat) {
  const std::string ckpt = checkpoint("tiny-olmoe");
  ExportOptions o;
  o.graph = small();
  o.quant = WeightQuant{DType::I4, 32};
  export_program(ckpt, dir.file("q4.hfs"), o);
  auto p = Program::load(dir.file("q4.hfs"));
  EXPECT_EQ(p->weight("model.layers.0.mlp.gate.weight").info->dtype, DType::F32);
  EXPECT_EQ(p->weight("model.layers.0.mlp.experts.7.up_proj.weight").info->dtype, DType::U8);
  const NodeSpec n = nodes_of(*p, "prefill", "moe")[0];
  ASSERT_EQ(n.inputs.size(), 2u + 2 * 3 * 8);
  EXPECT_EQ(n.inputs[1], "model.layers.0.mlp.gate.weight");
  EXPECT_EQ(n.inputs[3], "model.layers.0.mlp.experts.0.gate_proj.weight.scales");
  const std::vector<QuantizedOperand> quantized = quantized_operands(n);
  EXPECT_EQ(quantized.size(), 3u * 8);
  // The whole-projection q/k norms of olmoe: one weight over all heads.
  EXPECT_EQ(p->weight("model.layers.0.self_attn.k_norm.weight").info->shape, Shape({64}));
}

TEST_F(ExportMoe, AMissingExpertTensorIsNamed) {
  const std::string ckpt = checkpoint("tiny-qwen3-moe");
  test::rewrite_tensors(ckpt, [](test::TensorBytes t) {
    if (t.name == "model.layers.3.mlp.experts.5.down_proj.weight") return std::vector<test::TensorBytes>{};
    return std::vector{std::move(t)};
  });
  EXPECT_THAT(export_error(ckpt), HasSubstr("model.layers.3.mlp.experts.5.down_proj.weight"));
}

TEST_F(ExportMoe, MakeCheckpointKeepsTheFirstLayersOnly) {
  MakeCheckpointOptions m;
  m.preset = "tiny-qwen2-moe";
  m.num_layers = 2;
  make_checkpoint(dir.file("two"), m);
  const json config = json::parse(read_text_file(dir.file("two") + "/config.json"));
  EXPECT_EQ(config["num_hidden_layers"], 2);
  EXPECT_EQ(config["mlp_only_layers"], json::array({1}));
  auto p = Program::load(export_ok(dir.file("two")));
  EXPECT_EQ(nodes_of(*p, "decode", "moe").size(), 1u);
  m.num_layers = 4;
  EXPECT_EQ(test::error_of([&] { make_checkpoint(dir.file("four"), m); }),
            "--num-layers 4 is outside [1, 3], the preset's layers");
}

}  // namespace
}  // namespace hfstatic
