// Exporter and config.json validation: each error names the field or tensor and the value at
// fault, and a failed export leaves nothing behind. Sharded checkpoints and weight dtype
// conversion (the export / inspect / make-checkpoint commands: tests/cli/test_cli_export.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "export/exporter.h"
#include "export/make_checkpoint.h"
#include "format/program.h"
#include "test_support.h"
#include "util/error.h"

namespace hfstatic {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::list_dir;
using test::write_file;
using testing::AllOf;
using testing::HasSubstr;
using testing::Not;

using test::error_of;
using test::f32_values;
using test::read_tensors;
using test::TensorBytes;

class ExportErrors : public test::CheckpointTest {
 protected:
  ExportErrors() : CheckpointTest("export") {}
  // Rewrites model.safetensors through `edit`, which may change a tensor or return false to drop it.
  static void edit_tensors(const std::string& ckpt, const std::function<bool(TensorBytes&)>& edit) {
    test::rewrite_tensors(
        ckpt, [&](TensorBytes t) { return edit(t) ? std::vector{std::move(t)} : std::vector<TensorBytes>{}; });
  }

  // Exports into an empty folder of its own and returns the error; checks nothing is left there.
  std::string export_error(const std::string& ckpt, const GraphOptions& g = small(),
                           std::optional<DType> wd = std::nullopt) {
    std::string out_dir = dir.file(cat("out", count_++));
    fs::create_directories(out_dir);
    std::string out = out_dir + "/p.hfs";
    std::string e = error_of([&] { test::export_to(ckpt, out, g, wd); });
    EXPECT_FALSE(fs::exists(out)) << "a failed export left " << out;
    EXPECT_EQ(list_dir(out_dir), std::vector<std::string>{}) << "a failed export left files behind";
    return e;
  }
  std::string export_ok(const std::string& ckpt, const GraphOptions& g = small(),
                        std::optional<DType> wd = std::nullopt) {
    std::string out = dir.file(cat("ok", count_++, ".hfs"));
    test::export_to(ckpt, out, g, wd);
    return out;
  }
  static GraphOptions small() {
    GraphOptions g;
    g.prefill_len = 4;
    g.max_context = 64;
    return g;
  }
};

// ---- config.json ---------------------------------------------------------------------------

TEST_F(ExportErrors, UnsupportedModelType) {
  auto c = checkpoint();
  edit_config(c, [](json& j) { j["model_type"] = "gpt2"; });
  EXPECT_THAT(
      export_error(c),
      AllOf(HasSubstr("config.json"),
            HasSubstr("config field 'model_type' = 'gpt2' is not supported (supported: llama, mistral, qwen2, qwen3, "
                      "phi3, smollm3, granite, gemma3_text, gemma2, gemma3")));
  edit_config(c, [](json& j) { j.erase("model_type"); });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'model_type' is missing or not a string"));
}

TEST_F(ExportErrors, BrokenTokenizerOrTemplateFailsTheExport) {
  // Written into the program before, and found only when a runner loaded it.
  std::string c = checkpoint();
  write_file(c + "/tokenizer.json", "{\"model\": ");
  EXPECT_THAT(export_error(c), HasSubstr("tokenizer.json"));
  c = checkpoint();
  json tokenizer = json::parse(read_text_file(c + "/tokenizer.json"));
  tokenizer["model"]["merges"] = json::array({"no-such-token another-one"});
  write_file(c + "/tokenizer.json", tokenizer.dump());
  EXPECT_THAT(export_error(c), AllOf(HasSubstr("tokenizer.json"), HasSubstr("merge")));
  c = checkpoint();
  json config = json::parse(read_text_file(c + "/tokenizer_config.json"));
  config["chat_template"] = "{% for m in messages %}{{ m.content }";
  write_file(c + "/tokenizer_config.json", config.dump());
  EXPECT_THAT(export_error(c), HasSubstr("tokenizer_config.json: chat_template: chat template line 1"));
}

TEST_F(ExportErrors, RopeScalingTypeThatIsNotAString) {
  std::string c = checkpoint();
  edit_config(c, [](json& j) { j["rope_scaling"] = {{"type", 3}}; });
  EXPECT_THAT(export_error(c), HasSubstr("config.json: config field 'rope_scaling.type' = 3 is not a string"));
}

TEST_F(ExportErrors, RopeScalingUnknownType) {
  auto c = checkpoint();
  edit_config(c, [](json& j) { j["rope_scaling"] = {{"rope_type", "ntk-by-parts"}, {"factor", 4.0}}; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'rope_scaling' type 'ntk-by-parts' is not supported "
                                         "(supported: linear, dynamic, yarn, longrope, llama3)"));
  edit_config(c, [](json& j) { j["rope_scaling"] = {{"type", "linear"}}; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'rope_scaling.factor' is missing"));
  edit_config(c, [](json& j) { j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"beta_fast", "fast"}}; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'rope_scaling.beta_fast' = \"fast\" is not a number"));
  edit_config(c, [](json& j) {
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 4.0}, {"high_freq_factor", 1.0}};
  });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'rope_scaling' needs high_freq_factor > low_freq_factor"));
  for (const char* type : {"default", "linear", "dynamic", "yarn"}) {
    edit_config(c, [&](json& j) { j["rope_scaling"] = {{"rope_type", type}, {"factor", 2.0}}; });
    EXPECT_NO_THROW(export_ok(c)) << type;
  }
}

