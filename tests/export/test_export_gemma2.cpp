// Gemma 2 through the exporter: every other layer local (even ones), the attention soft-cap on
// every attention node, the final soft-cap after the lm_head (both planned on the wanted rows
// only), no q/k norms, Gemma2Config's defaults for absent caps, and what it refuses. Values from
// the tiny-gemma2 preset: hidden 64, head_dim 32, query_pre_attn_scalar 24, window 6, caps 5 / 3.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "executor/method.h"
#include "export/graph_builder.h"
#include "export/hf_config.h"
#include "export/make_checkpoint.h"
#include "format/program.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using nlohmann::json;
using testing::HasSubstr;

class ExportGemma2 : public test::CheckpointTest {
 protected:
  ExportGemma2() : CheckpointTest("export-gemma2") {}
  std::shared_ptr<const Program> exported(const std::string& ckpt, int64_t max_context = 32) {
    GraphOptions g;
    g.prefill_len = 4;
    g.max_context = max_context;
    return Program::load(test::export_to(ckpt, dir.file(cat("p", count_++, ".hfs")), g));
  }
};

std::vector<const NodeSpec*> nodes_of(const MethodSpec& m, const std::string& op) {
  std::vector<const NodeSpec*> out;
  for (const NodeSpec& n : m.nodes)
    if (n.op == op) out.push_back(&n);
  return out;
}

TEST_F(ExportGemma2, GraphHasTheFamilysParts) {
  auto program = exported(checkpoint("tiny-gemma2"));
  const json& m = program->metadata();
  EXPECT_EQ(m["version"], 2);
  EXPECT_EQ(m["layer_types"], json::parse(R"(["local", "global", "local"])"));
  EXPECT_EQ(m["sliding_window"], 6);
  EXPECT_EQ(m["model_type"], "gemma2");
  for (const char* method : {"prefill", "decode"}) {
    SCOPED_TRACE(method);
    const MethodSpec& spec = *program->spec().find_method(method);
    std::vector<std::string> masks;
    for (const NodeSpec* n : nodes_of(spec, "attention")) {
      EXPECT_NEAR(n->attrs["scale"].get<double>(), 0.2041241452, 1e-9);  // 24^-0.5
      EXPECT_EQ(n->attrs["softcap"], 5.0);
      masks.push_back(n->inputs[3]);
    }
    EXPECT_EQ(masks, (std::vector<std::string>{"local_mask", "mask", "local_mask"}));
    EXPECT_TRUE(nodes_of(spec, "head_rms_norm").empty());  // no q/k norms
    EXPECT_EQ(nodes_of(spec, "gelu_tanh_mul").size(), 3u);
    // Every layer rotates with rope_theta (no local base).
    for (const NodeSpec* n : nodes_of(spec, "rope")) {
      EXPECT_EQ(n->attrs["theta"], 10000.0);
    }
    // The final cap reads the lm_head's output (the tied embedding) and is the logits.
    const std::vector<const NodeSpec*> caps = nodes_of(spec, "softcap");
    ASSERT_EQ(caps.size(), 1u);
    EXPECT_EQ(caps[0]->attrs["cap"], 3.0);
    EXPECT_EQ(caps[0]->inputs, std::vector<std::string>{"logits_uncapped"});
    EXPECT_EQ(caps[0]->outputs, std::vector<std::string>{"logits"});
    const NodeSpec& head = spec.nodes[spec.nodes.size() - 2];
    EXPECT_EQ(head.op, "linear");
    EXPECT_EQ(head.inputs[1], "model.embed_tokens.weight");
    EXPECT_EQ(spec.outputs[9].value, "logits");  // 3 x n_layers
  }
  // Sandwich norms, scaled embeddings: the norms are 1 + w in float32.
  EXPECT_NE(program->weight("model.layers.1.pre_feedforward_layernorm.weight").info, nullptr);
  EXPECT_EQ(program->weight("model.layers.0.self_attn.q_norm.weight").info, nullptr);
  // The lm_head and the cap after it run on the wanted rows only.
  auto prefill = Method::load(program, "prefill");
  const auto& plans = prefill->step_plans();
  ASSERT_GE(plans.size(), 2u);
  EXPECT_EQ(plans.back().ops, "softcap");
  EXPECT_TRUE(plans.back().sliceable);
  EXPECT_TRUE(plans[plans.size() - 2].sliceable) << plans[plans.size() - 2].ops;
  EXPECT_THAT(plans[plans.size() - 2].ops, HasSubstr("linear"));
}

