// A Gemma3ForConditionalGeneration checkpoint (model_type gemma3) through the exporter: its
// language model from text_config over Gemma3TextConfig's defaults, its tensors under either
// prefix transformers has saved, the vision tower and projector skipped and counted, and errors
// that name text_config. From the tiny-gemma3-mm preset: hidden 64, 3 layers (pattern 3), window
// 6, linear rope scaling 8, exact GELU, eos [1, 5] at the top level, 7 vision tensors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

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
using testing::HasSubstr;

class ExportGemma3Multimodal : public test::CheckpointTest {
 protected:
  ExportGemma3Multimodal() : CheckpointTest("export-gemma3-mm") {}
  static GraphOptions small() {
    GraphOptions g;
    g.prefill_len = 4;
    g.max_context = 32;
    return g;
  }
  ExportSummary export_ok(const std::string& ckpt, const std::string& out) {
    ExportOptions o;
    o.graph = small();
    return export_program(ckpt, out, o);
  }
  // Rewrites model.safetensors: each tensor written under the names `rename` gives (none: dropped).
  static void rename_tensors(const std::string& ckpt,
                             const std::function<std::vector<std::string>(const std::string&)>& rename) {
    test::rewrite_tensors(ckpt, [&](test::TensorBytes t) {
      std::vector<test::TensorBytes> out;
      for (const std::string& name : rename(t.name)) {
        out.push_back(t);
        out.back().name = name;
      }
      return out;
    });
  }
  static std::vector<uint8_t> bytes_of(const Program& p, const std::string& name) {
    WeightRef w = p.weight(name);
    EXPECT_NE(w.info, nullptr) << name;
    return w.info ? std::vector<uint8_t>(w.data, w.data + w.info->size) : std::vector<uint8_t>{};
  }
};

TEST_F(ExportGemma3Multimodal, ExportsTheLanguageModelAndSkipsTheVisionTower) {
  const std::string c = checkpoint("tiny-gemma3-mm");
  const ExportSummary s = export_ok(c, dir.file("mm.hfs"));
  EXPECT_EQ(s.skipped_tensors, 7u);
  EXPECT_EQ(s.skipped_what, "the vision tower and multi-modal projector");
  auto p = Program::load(dir.file("mm.hfs"));
  const json& m = p->metadata();
  EXPECT_EQ(m["model_type"], "gemma3");
  EXPECT_EQ(m["version"], 2);
  EXPECT_EQ(m["layer_types"], json::parse(R"(["local", "local", "global"])"));
  EXPECT_EQ(m["eos_ids"], json::parse("[1, 5]"));  // the top level's, over text_config's default 1
  EXPECT_EQ(m["bos_id"], 2);                       // Gemma3TextConfig's default
  // Program weights keep the text model's names; no vision tensor and no lm_head (tied by default).
  for (const TensorInfo& t : p->container().tensors()) {
    if (!p->weight(t.name).info) continue;  // an embedded file
    EXPECT_EQ(t.name.rfind("model.", 0), 0u) << t.name;
    EXPECT_EQ(t.name.find("vision"), std::string::npos) << t.name;
  }
  EXPECT_NE(p->weight("model.layers.2.mlp.down_proj.weight").info, nullptr);
  EXPECT_EQ(p->weight("lm_head.weight").info, nullptr);
  const MethodSpec& decode = *p->spec().find_method("decode");
  std::vector<json> ropes;
  int exact_gelu = 0;
  for (const NodeSpec& n : decode.nodes) {
    if (n.op == "rope" && n.outputs[0].find("k_rope") != std::string::npos) ropes.push_back(n.attrs);
    if (n.op == "attention") {
      EXPECT_NEAR(n.attrs["scale"].get<double>(), 0.2041241452, 1e-9);  // 24^-0.5
    }
    exact_gelu += n.op == "gelu_mul";
  }
  EXPECT_EQ(exact_gelu, 3);
  // Defaults: rope_local_base_freq 1e4 for the local layers; rope_theta 1e6 / 8 on the global one.
  ASSERT_EQ(ropes.size(), 3u);
  EXPECT_EQ(ropes[0], json({{"head_dim", 32}, {"theta", 1e4}}));
  EXPECT_NEAR(ropes[2]["inv_freq"][1].get<double>(), std::pow(1e6, -1 / 16.0) / 8, 1e-15);
  // The checkpoint's tensor, under language_model.model., is the program's.
  MappedFile file = MappedFile::open(c + "/model.safetensors");
  SafetensorsView view = SafetensorsView::parse(file.data(), file.size(), c + "/model.safetensors");
  for (const auto& t : view.tensors())
    if (t.name == "language_model.model.layers.1.self_attn.v_proj.weight") {
      EXPECT_EQ(bytes_of(*p, "model.layers.1.self_attn.v_proj.weight"),
                std::vector<uint8_t>(view.tensor_data(t), view.tensor_data(t) + t.size));
    }
}

