// Families of the llama layout with a twist: phi3 (fused projections, partial rotary, longrope),
// smollm3 (layers without rope) and granite (multipliers).
#include <nlohmann/json.hpp>

#include "export/config_reader.h"
#include "export/family_entries.h"
#include "export/hf_config.h"

namespace hfstatic {

namespace {

std::vector<CheckpointPreset> phi3_presets() {
  return {
      {"tiny-phi3", "tiny phi3 like Phi-4-mini: fused qkv/gate_up, partial rotary, longrope, tied (tests)",
       R"({"architectures":["Phi3ForCausalLM"],"model_type":"phi3","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"original_max_position_embeddings":64,"partial_rotary_factor":0.75,
           "rope_scaling":{"type":"longrope","short_factor":[1.0,1.25,1.5,2.0,3.0,4.0],
                           "long_factor":[1.0,2.0,4.0,8.0,16.0,32.0]},
           "rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":true,"sliding_window":512,
           "bos_token_id":256,"eos_token_id":[258,256],"hidden_act":"silu","attention_bias":false})",
       DType::F32, 0.2},
      // Like tiny-phi3 with an original length of 32: a context past it takes the long factors.
      {"tiny-phi3-long",
       "tiny phi3 whose original_max_position_embeddings 32 is shorter than the tests' context (tests)",
       R"({"architectures":["Phi3ForCausalLM"],"model_type":"phi3","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"original_max_position_embeddings":32,"partial_rotary_factor":0.75,
           "rope_scaling":{"type":"longrope","short_factor":[1.0,1.25,1.5,2.0,3.0,4.0],
                           "long_factor":[1.0,2.0,4.0,8.0,16.0,32.0]},
           "rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":true,"sliding_window":512,
           "bos_token_id":256,"eos_token_id":[258,256],"hidden_act":"silu","attention_bias":false})",
       DType::F32, 0.2},
      {"tiny-phi3-sw", "tiny phi3 with a sliding window of 5 on every layer, as Phi-3-mini-4k's 2047 (tests)",
       R"({"architectures":["Phi3ForCausalLM"],"model_type":"phi3","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"original_max_position_embeddings":512,"rope_scaling":null,
           "rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":false,"sliding_window":5,
           "bos_token_id":256,"eos_token_id":258,"hidden_act":"silu","attention_bias":false})",
       DType::F32, 0.2},
      {"phi-3-mini-4k", "Phi-3-mini-4k shapes (phi3, 32 layers, fused projections, sliding_window 2047)",
       R"({"architectures":["Phi3ForCausalLM"],"model_type":"phi3","hidden_size":3072,"intermediate_size":8192,
           "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":32,"vocab_size":32064,
           "max_position_embeddings":4096,"original_max_position_embeddings":4096,"rope_scaling":null,
           "rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":false,"sliding_window":2047,
           "bos_token_id":1,"eos_token_id":32000,"pad_token_id":32000,"hidden_act":"silu",
           "attention_bias":false,"torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
      // rope_scaling as microsoft/Phi-4-mini-instruct's config.json has it.
      {"phi-4-mini", "Phi-4-mini shapes (phi3, 32 layers, partial rotary 0.75, longrope, tied)",
       R"({"architectures":["Phi3ForCausalLM"],"model_type":"phi3","hidden_size":3072,"intermediate_size":8192,
           "num_hidden_layers":32,"num_attention_heads":24,"num_key_value_heads":8,"vocab_size":200064,
           "max_position_embeddings":131072,"original_max_position_embeddings":4096,"partial_rotary_factor":0.75,
           "rope_scaling":{"type":"longrope","short_factor":[
             1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,
             1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0],
                           "long_factor":[
             1,1.118320672,1.250641126,1.398617824,1.564103225,1.74916897,1.956131817,2.187582649,
             2.446418898,2.735880826,3.059592084,3.421605075,3.826451687,4.279200023,4.785517845,5.351743533,
             5.984965424,6.693110555,7.485043894,8.370679318,9.36110372,10.4687158,11.70738129,13.09260651,
             14.64173252,16.37415215,18.31155283,20.47818807,22.90118105,25.61086418,28.64115884,32.03,
             32.1,32.13,32.23,32.6,32.61,32.64,32.66,32.7,
             32.71,32.93,32.97,33.28,33.49,33.5,44.16,47.77]},
           "rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":true,"sliding_window":262144,
           "bos_token_id":199999,"eos_token_id":[200020,199999],"pad_token_id":199999,"hidden_act":"silu",
           "attention_bias":false,"lm_head_bias":false,"mlp_bias":false,"torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
  };
}

}  // namespace

// Every layer attends through the window when there is one (Phi-3-mini-4k: 2047).
FamilySpec phi3_family() {
  return {
      .model_type = "phi3",
      .architectures = {"Phi3ForCausalLM"},
      .window = WindowField::Read,
      .sliding_layers = SlidingLayers::Every,
      .longrope_original_default = 4096,
      .legacy_yarn_is_longrope = true,
      .refusals = {{"attention_bias", Refusal::When::True, "for phi3"}, {"lm_head_bias", Refusal::When::True}},
      .fused_projections = true,
      .presets = phi3_presets(),
  };
}

