// Phi-3's long context and the phi3 and smollm3 sliding windows through the exporter: longrope's
// long factors for every position once max_context passes original_max_position_embeddings, the
// legacy "yarn" type of Phi-3 configs read as longrope, and windows shorter than the context
// making version 2 programs (phi3: every layer; smollm3: layer_types, else the layers without
// rope). Values from the tiny-phi3-long (head_dim 16, rotary 12, max 512, original 32),
// tiny-phi3-sw (window 5) and tiny-smollm3-sw (window 5, no_rope_layers [1, 0, 1, 1]) presets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "export/graph_builder.h"
#include "export/hf_config.h"
#include "export/make_checkpoint.h"
#include "format/program.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using nlohmann::json;
using testing::HasSubstr;

class ExportLongContext : public test::CheckpointTest {
 protected:
  ExportLongContext() : CheckpointTest("export-long") {}
  std::shared_ptr<const Program> exported(const std::string& ckpt, int64_t max_context) {
    GraphOptions g;
    g.prefill_len = 4;
    g.max_context = max_context;
    return Program::load(test::export_to(ckpt, dir.file(cat("p", count_++, ".hfs")), g));
  }
  static json rope_of(const Program& p) {
    for (const NodeSpec& n : p.spec().methods[0].nodes)
      if (n.op == "rope") return n.attrs;
    return nullptr;
  }
  static json layers_of(const Program& p) {
    const json& m = p.metadata();
    return {m["version"], m.value("layer_types", json()), m.value("sliding_window", json())};
  }
};

const double kShort[] = {1.0, 1.25, 1.5, 2.0, 3.0, 4.0}, kLong[] = {1.0, 2.0, 4.0, 8.0, 16.0, 32.0};

TEST_F(ExportLongContext, LongropePastTheOriginalLengthTakesTheLongFactors) {
  const std::string c = checkpoint("tiny-phi3-long");
  // max 512 / original 32 = 16: attention factor sqrt(1 + ln 16 / ln 32) = sqrt(1.8), whatever the context.
  for (int64_t context : {32, 33, 64}) {
    SCOPED_TRACE(context);
    const json a = rope_of(*exported(c, context));
    const double* factors = context > 32 ? kLong : kShort;
    ASSERT_EQ(a["inv_freq"].size(), 6u);
    for (int i = 0; i < 6; ++i)
      EXPECT_NEAR(a["inv_freq"][i].get<double>(), std::pow(10000.0, -2.0 * i / 12) / factors[i], 1e-15) << i;
    EXPECT_NEAR(a["attention_factor"].get<double>(), std::sqrt(1.8), 1e-15);
  }
}

// Phi3Config renames an old config's "yarn" (as "su") to longrope: its factor lists, not YaRN's
// ramp; other families keep yarn.
TEST_F(ExportLongContext, Phi3LegacyYarnIsLongrope) {
  const std::string c = checkpoint("tiny-phi3-long");
  const json longrope = rope_of(*exported(c, 64));
  for (const char* key : {"type", "rope_type"}) {
    SCOPED_TRACE(key);
    edit_config(c, [&](json& j) {
      j["rope_scaling"].erase("type");
      j["rope_scaling"][key] = "yarn";
    });
    EXPECT_EQ(rope_of(*exported(c, 64)), longrope);
  }
  auto llama = checkpoint("tiny");
  edit_config(llama, [](json& j) {
    j["rope_scaling"] = {{"type", "yarn"}, {"short_factor", {1, 2}}, {"long_factor", {1, 2}}};
  });
  EXPECT_THAT(test::error_of([&] { exported(llama, 64); }), HasSubstr("config field 'rope_scaling.factor' is missing"));
}

TEST_F(ExportLongContext, Phi3WindowSlidesEveryLayer) {
  const std::string c = checkpoint("tiny-phi3-sw");
  EXPECT_EQ(layers_of(*exported(c, 64)), json::parse(R"([2, ["local", "local"], 5])"));
  EXPECT_EQ(layers_of(*exported(c, 5)), json::parse("[1, null, null]"));  // the window covers the context
  // Without a window (Phi3Config's default), every layer is global.
  edit_config(c, [](json& j) { j["sliding_window"] = nullptr; });
  EXPECT_EQ(layers_of(*exported(c, 64)), json::parse("[1, null, null]"));
  // The masks each layer reads follow.
  edit_config(c, [](json& j) { j["sliding_window"] = 9; });
  auto p = exported(c, 64);
  for (const NodeSpec& n : p->spec().find_method("decode")->nodes)
    if (n.op == "attention") {
      EXPECT_EQ(n.inputs[3], "local_mask");
    }
}