// model.language_model.* and model.vision_tower.* (newer transformers) export the same program;
// untied, the lm_head is language_model.lm_head.weight (released) or lm_head.weight (newer).
TEST_F(ExportGemma3Multimodal, NewerTransformersLayoutExportsTheSameProgram) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    const std::string released = checkpoint("tiny-gemma3-mm"), newer = checkpoint("tiny-gemma3-mm");
    const std::string embed = "language_model.model.embed_tokens.weight";
    rename_tensors(released, [&](const std::string& n) {
      if (n == embed && !tied) return std::vector<std::string>{n, "language_model.lm_head.weight"};
      return std::vector<std::string>{n};
    });
    rename_tensors(newer, [&](const std::string& n) {
      if (n.rfind("language_model.model.", 0) != 0) return std::vector<std::string>{"model." + n};  // vision, projector
      const std::string moved = "model.language_model." + n.substr(21);
      if (n == embed && !tied) return std::vector<std::string>{moved, "lm_head.weight"};
      return std::vector<std::string>{moved};
    });
    for (const std::string& c : {released, newer})
      edit_config(c, [&](json& j) { j["text_config"]["tie_word_embeddings"] = tied; });
    EXPECT_EQ(export_ok(released, dir.file("released.hfs")).skipped_tensors, 7u);
    EXPECT_EQ(export_ok(newer, dir.file("newer.hfs")).skipped_tensors, 7u);
    auto a = Program::load(dir.file("released.hfs")), b = Program::load(dir.file("newer.hfs"));
    EXPECT_EQ(a->container().tensors().size(), b->container().tensors().size());
    for (const TensorInfo& t : a->container().tensors())
      if (a->weight(t.name).info) {
        EXPECT_EQ(bytes_of(*a, t.name), bytes_of(*b, t.name)) << t.name;
      }
    EXPECT_EQ(a->weight("lm_head.weight").info != nullptr, !tied);
    if (!tied) {
      EXPECT_EQ(bytes_of(*a, "lm_head.weight"), bytes_of(*a, "model.embed_tokens.weight"));
    }
  }
}

TEST_F(ExportGemma3Multimodal, ErrorsNameTheLayoutAndTextConfig) {
  auto c = checkpoint("tiny-gemma3-mm");
  auto error = [&] { return test::error_of([&] { export_ok(c, dir.file("e.hfs")); }); };
  edit_config(c, [](json& j) { j["text_config"]["num_key_value_heads"] = 3; });
  EXPECT_THAT(error(), HasSubstr("config.json (text_config): config field 'num_key_value_heads' = 3 does not divide "
                                 "num_attention_heads = 4"));
  edit_config(c, [](json& j) { j["text_config"] = 5; });
  EXPECT_THAT(error(), HasSubstr("config.json: config field 'text_config' = 5 is not an object"));
  edit_config(c, [](json& j) {
    j["text_config"] = json::parse(find_checkpoint_preset("tiny-gemma3-mm").config_json)["text_config"];
    j["text_config"]["hidden_activation"] = "silu";
  });
  EXPECT_THAT(error(), HasSubstr("config.json (text_config): config field 'hidden_activation' = \"silu\" is not "
                                 "supported (supported: gelu_pytorch_tanh, gelu)"));
  edit_config(c, [](json& j) { j["text_config"]["hidden_activation"] = "gelu"; });
  rename_tensors(c, [](const std::string& n) {
    return n == "language_model.model.norm.weight" ? std::vector<std::string>{} : std::vector<std::string>{n};
  });
  EXPECT_THAT(error(), HasSubstr("checkpoint has no tensor 'language_model.model.norm.weight'"));
}

TEST(Gemma3MultimodalPreset, RealShapesTakeTheTextConfigDefaults) {
  const HfConfig c = HfConfig::parse(json::parse(find_checkpoint_preset("gemma-3-4b").config_json), "gemma-3-4b");
  EXPECT_EQ(c.model_type, "gemma3");
  EXPECT_EQ(c.family, find_family("gemma3"));
  EXPECT_EQ(c.hidden_size, 2560);
  EXPECT_EQ(c.num_hidden_layers, 34);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.vocab_size, 262208);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_EQ(c.query_pre_attn_scalar, 256.0);
  EXPECT_EQ(c.rope_local_theta, 10000.0);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(c.sliding_window, 1024);
  ASSERT_TRUE(c.rope_scaling);
  EXPECT_EQ(c.rope_scaling->type, "linear");
  EXPECT_EQ(c.rope_scaling->factor, 8.0);
  EXPECT_TRUE(c.tie_word_embeddings && c.qk_norm && c.sandwich_norms);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1, 106}));
  EXPECT_EQ(c.model_prefix, "language_model.model.");
  ASSERT_EQ(c.sliding_layers.size(), 34u);
  for (size_t l = 0; l < 34; ++l) {
    EXPECT_EQ(c.sliding_layers[l], (l + 1) % 6 != 0) << l;
  }
  std::vector<WeightUse> tensors = expected_tensors(c);
  EXPECT_EQ(tensors.front().name, "language_model.model.embed_tokens.weight");
  EXPECT_EQ(program_weights(c).front().name, "model.embed_tokens.weight");
  EXPECT_EQ(program_weights(c).front().source, "language_model.model.embed_tokens.weight");
  GraphOptions g;
  g.max_context = 4096;
  g.prefill_len = 64;
  EXPECT_EQ(build_program(c, g).spec.metadata["sliding_window"], 1024);
}

}  // namespace
}  // namespace hfstatic