TEST_F(ExportGemma2, CapsDefaultAsGemma2ConfigAndNullTurnsThemOff) {
  auto c = checkpoint("tiny-gemma2");
  edit_config(c, [](json& j) {
    j.erase("attn_logit_softcapping");
    j.erase("final_logit_softcapping");
  });
  auto p = exported(c);
  const MethodSpec& decode = *p->spec().find_method("decode");
  for (const NodeSpec* n : nodes_of(decode, "attention")) {
    EXPECT_EQ(n->attrs["softcap"], 50.0);
  }
  ASSERT_EQ(nodes_of(decode, "softcap").size(), 1u);
  EXPECT_EQ(nodes_of(decode, "softcap")[0]->attrs["cap"], 30.0);
  edit_config(c, [](json& j) {
    j["attn_logit_softcapping"] = nullptr;
    j["final_logit_softcapping"] = nullptr;
  });
  p = exported(c);
  const MethodSpec& plain = *p->spec().find_method("decode");
  for (const NodeSpec* n : nodes_of(plain, "attention")) {
    EXPECT_FALSE(n->attrs.contains("softcap"));
  }
  EXPECT_TRUE(nodes_of(plain, "softcap").empty());
  EXPECT_EQ(plain.nodes.back().outputs, std::vector<std::string>{"logits"});
  // layer_types overrides the even layers; a window covering the context makes version 1.
  edit_config(c, [](json& j) { j["layer_types"] = {"full_attention", "sliding_attention", "sliding_attention"}; });
  EXPECT_EQ(exported(c)->metadata()["layer_types"], json::parse(R"(["global", "local", "local"])"));
  EXPECT_EQ(exported(c, 6)->metadata()["version"], 1);
}

TEST_F(ExportGemma2, RefusesWhatItDoesNotImplement) {
  auto c = checkpoint("tiny-gemma2");
  auto error = [&] { return test::error_of([&] { exported(c); }); };
  edit_config(c, [](json& j) { j["attn_logit_softcapping"] = 0; });
  EXPECT_THAT(error(), HasSubstr("config.json: config field 'attn_logit_softcapping' = 0 is outside [1e-06, 1e+06]"));
  edit_config(c, [](json& j) {
    j["attn_logit_softcapping"] = 5.0;
    j["final_logit_softcapping"] = "30";
  });
  EXPECT_THAT(error(), HasSubstr("config.json: config field 'final_logit_softcapping' = \"30\" is not a number"));
  edit_config(c, [](json& j) {
    j["final_logit_softcapping"] = 3.0;
    j["hidden_activation"] = "relu";
  });
  EXPECT_THAT(error(), HasSubstr("config.json: config field 'hidden_activation' = \"relu\" is not supported "
                                 "(supported: gelu_pytorch_tanh, gelu)"));
  edit_config(c, [](json& j) {
    j["hidden_activation"] = "gelu_pytorch_tanh";
    j["use_bidirectional_attention"] = true;
  });
  EXPECT_THAT(error(), HasSubstr("config.json: config field 'use_bidirectional_attention' = true is not supported"));
}

TEST(Gemma2Preset, RealShapesParseAndBuild) {
  const HfConfig c = HfConfig::parse(json::parse(find_checkpoint_preset("gemma-2-2b").config_json), "gemma-2-2b");
  EXPECT_EQ(c.num_hidden_layers, 26);
  EXPECT_EQ(c.attn_logit_softcapping, 50.0);
  EXPECT_EQ(c.final_logit_softcapping, 30.0);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.tie_word_embeddings && c.sandwich_norms && c.norm_plus_one);
  ASSERT_EQ(c.sliding_layers.size(), 26u);
  for (size_t l = 0; l < 26; ++l) {
    EXPECT_EQ(c.sliding_layers[l], l % 2 == 0) << l;
  }
  GraphOptions g;
  g.max_context = 8192;
  g.prefill_len = 64;
  const BuiltProgram p = build_program(c, g);
  EXPECT_EQ(p.spec.metadata["version"], 2);
  EXPECT_EQ(p.spec.metadata["sliding_window"], 4096);
}

}  // namespace
}  // namespace hfstatic