namespace {

constexpr int64_t kBig = int64_t(1) << 31;

// no_rope_layers[l] = 1: layer l uses rope; 0: it does not. Absent: every
// no_rope_layer_interval-th layer goes without.
void parse_smollm3(const ConfigReader& r, HfConfig& c) {
  const int64_t layers = c.num_hidden_layers;
  if (r.has("no_rope_layers")) {
    const nlohmann::json& list = r.j["no_rope_layers"];
    if (!list.is_array() || int64_t(list.size()) < layers)
      fail(r.origin, ": config field 'no_rope_layers' must be a list of at least num_hidden_layers = ", layers,
           " values");
    for (int64_t l = 0; l < layers; ++l) {
      const nlohmann::json& v = list[size_t(l)];
      if (!v.is_number_integer() || (v.get<int64_t>() != 0 && v.get<int64_t>() != 1))
        fail(r.origin, ": config field 'no_rope_layers' holds ", quote_json(v), " at layer ", l, ", not 0 or 1");
      c.rope_layers.push_back(v.get<int64_t>() == 1);
    }
  } else {
    const int64_t interval = r.integer("no_rope_layer_interval", 1, kBig, 4);
    for (int64_t l = 0; l < layers; ++l) c.rope_layers.push_back((l + 1) % interval != 0);
  }
}

std::vector<CheckpointPreset> smollm3_presets() {
  return {
      {"tiny-smollm3", "tiny smollm3: a layer without rope, tied (tests)",
       R"({"architectures":["SmolLM3ForCausalLM"],"model_type":"smollm3","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":1,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-6,"rope_theta":5000000.0,"tie_word_embeddings":true,
           "no_rope_layers":[1,0,1,1],"no_rope_layer_interval":4,"use_sliding_window":false,"sliding_window":null,
           "bos_token_id":null,"eos_token_id":258,"hidden_act":"silu","attention_bias":false,"mlp_bias":false})",
       DType::F32, 0.2},
      {"tiny-smollm3-sw",
       "tiny smollm3 with use_sliding_window: its layer without rope slides over 5 positions (tests)",
       R"({"architectures":["SmolLM3ForCausalLM"],"model_type":"smollm3","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":1,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-6,"rope_theta":5000000.0,"tie_word_embeddings":true,
           "no_rope_layers":[1,0,1,1],"no_rope_layer_interval":4,"use_sliding_window":true,"sliding_window":5,
           "bos_token_id":null,"eos_token_id":258,"hidden_act":"silu","attention_bias":false,"mlp_bias":false})",
       DType::F32, 0.2},
      {"smollm3-3b", "SmolLM3-3B shapes (smollm3, 36 layers, every 4th without rope, tied)",
       R"({"architectures":["SmolLM3ForCausalLM"],"model_type":"smollm3","hidden_size":2048,"intermediate_size":11008,
           "num_hidden_layers":36,"num_attention_heads":16,"num_key_value_heads":4,"vocab_size":128256,
           "max_position_embeddings":65536,"rms_norm_eps":1e-6,"rope_theta":5000000.0,"tie_word_embeddings":true,
           "no_rope_layers":[
             1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0],
           "no_rope_layer_interval":4,"use_sliding_window":false,"sliding_window":null,"bos_token_id":null,
           "eos_token_id":128012,"pad_token_id":128004,"hidden_act":"silu","attention_bias":false,"mlp_bias":false,
           "torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
  };
}

}  // namespace

// With use_sliding_window, the window applies to the layers layer_types marks, or else to the
// layers without rope (SmolLM3Config).
FamilySpec smollm3_family() {
  return {
      .model_type = "smollm3",
      .architectures = {"SmolLM3ForCausalLM"},
      .window = WindowField::ReadWhenUsed,
      .sliding_layers = SlidingLayers::LayerTypesOrNoRope,
      .parse = parse_smollm3,
      .presets = smollm3_presets(),
  };
}

namespace {

void parse_granite(const ConfigReader& r, HfConfig& c) {
  c.embedding_multiplier = r.number("embedding_multiplier", -1e6, 1e6, 1);
  c.residual_multiplier = r.number("residual_multiplier", -1e6, 1e6, 1);
  c.attention_multiplier = r.number("attention_multiplier", 1e-9, 1e6, 1);  // Granite's default is 1
  c.logits_scaling = r.number("logits_scaling", 1e-9, 1e9, 1);
}

std::vector<CheckpointPreset> granite_presets() {
  return {
      {"tiny-granite", "tiny granite: embedding, residual, attention and logits multipliers (tests)",
       R"({"architectures":["GraniteForCausalLM"],"model_type":"granite","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":true,
           "embedding_multiplier":12.0,"residual_multiplier":0.22,"attention_multiplier":0.0625,
           "logits_scaling":2.0,"bos_token_id":256,"eos_token_id":256,"hidden_act":"silu",
           "attention_bias":false,"mlp_bias":false})",
       DType::F32, 0.2},
      {"granite-3.1-2b", "Granite-3.1-2B shapes (granite, 40 layers, multipliers, tied)",
       R"({"architectures":["GraniteForCausalLM"],"model_type":"granite","hidden_size":2048,"intermediate_size":8192,
           "num_hidden_layers":40,"num_attention_heads":32,"num_key_value_heads":8,"vocab_size":49155,
           "max_position_embeddings":131072,"rms_norm_eps":1e-5,"rope_theta":5000000.0,"tie_word_embeddings":true,
           "embedding_multiplier":12.0,"residual_multiplier":0.22,"attention_multiplier":0.015625,
           "logits_scaling":8.0,"bos_token_id":0,"eos_token_id":0,"pad_token_id":0,"hidden_act":"silu",
           "attention_bias":false,"mlp_bias":false,"torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
  };
}

}  // namespace

FamilySpec granite_family() {
  return {
      .model_type = "granite",
      .architectures = {"GraniteForCausalLM"},
      .parse = parse_granite,
      .presets = granite_presets(),
  };
}

}  // namespace hfstatic
