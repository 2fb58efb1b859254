// What the exporter writes for the phi3, smollm3 and granite families and the rope scaling
// types: fused weights split into the checkpoint's rows, the rope attributes each type fixes
// (values worked out here from the Hugging Face formulas), rope-less layers, the multipliers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "export/exporter.h"
#include "export/graph_builder.h"
#include "export/hf_config.h"
#include "export/make_checkpoint.h"
#include "format/program.h"
#include "format/safetensors.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace hfstatic {
namespace {

using nlohmann::json;

class ExportFamilies : public test::CheckpointTest {
 protected:
  ExportFamilies() : CheckpointTest("families") {}
  std::shared_ptr<const Program> exported(const std::string& ckpt, std::optional<DType> weights = std::nullopt) {
    GraphOptions g;
    g.prefill_len = 4;
    g.max_context = 64;
    return Program::load(test::export_to(ckpt, dir.file(cat("p", count_++, ".hfs")), g, weights));
  }
};

std::vector<const NodeSpec*> nodes_of(const Program& p, const std::string& op) {
  std::vector<const NodeSpec*> out;
  for (const NodeSpec& n : p.spec().methods[0].nodes)
    if (n.op == op) out.push_back(&n);
  return out;
}

std::vector<float> floats(const uint8_t* data, DType type, size_t n) {
  std::vector<float> out(n);
  convert_floats(data, type, out.data(), DType::F32, n);
  return out;
}

TEST_F(ExportFamilies, Phi3FusedWeightsSplitIntoTheirRows) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    MakeCheckpointOptions o;
    o.preset = "tiny-phi3";
    o.dtype = dtype;
    const std::string ckpt = dir.file(cat("phi3-", dtype_name(dtype)));
    make_checkpoint(ckpt, o);
    // Copied as they are (bfloat16), or converted (to float32).
    for (DType program_dtype : {dtype, DType::F32}) {
      auto p = exported(ckpt, program_dtype);
      MappedFile file = MappedFile::open(ckpt + "/model.safetensors");
      SafetensorsView view = SafetensorsView::parse(file.data(), file.size(), "model.safetensors");
      const size_t E = 64, elem = dtype_size(dtype);
      struct Part {
        const char *fused, *name;
        size_t first_row, rows;
      };
      for (Part part :
           {Part{"self_attn.qkv_proj", "self_attn.q_proj", 0, 64},
            Part{"self_attn.qkv_proj", "self_attn.k_proj", 64, 32},
            Part{"self_attn.qkv_proj", "self_attn.v_proj", 96, 32}, Part{"mlp.gate_up_proj", "mlp.gate_proj", 0, 128},
            Part{"mlp.gate_up_proj", "mlp.up_proj", 128, 128}})
        for (int layer : {0, 1}) {
          const std::string prefix = cat("model.layers.", layer, ".");
          const TensorInfo* fused = view.find(prefix + part.fused + ".weight");
          ASSERT_NE(fused, nullptr);
          WeightRef w = p->weight(prefix + part.name + ".weight");
          ASSERT_NE(w.info, nullptr) << part.name;
          EXPECT_EQ(w.info->shape, (Shape{int64_t(part.rows), int64_t(E)}));
          EXPECT_EQ(w.info->dtype, program_dtype);
          const uint8_t* rows = view.tensor_data(*fused) + part.first_row * E * elem;
          EXPECT_EQ(floats(w.data, program_dtype, part.rows * E), floats(rows, dtype, part.rows * E))
              << prefix << part.name;
        }
      EXPECT_EQ(p->weight("model.layers.0.self_attn.qkv_proj.weight").info, nullptr);
    }
  }
}

TEST_F(ExportFamilies, LongropeUsesShortFactorsAndItsAttentionFactor) {
  auto p = exported(checkpoint("tiny-phi3"));
  const auto ropes = nodes_of(*p, "rope");
  ASSERT_EQ(ropes.size(), 4u);  // q and k of 2 layers
  const json& a = ropes[0]->attrs;
  EXPECT_EQ(a["head_dim"], 16);
  EXPECT_EQ(a["rotary_dim"], 12);  // 16 * 0.75
  // max 512 / original 64 = 8: sqrt(1 + ln 8 / ln 64) = sqrt(1.5).
  EXPECT_NEAR(a["attention_factor"].get<double>(), std::sqrt(1.5), 1e-15);
  const double short_factor[] = {1.0, 1.25, 1.5, 2.0, 3.0, 4.0};
  ASSERT_EQ(a["inv_freq"].size(), 6u);
  for (int i = 0; i < 6; ++i)
    EXPECT_NEAR(a["inv_freq"][i].get<double>(), std::pow(10000.0, -2.0 * i / 12) / short_factor[i], 1e-15) << i;
  EXPECT_FALSE(a.contains("theta"));
}

