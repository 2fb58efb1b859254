// The Gemma families: gemma3_text (GeGLU, norms around attention and MLP that scale by 1 + w,
// q/k norms, scaled embeddings, its own attention scale, and sliding layers with their own rope
// base).
#include "export/config_reader.h"
#include "export/family_entries.h"
#include "export/hf_config.h"

namespace hfstatic {

namespace {

// The attention scale (query_pre_attn_scalar^-0.5) and the rope base of the sliding layers.
void parse_gemma3(const ConfigReader& r, HfConfig& c) {
  c.query_pre_attn_scalar = r.number("query_pre_attn_scalar", 1e-6, 1e9, 256);
  c.rope_local_theta = r.number("rope_local_base_freq", 1, 1e12, 10000);
}

std::vector<CheckpointPreset> gemma3_text_presets() {
  return {
      {"tiny-gemma3", "tiny gemma3_text: 3 layers (local, local, global), window 6, GQA, head_dim 32, untied (tests)",
       R"({"architectures":["Gemma3ForCausalLM"],"model_type":"gemma3_text","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-6,"rope_theta":1000000.0,"rope_local_base_freq":10000.0,
           "rope_scaling":null,"sliding_window":6,"sliding_window_pattern":3,"query_pre_attn_scalar":24,"tie_word_embeddings":false,
           "hidden_activation":"gelu_pytorch_tanh","final_logit_softcapping":null,"attn_logit_softcapping":null,
           "attention_bias":false,"pad_token_id":0,"bos_token_id":2,"eos_token_id":1})",
       DType::F32, 0.2},
      {"gemma-3-270m", "Gemma 3 270M shapes (gemma3_text, 18 layers, 5 local : 1 global, window 512, tied)",
       R"({"architectures":["Gemma3ForCausalLM"],"model_type":"gemma3_text","hidden_size":640,"intermediate_size":2048,
           "num_hidden_layers":18,"num_attention_heads":4,"num_key_value_heads":1,"head_dim":256,"vocab_size":262144,
           "max_position_embeddings":32768,"rms_norm_eps":1e-6,"rope_theta":1000000.0,"rope_local_base_freq":10000.0,
           "rope_scaling":null,"sliding_window":512,"_sliding_window_pattern":6,"query_pre_attn_scalar":256,
           "hidden_activation":"gelu_pytorch_tanh","final_logit_softcapping":null,"attn_logit_softcapping":null,
           "attention_bias":false,"use_bidirectional_attention":false,"pad_token_id":0,"bos_token_id":2,
           "eos_token_id":1,"torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
      {"gemma-3-1b", "Gemma 3 1B shapes (gemma3_text, 26 layers, 5 local : 1 global, window 512, tied)",
       R"({"architectures":["Gemma3ForCausalLM"],"model_type":"gemma3_text","hidden_size":1152,"intermediate_size":6912,
           "num_hidden_layers":26,"num_attention_heads":4,"num_key_value_heads":1,"head_dim":256,"vocab_size":262144,
           "max_position_embeddings":32768,"rms_norm_eps":1e-6,"rope_theta":1000000,"rope_local_base_freq":10000,
           "rope_scaling":null,"sliding_window":512,"sliding_window_pattern":6,"query_pre_attn_scalar":256,
           "hidden_activation":"gelu_pytorch_tanh","final_logit_softcapping":null,"attn_logit_softcapping":null,
           "attention_bias":false,"pad_token_id":0,"bos_token_id":2,"eos_token_id":[1,106],"torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
  };
}

}  // namespace

FamilySpec gemma3_text_family() {
  return {
      .model_type = "gemma3_text",
      .architectures = {"Gemma3ForCausalLM"},
      .activation = "gelu_pytorch_tanh",
      .activation_keys = {"hidden_activation", "hidden_act"},
      .tied_by_default = true,
      .window = WindowField::Read,
      .window_default = 4096,
      .sliding_layers = SlidingLayers::LayerTypesOrPattern,
      // Its global layers would need the scaling and its local ones the plain local base.
      .refuses_rope_scaling = true,
      .refusals = {{"final_logit_softcapping", Refusal::When::NotNull, "(only null)"},
                   {"attn_logit_softcapping", Refusal::When::NotNull, "(only null)"},
                   {"use_bidirectional_attention", Refusal::When::True}},
      .parse = parse_gemma3,
      .qk_norm = true,
      .sandwich_norms = true,
      .norm_plus_one = true,
      .embeddings_scaled = true,
      .preset_tokenizer = PresetTokenizer::Gemma,
      .presets = gemma3_text_presets(),
  };
}

}  // namespace hfstatic