TEST_F(ExportLongContext, SmolLM3WindowSlidesTheLayersWithoutRope) {
  const std::string c = checkpoint("tiny-smollm3-sw");
  EXPECT_EQ(layers_of(*exported(c, 64)), json::parse(R"([2, ["global", "local", "global", "global"], 5])"));
  edit_config(c, [](json& j) {
    j["layer_types"] = {"sliding_attention", "full_attention", "full_attention", "sliding_attention"};
  });
  EXPECT_EQ(layers_of(*exported(c, 64)), json::parse(R"([2, ["local", "global", "global", "local"], 5])"));
  edit_config(c, [](json& j) { j["layer_types"] = {"sliding_attention", "full_attention"}; });
  EXPECT_THAT(test::error_of([&] { exported(c, 64); }),
              HasSubstr("config.json: config field 'layer_types' = [\"sliding_attention\",\"full_attention\"] is "
                        "not a list of 4 layer types"));
  // Without use_sliding_window the window is not read.
  edit_config(c, [](json& j) {
    j.erase("layer_types");
    j["use_sliding_window"] = false;
  });
  EXPECT_EQ(layers_of(*exported(c, 64)), json::parse("[1, null, null]"));
}

// transformers reads "sliding_window": null as None: no window, though Gemma's and Qwen's
// configs default to 4096 when the field is absent. Gemma 3's sliding layers keep their base.
TEST(LongContextPresets, AnExplicitNullWindowIsNoWindow) {
  GraphOptions g;
  g.max_context = 8192;
  g.prefill_len = 64;
  auto build = [&](const char* preset, const std::function<void(json&)>& edit) {
    json j = json::parse(find_checkpoint_preset(preset).config_json);
    j["max_position_embeddings"] = 8192;
    edit(j);
    return build_program(HfConfig::parse(j, preset), g).spec;
  };
  auto thetas = [](const ProgramSpec& spec) {
    std::vector<double> out;
    for (const NodeSpec& n : spec.methods[0].nodes)
      if (n.op == "rope") out.push_back(n.attrs["theta"].get<double>());
    return out;
  };
  const ProgramSpec absent = build("gemma-3-270m", [](json& j) { j.erase("sliding_window"); });
  EXPECT_EQ(absent.metadata["version"], 2);
  EXPECT_EQ(absent.metadata["sliding_window"], 4096);
  const ProgramSpec null = build("gemma-3-270m", [](json& j) { j["sliding_window"] = nullptr; });
  EXPECT_EQ(null.metadata["version"], 1);
  EXPECT_FALSE(null.metadata.contains("sliding_window"));
  const std::vector<double> bases = thetas(null);
  ASSERT_EQ(bases.size(), 36u);  // q and k of 18 layers
  EXPECT_EQ(bases, thetas(absent));
  for (size_t i = 0; i < 36; ++i) EXPECT_EQ(bases[i], i / 2 % 6 == 5 ? 1e6 : 1e4) << i;
  EXPECT_EQ(build("tiny-qwen2-sw", [](json& j) { j.erase("sliding_window"); }).metadata["sliding_window"], 4096);
  EXPECT_EQ(build("tiny-qwen2-sw", [](json& j) { j["sliding_window"] = nullptr; }).metadata["version"], 1);
}

TEST(LongContextPresets, RealShapes) {
  // Phi-3-mini-4k's window of 2047 on every layer, for a context past it.
  const HfConfig phi3 =
      HfConfig::parse(json::parse(find_checkpoint_preset("phi-3-mini-4k").config_json), "phi-3-mini-4k");
  GraphOptions g;
  g.max_context = 4096;
  g.prefill_len = 64;
  BuiltProgram p = build_program(phi3, g);
  EXPECT_EQ(p.spec.metadata["version"], 2);
  EXPECT_EQ(p.spec.metadata["sliding_window"], 2047);
  EXPECT_EQ(p.spec.metadata["layer_types"], json(std::vector<std::string>(32, "local")));
  // Phi-4-mini past its original 4096: the long factors (the last one 47.77), attention factor
  // sqrt(1 + ln 32 / ln 4096) as within it.
  const HfConfig phi4 = HfConfig::parse(json::parse(find_checkpoint_preset("phi-4-mini").config_json), "phi-4-mini");
  g.max_context = 8192;
  p = build_program(phi4, g);
  for (const NodeSpec& n : p.spec.methods[0].nodes)
    if (n.op == "rope") {
      EXPECT_NEAR(n.attrs["attention_factor"].get<double>(), std::sqrt(17.0 / 12.0), 1e-15);
      EXPECT_NEAR(n.attrs["inv_freq"][47].get<double>(), std::pow(10000.0, -94.0 / 96) / 47.77, 1e-18);
      EXPECT_NEAR(n.attrs["inv_freq"][1].get<double>(), std::pow(10000.0, -2.0 / 96) / 1.118320672, 1e-15);
    }
}

}  // namespace
}  // namespace hfstatic