TEST_F(ExportFamilies, LinearYarnAndDynamicFrequencies) {
  auto c = checkpoint();  // head_dim 16, theta 10000, max_position_embeddings 512
  edit_config(c, [](json& j) { j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}}; });
  json a = nodes_of(*exported(c), "rope")[0]->attrs;
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(a["inv_freq"][i].get<double>(), std::pow(10000.0, -i / 8.0) / 4, 1e-15);
  EXPECT_FALSE(a.contains("attention_factor"));
  // dynamic only grows the base beyond max_position_embeddings, which max_context never reaches.
  edit_config(c, [](json& j) { j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 4.0}}; });
  a = nodes_of(*exported(c), "rope")[0]->attrs;
  EXPECT_EQ(a, json({{"head_dim", 16}, {"theta", 10000.0}}));
  // yarn, factor 4 over 64 positions: the ramp runs over dims [0, 3] (worked out in
  // tests/reference/test_hf_reference.py); attention factor 0.1 ln 4 + 1.
  edit_config(c, [](json& j) {
    j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 64}};
  });
  a = nodes_of(*exported(c), "rope")[0]->attrs;
  EXPECT_NEAR(a["attention_factor"].get<double>(), 0.1 * std::log(4.0) + 1, 1e-15);
  for (int i = 0; i < 8; ++i) {
    const double f = std::pow(10000.0, -i / 8.0), ramp = std::min(i / 3.0, 1.0);
    EXPECT_NEAR(a["inv_freq"][i].get<double>() / (f / 4 * ramp + f * (1 - ramp)), 1.0, 1e-13) << i;
  }
}

TEST_F(ExportFamilies, SmolLM3LayersWithoutRope) {
  auto p = exported(checkpoint("tiny-smollm3"));  // no_rope_layers [1, 0, 1, 1]
  std::vector<std::string> rotated;
  for (const NodeSpec* n : nodes_of(*p, "rope")) rotated.push_back(n->inputs[0]);
  EXPECT_EQ(rotated,
            (std::vector<std::string>{"l0.q_proj", "l0.k_proj", "l2.q_proj", "l2.k_proj", "l3.q_proj", "l3.k_proj"}));
}

TEST_F(ExportFamilies, GraniteMultipliers) {
  auto p = exported(checkpoint("tiny-granite"));
  std::vector<std::pair<std::string, double>> scales;
  for (const NodeSpec* n : nodes_of(*p, "scale")) scales.push_back({n->inputs[0], n->attrs["factor"].get<double>()});
  EXPECT_EQ(scales, (std::vector<std::pair<std::string, double>>{{"embed", 12.0},
                                                                 {"l0.o_proj", 0.22},
                                                                 {"l0.down", 0.22},
                                                                 {"l1.o_proj", 0.22},
                                                                 {"l1.down", 0.22},
                                                                 {"final_norm", 0.5}}));
  for (const NodeSpec* n : nodes_of(*p, "attention")) EXPECT_EQ(n->attrs["scale"], 0.0625);
  // The other families have no scale node and the default attention scale.
  auto llama = exported(checkpoint());
  EXPECT_TRUE(nodes_of(*llama, "scale").empty());
  EXPECT_FALSE(nodes_of(*llama, "attention")[0]->attrs.contains("scale"));
}

TEST(FamilyPresets, RealShapesParseAndBuild) {
  for (const char* name : {"phi-3-mini-4k", "phi-4-mini", "smollm3-3b", "granite-3.1-2b"}) {
    SCOPED_TRACE(name);
    const HfConfig c = HfConfig::parse(json::parse(find_checkpoint_preset(name).config_json), name);
    GraphOptions g;
    g.max_context = 2047;  // Phi-3-mini-4k's window
    g.prefill_len = 64;
    const BuiltProgram p = build_program(c, g);
    EXPECT_EQ(p.spec.methods.size(), 2u);
  }
  const HfConfig phi4 = HfConfig::parse(json::parse(find_checkpoint_preset("phi-4-mini").config_json), "phi-4-mini");
  EXPECT_EQ(phi4.rotary_dim, 96);
  EXPECT_TRUE(phi4.fused_projections && phi4.tie_word_embeddings);
  GraphOptions g;
  g.max_context = 4096;
  const BuiltProgram p = build_program(phi4, g);
  for (const NodeSpec& n : p.spec.methods[0].nodes)
    if (n.op == "rope") {
      // 131072 / 4096 = 32: sqrt(1 + ln 32 / ln 4096) = sqrt(1 + 5 / 12); short factors all 1.
      EXPECT_NEAR(n.attrs["attention_factor"].get<double>(), std::sqrt(17.0 / 12.0), 1e-15);
      ASSERT_EQ(n.attrs["inv_freq"].size(), 48u);
      EXPECT_NEAR(n.attrs["inv_freq"][47].get<double>(), std::pow(10000.0, -94.0 / 96), 1e-18);
    }
  // Past the original length: tests/export/test_export_long_context.cpp. Phi-3-mini-4k's window
  // of 2047 covers a context up to 2047: version 1.
  const HfConfig phi3 =
      HfConfig::parse(json::parse(find_checkpoint_preset("phi-3-mini-4k").config_json), "phi-3-mini-4k");
  g.max_context = 2047;
  EXPECT_EQ(build_program(phi3, g).spec.metadata["version"], 1);
  // SmolLM3-3B: every 4th layer without rope.
  const HfConfig smol = HfConfig::parse(json::parse(find_checkpoint_preset("smollm3-3b").config_json), "smollm3");
  ASSERT_EQ(smol.rope_layers.size(), 36u);
  for (size_t l = 0; l < 36; ++l) EXPECT_EQ(smol.rope_layers[l], (l + 1) % 4 != 0) << l;
}

}  // namespace
}  // namespace hfstatic