TEST_F(ExportErrors, LongropeFactorLists) {
  auto c = checkpoint("tiny-phi3");  // head_dim 16, partial_rotary_factor 0.75: 6 factors
  edit_config(c, [](json& j) { j["rope_scaling"]["short_factor"] = {1.0, 1.0, 1.0, 1.0, 1.0}; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'rope_scaling.short_factor' has 5 values where 6 are needed"));
  edit_config(c, [](json& j) {
    j["rope_scaling"]["short_factor"] = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    j["rope_scaling"].erase("long_factor");
  });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'rope_scaling.long_factor' is missing or not a list"));
  edit_config(c, [](json& j) { j["rope_scaling"]["long_factor"] = {1.0, 1.0, 1.0, -1.0, 1.0, 1.0}; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'rope_scaling.long_factor' holds -1.0, not a number"));
  // 'su', the old name, is the same scaling.
  edit_config(c, [](json& j) {
    j["rope_scaling"]["long_factor"] = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    j["rope_scaling"]["type"] = "su";
  });
  EXPECT_NO_THROW(export_ok(c));
  edit_config(c, [](json& j) { j["partial_rotary_factor"] = 0.1; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'partial_rotary_factor' = 0.1 gives 1 rotary dimensions"));
}

TEST_F(ExportErrors, Phi3FusedWeights) {
  auto c = checkpoint("tiny-phi3");
  edit_tensors(c, [](TensorBytes& t) {
    if (t.name != "model.layers.0.self_attn.qkv_proj.weight") return true;
    t.shape = {120, 64};  // q 64 + k 32 + v 32 rows are needed
    t.bytes.resize(120 * 64 * 4);
    return true;
  });
  EXPECT_THAT(export_error(c), HasSubstr("tensor 'model.layers.0.self_attn.qkv_proj.weight' has shape [120, 64] but "
                                         "config.json implies [128, 64]"));
  c = checkpoint("tiny-phi3");
  edit_tensors(c, [](TensorBytes& t) { return t.name != "model.layers.1.mlp.gate_up_proj.weight"; });
  EXPECT_THAT(export_error(c), HasSubstr("checkpoint has no tensor 'model.layers.1.mlp.gate_up_proj.weight'"));
}

TEST_F(ExportErrors, SmolLM3AndGraniteFields) {
  auto c = checkpoint("tiny-smollm3");
  edit_config(c, [](json& j) { j["no_rope_layers"] = {1, 1, 0}; });
  EXPECT_THAT(export_error(c),
              HasSubstr("config field 'no_rope_layers' must be a list of at least num_hidden_layers = 4 values"));
  edit_config(c, [](json& j) { j["no_rope_layers"] = {1, 1, 2, 1}; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'no_rope_layers' holds 2 at layer 2, not 0 or 1"));
  edit_config(c, [](json& j) {
    j.erase("no_rope_layers");
    j["no_rope_layer_interval"] = 0;
  });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'no_rope_layer_interval' = 0 is outside"));
  auto g = checkpoint("tiny-granite");
  edit_config(g, [](json& j) { j["logits_scaling"] = 0; });
  EXPECT_THAT(export_error(g), HasSubstr("config field 'logits_scaling' = 0 is outside"));
  edit_config(g, [](json& j) {
    j["logits_scaling"] = 8;
    j["attention_multiplier"] = "1/64";
  });
  EXPECT_THAT(export_error(g), HasSubstr("config field 'attention_multiplier' = \"1/64\" is not a number"));
}

TEST_F(ExportErrors, HiddenActGelu) {
  auto c = checkpoint();
  edit_config(c, [](json& j) { j["hidden_act"] = "gelu"; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'hidden_act' = \"gelu\" is not supported (supported: silu)"));
}

TEST_F(ExportErrors, MlpBias) {
  auto c = checkpoint();
  edit_config(c, [](json& j) { j["mlp_bias"] = true; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'mlp_bias' = true is not supported"));
}

// The exported program's contract version, layer kinds and window.
json local_layers(const std::string& program) {
  auto loaded = Program::load(program);
  const json& m = loaded->metadata();
  return {m["version"], m.value("layer_types", json()), m.value("sliding_window", json())};
}

TEST_F(ExportErrors, MistralSlidingWindow) {
  auto c = checkpoint("tiny-mistral");
  // A window shorter than the context: every layer is local, the program is hf_static v2.
  edit_config(c, [](json& j) { j["sliding_window"] = 48; });
  EXPECT_EQ(local_layers(export_ok(c)), json::parse(R"([2, ["local", "local"], 48])"));
  // A window that covers the whole context changes nothing: version 1.
  for (int window : {64, 4096}) {
    edit_config(c, [&](json& j) { j["sliding_window"] = window; });
    EXPECT_EQ(local_layers(export_ok(c)), json::parse("[1, null, null]")) << window;
  }
  edit_config(c, [](json& j) { j["sliding_window"] = 48; });
  GraphOptions g = small();
  g.max_context = 48;
  EXPECT_EQ(local_layers(export_ok(c, g)), json::parse("[1, null, null]"));
  edit_config(c, [](json& j) { j["sliding_window"] = "big"; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'sliding_window' = \"big\" is not an integer"));
}

TEST_F(ExportErrors, Qwen2UseSlidingWindow) {
  auto c = checkpoint("tiny-qwen2");
  edit_config(c, [](json& j) {
    j["use_sliding_window"] = true;
    j["sliding_window"] = 32;
  });
  // Layers below max_window_layers (28 by default) stay global: no local layer, version 1.
  EXPECT_EQ(local_layers(export_ok(c)), json::parse("[1, null, null]"));
  edit_config(c, [](json& j) { j["max_window_layers"] = 1; });
  EXPECT_EQ(local_layers(export_ok(c)), json::parse(R"([2, ["global", "local"], 32])"));
  edit_config(c, [](json& j) { j["layer_types"] = {"sliding_attention", "full_attention"}; });
  EXPECT_EQ(local_layers(export_ok(c)), json::parse(R"([2, ["local", "global"], 32])"));
  edit_config(c, [](json& j) { j["layer_types"] = {"sliding_attention", "chunked_attention"}; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'layer_types' holds \"chunked_attention\""));
  // Without use_sliding_window the window field is ignored.
  edit_config(c, [](json& j) {
    j.erase("layer_types");
    j["use_sliding_window"] = false;
  });
  EXPECT_EQ(local_layers(export_ok(c)), json::parse("[1, null, null]"));
  edit_config(c, [](json& j) { j["use_sliding_window"] = "yes"; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'use_sliding_window' = \"yes\" is not a boolean"));
}

// Errors quote at most about 200 bytes of a value, read numbers past int64_t as what they are,
// and name config.json and the field of a number no double holds.
TEST_F(ExportErrors, ValuesInErrorsAreShortAndExact) {
  auto c = checkpoint("tiny-qwen2");
  edit_config(c, [](json& j) {
    j["use_sliding_window"] = true;
    j["sliding_window"] = 32;
    j["layer_types"] = std::vector<std::string>(1000000, "full_attention");
  });
  const std::string e = export_error(c);
  EXPECT_THAT(e, AllOf(HasSubstr("config field 'layer_types' = [\"full_attention\""), HasSubstr("bytes)")));
  EXPECT_LT(e.size(), 500u);
  edit_config(c, [](json& j) {
    j.erase("layer_types");
    j["sliding_window"] = UINT64_MAX;
  });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'sliding_window' = 18446744073709551615 is outside"));
  const std::string config = c + "/config.json";
  std::string text = read_text_file(config);
  text.insert(text.rfind('}'), ", \"rope_theta_extra\": {\"x\": [1, 1e400]}");
  write_file(config, text);
  EXPECT_THAT(export_error(c),
              HasSubstr("config.json: field 'rope_theta_extra.x[1]': the number 1e400 is out of range"));
}

TEST_F(ExportErrors, KeyValueHeadsMustDivideHeads) {
  auto c = checkpoint();
  edit_config(c, [](json& j) { j["num_key_value_heads"] = 3; });
  EXPECT_THAT(export_error(c),
              HasSubstr("config field 'num_key_value_heads' = 3 does not divide num_attention_heads = 4"));
}

TEST_F(ExportErrors, OddHeadDim) {
  auto c = checkpoint("tiny-qwen3");
  edit_config(c, [](json& j) { j["head_dim"] = 31; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'head_dim' = 31 is odd"));
  // Implied by hidden_size / num_attention_heads: 60 / 4 = 15.
  auto d = checkpoint();
  edit_config(d, [](json& j) { j["hidden_size"] = 60; });
  EXPECT_THAT(export_error(d), HasSubstr("config field 'head_dim' = 15 is odd"));
  edit_config(d, [](json& j) { j["hidden_size"] = 66; });
  EXPECT_THAT(export_error(d),
              HasSubstr("config field 'hidden_size' = 66 is not a multiple of num_attention_heads = 4"));
}

TEST_F(ExportErrors, MissingRequiredField) {
  for (const char* field :
       {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size"}) {
    auto c = checkpoint();
    edit_config(c, [&](json& j) { j.erase(field); });
    EXPECT_THAT(export_error(c), HasSubstr(cat("config field '", field, "' is missing"))) << field;
  }
  auto c = checkpoint();
  edit_config(c, [](json& j) { j["vocab_size"] = nullptr; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'vocab_size' is missing"));
}

TEST_F(ExportErrors, FieldOfTheWrongType) {
  auto c = checkpoint();
  edit_config(c, [](json& j) { j["num_hidden_layers"] = "2"; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'num_hidden_layers' = \"2\" is not an integer"));
  edit_config(c, [](json& j) { j["num_hidden_layers"] = 2.5; });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'num_hidden_layers' = 2.5 is not an integer"));
  edit_config(c, [](json& j) {
    j["num_hidden_layers"] = 2;
    j["rms_norm_eps"] = "1e-5";
  });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'rms_norm_eps' = \"1e-5\" is not a number"));
  edit_config(c, [](json& j) {
    j["rms_norm_eps"] = 1e-5;
    j["tie_word_embeddings"] = 0;
  });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'tie_word_embeddings' = 0 is not a boolean"));
  edit_config(c, [](json& j) {
    j["tie_word_embeddings"] = false;
    j["rope_scaling"] = "llama3";
  });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'rope_scaling' = \"llama3\" is not an object"));
  edit_config(c, [](json& j) {
    j.erase("rope_scaling");
    j["num_hidden_layers"] = 0;
  });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'num_hidden_layers' = 0 is outside [1, 4096]"));
  edit_config(c, [](json& j) {
    j["num_hidden_layers"] = 2;
    j["eos_token_id"] = {1, "2"};
  });
  EXPECT_THAT(export_error(c), HasSubstr("config field 'eos_token_id' holds \"2\", not a token id"));
}

TEST_F(ExportErrors, ConfigFileProblems) {
  auto c = checkpoint();
  write_file(c + "/config.json", "{\"model_type\": ");
  EXPECT_THAT(export_error(c), AllOf(HasSubstr("config.json"), HasSubstr("not valid JSON")));
  write_file(c + "/config.json", "[1]");
  EXPECT_THAT(export_error(c), HasSubstr("config is not a JSON object"));
  fs::remove(c + "/config.json");
  EXPECT_THAT(export_error(c), HasSubstr("no config.json"));
  EXPECT_THAT(export_error(dir.file("nowhere")), HasSubstr("no config.json"));
}

// ---- tensors -------------------------------------------------------------------------------

TEST_F(ExportErrors, TensorWithTheWrongShape) {
  auto c = checkpoint();
  edit_tensors(c, [](TensorBytes& t) {
    if (t.name == "model.layers.1.mlp.up_proj.weight") t.shape = {t.shape[1], t.shape[0]};
    return true;
  });
  EXPECT_THAT(
      export_error(c),
      HasSubstr("tensor 'model.layers.1.mlp.up_proj.weight' has shape [64, 160] but config.json implies [160, 64]"));
}

TEST_F(ExportErrors, MissingTensor) {
  auto c = checkpoint();
  edit_tensors(c, [](TensorBytes& t) { return t.name != "model.layers.0.post_attention_layernorm.weight"; });
  EXPECT_THAT(
      export_error(c),
      AllOf(HasSubstr(c), HasSubstr("checkpoint has no tensor 'model.layers.0.post_attention_layernorm.weight'")));
}

TEST_F(ExportErrors, UntiedModelWithoutLmHead) {
  auto c = checkpoint();
  edit_tensors(c, [](TensorBytes& t) { return t.name != "lm_head.weight"; });
  EXPECT_THAT(export_error(c), HasSubstr("checkpoint has no tensor 'lm_head.weight'"));
  // Tied, the same checkpoint needs no lm_head.
  edit_config(c, [](json& j) { j["tie_word_embeddings"] = true; });
  auto p = Program::load(export_ok(c));
  EXPECT_EQ(p->weight("lm_head.weight").info, nullptr);
}

TEST_F(ExportErrors, IntegerTensor) {
  auto c = checkpoint();
  edit_tensors(c, [](TensorBytes& t) {
    if (t.name == "model.norm.weight") {
      t.dtype = DType::I32;  // same byte count as float32
    }
    return true;
  });
  EXPECT_THAT(export_error(c),
              HasSubstr("tensor 'model.norm.weight' has dtype int32; weights must be float32, float16 or bfloat16"));
}

TEST_F(ExportErrors, CorruptCheckpointFile) {
  auto c = checkpoint();
  auto bytes = read_text_file(c + "/model.safetensors");
  write_file(c + "/model.safetensors", bytes.substr(0, bytes.size() - 3));
  EXPECT_THAT(export_error(c), AllOf(HasSubstr("model.safetensors"), HasSubstr("runs past the end of the data")));
}

// ---- graph options -------------------------------------------------------------------------

TEST_F(ExportErrors, MaxContextBeyondMaxPositionEmbeddings) {
  auto c = checkpoint();
  GraphOptions g = small();
  g.max_context = 1024;
  EXPECT_THAT(export_error(c, g), HasSubstr("--max-context 1024 exceeds the model's max_position_embeddings 512"));
  g.max_context = 512;
  EXPECT_NO_THROW(export_ok(c, g));
  g.max_context = 1;
  g.prefill_len = 1;
  EXPECT_THAT(export_error(c, g), HasSubstr("--max-context 1 is below the minimum of 2"));
}

TEST_F(ExportErrors, PrefillLongerThanContext) {
  auto c = checkpoint();
  GraphOptions g = small();
  g.prefill_len = 65;
  EXPECT_THAT(export_error(c, g), HasSubstr("--prefill-len 65 is outside [1, max_context = 64]"));
  g.prefill_len = 0;
  EXPECT_THAT(export_error(c, g), HasSubstr("--prefill-len 0 is outside [1, max_context = 64]"));
  g.prefill_len = 64;
  EXPECT_NO_THROW(export_ok(c, g));
}

TEST_F(ExportErrors, UnknownMutationOrder) {
  auto c = checkpoint();
  GraphOptions g = small();
  g.mutation_order = "sideways";
  EXPECT_THAT(export_error(c, g),
              HasSubstr("--mutation-order 'sideways' is not known (known: input, reverse, by-kind, rotate)"));
}

TEST_F(ExportErrors, UnsupportedCacheDtype) {
  auto c = checkpoint();
  GraphOptions g = small();
  g.cache_dtype = DType::BF16;
  EXPECT_THAT(export_error(c, g), HasSubstr("--cache-dtype bfloat16 is not supported (float32, float16)"));
}

TEST_F(ExportErrors, FailedExportKeepsAnExistingFile) {
  auto c = checkpoint();
  std::string out = dir.file("keep.hfs");
  write_file(out, "previous contents");
  GraphOptions g = small();
  g.prefill_len = 100;
  EXPECT_THAT(error_of([&] { test::export_to(c, out, g); }), HasSubstr("--prefill-len 100"));
  EXPECT_EQ(read_text_file(out), "previous contents");
}

// ---- sharded checkpoints -------------------------------------------------------------------

TEST_F(ExportErrors, ShardedCheckpointExportsTheSameWeights) {
  for (const char* preset : {"tiny", "tiny-qwen3"}) {
    SCOPED_TRACE(preset);
    MakeCheckpointOptions o;
    o.preset = preset;
    o.seed = 11;
    std::string single = dir.file(cat(preset, "-single")), sharded = dir.file(cat(preset, "-sharded"));
    make_checkpoint(single, o);
    o.shard_bytes = 64 << 10;
    make_checkpoint(sharded, o);
    ASSERT_TRUE(fs::exists(sharded + "/model.safetensors.index.json"));
    ASSERT_FALSE(fs::exists(sharded + "/model.safetensors"));
    size_t shards = 0;
    for (const auto& name : list_dir(sharded)) shards += name.rfind("model-", 0) == 0;
    EXPECT_GT(shards, 2u);

    auto a = Program::load(export_ok(single));
    auto b = Program::load(export_ok(sharded));
    EXPECT_EQ(a->spec().to_json(), b->spec().to_json());
    ASSERT_EQ(a->container().tensors().size(), b->container().tensors().size());
    size_t compared = 0;
    for (const auto& t : a->container().tensors()) {
      if (t.name.rfind(kEmbeddedFilePrefix, 0) == 0) continue;
      WeightRef wa = a->weight(t.name), wb = b->weight(t.name);
      ASSERT_NE(wb.info, nullptr) << t.name;
      EXPECT_EQ(wa.info->dtype, wb.info->dtype) << t.name;
      EXPECT_EQ(wa.info->shape, wb.info->shape) << t.name;
      ASSERT_EQ(wa.info->size, wb.info->size) << t.name;
      EXPECT_EQ(std::memcmp(wa.data, wb.data, wa.info->size), 0) << t.name;
      ++compared;
    }
    EXPECT_GT(compared, 10u);
    EXPECT_EQ(a->embedded_file("config.json"), b->embedded_file("config.json"));
  }
}

TEST_F(ExportErrors, CachedOneMibShardsMatchSingleFile) {
  auto a = Program::load(export_ok(test::cached_checkpoint("tiny", 4)));
  auto b = Program::load(export_ok(test::cached_checkpoint("tiny", 4, 1)));
  for (const auto& t : a->container().tensors()) {
    if (t.name.rfind(kEmbeddedFilePrefix, 0) == 0) continue;
    WeightRef wb = b->weight(t.name);
    ASSERT_NE(wb.info, nullptr) << t.name;
    ASSERT_EQ(wb.info->size, t.size) << t.name;
    EXPECT_EQ(std::memcmp(a->weight(t.name).data, wb.data, t.size), 0) << t.name;
  }
}

TEST_F(ExportErrors, ShardIndexProblems) {
  MakeCheckpointOptions o;
  o.seed = 2;
  o.shard_bytes = 64 << 10;
  std::string c = dir.file("sharded");
  make_checkpoint(c, o);
  const std::string index_path = c + "/model.safetensors.index.json";
  json index = json::parse(read_text_file(index_path));
  // A tensor listed in one shard but also stored in another.
  std::vector<std::string> files;
  for (const auto& name : list_dir(c))
    if (name.rfind("model-", 0) == 0) files.push_back(name);
  ASSERT_GE(files.size(), 2u);
  auto first = read_tensors(c + "/" + files[0]);
  auto second = read_tensors(c + "/" + files[1]);
  SafetensorsWriter w;
  for (auto& t : second) w.add_bytes(t.name, t.dtype, t.shape, t.bytes);
  w.add_bytes(first[0].name, first[0].dtype, first[0].shape, first[0].bytes);
  w.write(c + "/" + files[1]);
  EXPECT_THAT(export_error(c), AllOf(HasSubstr(cat("tensor '", first[0].name, "' also appears in another shard"))));

  json bad = index;
  bad["weight_map"][first[0].name] = "../model.safetensors";
  write_file(index_path, bad.dump());
  EXPECT_THAT(export_error(c), HasSubstr("is not a plain file name"));
  bad = index;
  bad.erase("weight_map");
  write_file(index_path, bad.dump());
  EXPECT_THAT(export_error(c), HasSubstr("has no 'weight_map' object"));
  fs::remove(index_path);
  EXPECT_THAT(export_error(c), HasSubstr("neither model.safetensors nor model.safetensors.index.json is present"));
}

// ---- weight dtype conversion ---------------------------------------------------------------

// Nearest value with `mantissa` explicit bits and minimum normal exponent `min_exp`, ties to
// even, computed in double arithmetic (independent of the library's bit manipulations).
double round_float(double v, int mantissa, int min_exp) {
  if (v == 0 || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(std::fabs(v), &e);  // |v| = m * 2^e with m in [0.5, 1)
  int exp = std::max(e - 1, min_exp);
  double step = std::ldexp(1.0, exp - mantissa);
  return std::nearbyint(v / step) * step;  // the default rounding mode rounds ties to even
}
double decode_f16(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double mag = exp == 0 ? std::ldexp(double(mant), -24) : std::ldexp(double(1024 + mant), exp - 25);
  return (h & 0x8000) ? -mag : mag;
}
double decode_bf16(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST_F(ExportErrors, WeightsDtypeConversionRoundsToNearestEven) {
  auto c = checkpoint();
  // Hand-picked values with known float16 / bfloat16 encodings at the front of model.norm.weight.
  const std::vector<float> picked = {1.0f / 3, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 0.1f, -2.5f, 65504.0f, 1e-7f};
  const std::vector<uint16_t> want_f16 = {0x3555, 0x3c00, 0x3c02, 0x2e66, 0xc100, 0x7bff, 0x0002};
  const std::vector<uint16_t> want_bf16 = {0x3eab, 0x3f80, 0x3f80, 0x3dcd, 0xc020, 0x4780, 0x33d7};
  edit_tensors(c, [&](TensorBytes& t) {
    if (t.name == "model.norm.weight") std::memcpy(t.bytes.data(), picked.data(), picked.size() * 4);
    return true;
  });
  std::map<std::string, std::vector<float>> source;
  for (const auto& t : read_tensors(c + "/model.safetensors")) source[t.name] = f32_values(t);

  auto f16 = Program::load(export_ok(c, small(), DType::F16));
  auto bf16 = Program::load(export_ok(c, small(), DType::BF16));
  auto f32 = Program::load(export_ok(c, small(), DType::F32));
  EXPECT_EQ(f16->metadata()["weights_dtype"], "float16");
  EXPECT_EQ(bf16->metadata()["weights_dtype"], "bfloat16");

  auto halves = [](const Program& p, const std::string& name) {
    WeightRef w = p.weight(name);
    std::vector<uint16_t> v(w.info ? w.info->size / 2 : 0);
    if (w.info) std::memcpy(v.data(), w.data, w.info->size);
    return v;
  };
  std::vector<uint16_t> norm16 = halves(*f16, "model.norm.weight"), normb = halves(*bf16, "model.norm.weight");
  ASSERT_EQ(norm16.size(), 64u);
  for (size_t i = 0; i < picked.size(); ++i) {
    EXPECT_EQ(norm16[i], want_f16[i]) << "float16 of " << picked[i];
    EXPECT_EQ(normb[i], want_bf16[i]) << "bfloat16 of " << picked[i];
  }

  for (const char* name : {"model.norm.weight", "model.layers.0.self_attn.q_proj.weight",
                           "model.layers.1.mlp.down_proj.weight", "lm_head.weight"}) {
    SCOPED_TRACE(name);
    const std::vector<float>& src = source.at(name);
    WeightRef w16 = f16->weight(name), wb = bf16->weight(name), w32 = f32->weight(name);
    ASSERT_NE(w16.info, nullptr);
    EXPECT_EQ(w16.info->dtype, DType::F16);
    EXPECT_EQ(wb.info->dtype, DType::BF16);
    std::vector<uint16_t> h = halves(*f16, name), b = halves(*bf16, name);
    ASSERT_EQ(h.size(), src.size());
    ASSERT_EQ(b.size(), src.size());
    size_t changed = 0, mismatches = 0;
    for (size_t i = 0; i < src.size(); ++i) {
      double want16 = round_float(src[i], 10, -14), wantb = round_float(src[i], 7, -126);
      if (decode_f16(h[i]) != want16 || decode_bf16(b[i]) != wantb) {
        if (++mismatches <= 5)
          ADD_FAILURE() << name << "[" << i << "] = " << src[i] << ": float16 " << decode_f16(h[i]) << " want "
                        << want16 << ", bfloat16 " << decode_bf16(b[i]) << " want " << wantb;
      }
      changed += double(src[i]) != wantb;
    }
    EXPECT_EQ(mismatches, 0u);
    EXPECT_GT(changed, src.size() / 2) << "random weights should mostly need rounding";
    // float32 export keeps the bytes.
    ASSERT_EQ(w32.info->size, src.size() * 4);
    EXPECT_EQ(std::memcmp(w32.data, src.data(), w32.info->size), 0);
  }
}

}  // namespace
}  // namespace hfstatic
