// The Gemma families: gemma3_text (GeGLU, norms around attention and MLP that scale by 1 + w,
// q/k norms, scaled embeddings, its own attention scale, and sliding layers with their own rope
// base), gemma2 (the same without q/k norms, with attention and final logit soft-capping and
// every other layer sliding) and gemma3 (Gemma3ForConditionalGeneration: its gemma3_text
// language model, the vision tower left out).
#include "export/config_reader.h"
#include "export/family_entries.h"
#include "export/hf_config.h"

namespace hfstatic {

namespace {

// A soft-cap field: its value, none when it is null, `absent` when the config lacks it.
std::optional<double> read_softcap(const ConfigReader& r, const char* key, std::optional<double> absent) {
  if (!r.j.contains(key)) return absent;
  return r.optional_number(key, 1e-6, 1e6);
}

// The attention scale (query_pre_attn_scalar^-0.5), the rope base of the sliding layers, and
// the soft-caps (Gemma3TextConfig: none by default).
void parse_gemma3(const ConfigReader& r, HfConfig& c) {
  c.query_pre_attn_scalar = r.number("query_pre_attn_scalar", 1e-6, 1e9, 256);
  c.rope_local_theta = r.number("rope_local_base_freq", 1, 1e12, 10000);
  c.attn_logit_softcapping = read_softcap(r, "attn_logit_softcapping", std::nullopt);
  c.final_logit_softcapping = read_softcap(r, "final_logit_softcapping", std::nullopt);
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

// Its rope_scaling applies to the global layers; the local ones keep the plain local base.
FamilySpec gemma3_text_family() {
  return {
      .model_type = "gemma3_text",
      .architectures = {"Gemma3ForCausalLM"},
      .activation = "gelu_pytorch_tanh",
      .other_activations = {"gelu"},
      .activation_keys = {"hidden_activation", "hidden_act"},
      .tied_by_default = true,
      .window = WindowField::Read,
      .window_default = 4096,
      .sliding_layers = SlidingLayers::LayerTypesOrPattern,
      .refusals = {{"use_bidirectional_attention", Refusal::When::True}},
      .parse = parse_gemma3,
      .qk_norm = true,
      .sandwich_norms = true,
      .norm_plus_one = true,
      .embeddings_scaled = true,
      .preset_tokenizer = PresetTokenizer::Gemma,
      .presets = gemma3_text_presets(),
  };
}

namespace {

// Gemma2Config's soft-caps are 50 (attention) and 30 (logits) when the config lacks them.
void parse_gemma2(const ConfigReader& r, HfConfig& c) {
  c.query_pre_attn_scalar = r.number("query_pre_attn_scalar", 1e-6, 1e9, 256);
  c.attn_logit_softcapping = read_softcap(r, "attn_logit_softcapping", 50.0);
  c.final_logit_softcapping = read_softcap(r, "final_logit_softcapping", 30.0);
}

std::vector<CheckpointPreset> gemma2_presets() {
  return {
      // Caps small enough to change most scores and logits.
      {"tiny-gemma2", "tiny gemma2: 3 layers (local, global, local), window 6, attention cap 5, logit cap 3 (tests)",
       R"({"architectures":["Gemma2ForCausalLM"],"model_type":"gemma2","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-6,"rope_theta":10000.0,"sliding_window":6,
           "query_pre_attn_scalar":24,"attn_logit_softcapping":5.0,"final_logit_softcapping":3.0,
           "hidden_act":"gelu_pytorch_tanh","hidden_activation":"gelu_pytorch_tanh","attention_bias":false,
           "tie_word_embeddings":true,"cache_implementation":"hybrid","pad_token_id":0,"bos_token_id":2,
           "eos_token_id":1})",
       DType::F32, 0.2},
      {"gemma-2-2b", "Gemma 2 2B shapes (gemma2, 26 layers alternating local / global, window 4096, caps 50 / 30)",
       R"({"architectures":["Gemma2ForCausalLM"],"model_type":"gemma2","hidden_size":2304,"intermediate_size":9216,
           "num_hidden_layers":26,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"vocab_size":256000,
           "max_position_embeddings":8192,"rms_norm_eps":1e-6,"rope_theta":10000.0,"sliding_window":4096,
           "query_pre_attn_scalar":256,"attn_logit_softcapping":50.0,"final_logit_softcapping":30.0,
           "hidden_act":"gelu_pytorch_tanh","hidden_activation":"gelu_pytorch_tanh","attention_bias":false,
           "attention_dropout":0.0,"cache_implementation":"hybrid","initializer_range":0.02,"pad_token_id":0,
           "bos_token_id":2,"eos_token_id":1,"torch_dtype":"float32"})",
       DType::BF16, 0.02},
  };
}

}  // namespace

// gemma3_text's layer without q/k norms: its own window rule (even layers) and fields.
FamilySpec gemma2_family() {
  FamilySpec family = gemma3_text_family();
  family.model_type = "gemma2";
  family.architectures = {"Gemma2ForCausalLM"};
  family.sliding_layers = SlidingLayers::LayerTypesOrEven;
  family.parse = parse_gemma2;
  family.qk_norm = false;
  family.presets = gemma2_presets();
  return family;
}

namespace {

// Gemma3TextConfig's defaults (transformers' configuration_gemma3.py), which a text_config that
// omits a field takes: the released 4B, 12B and 27B configs give little more than their shapes.
constexpr const char* kGemma3TextDefaults =
    R"({"vocab_size":262208,"hidden_size":2304,"intermediate_size":9216,"num_hidden_layers":26,
        "num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"hidden_activation":"gelu_pytorch_tanh",
        "max_position_embeddings":131072,"rms_norm_eps":1e-6,"pad_token_id":0,"eos_token_id":1,"bos_token_id":2,
        "tie_word_embeddings":true,"rope_theta":1000000.0,"attention_bias":false,"query_pre_attn_scalar":256,
        "sliding_window":4096,"final_logit_softcapping":null,"attn_logit_softcapping":null,"rope_scaling":null,
        "rope_local_base_freq":10000.0,"sliding_window_pattern":6})";

// Some of the vision tower's and projector's tensors as Gemma3ForConditionalGeneration saves
// them (SigLIP's embeddings and last norm, the projection into the text model's width).
std::vector<std::pair<std::string, std::vector<int64_t>>> gemma3_vision_tensors(const nlohmann::json& config) {
  const nlohmann::json vision = config.value("vision_config", nlohmann::json::object());
  const nlohmann::json text = config.value("text_config", nlohmann::json::object());
  const int64_t width = vision.value("hidden_size", 1152), patch = vision.value("patch_size", 14);
  const int64_t side = vision.value("image_size", 896) / patch, text_width = text.value("hidden_size", 2304);
  const std::string v = "vision_tower.vision_model.";
  return {{v + "embeddings.patch_embedding.weight", {width, 3, patch, patch}},
          {v + "embeddings.patch_embedding.bias", {width}},
          {v + "embeddings.position_embedding.weight", {side * side, width}},
          {v + "post_layernorm.weight", {width}},
          {v + "post_layernorm.bias", {width}},
          {"multi_modal_projector.mm_input_projection_weight", {width, text_width}},
          {"multi_modal_projector.mm_soft_emb_norm.weight", {width}}};
}

std::vector<CheckpointPreset> gemma3_presets() {
  return {
      {"tiny-gemma3-mm",
       "tiny gemma3 multimodal layout: text model under language_model., linear rope 8 on the global layer, "
       "exact GELU, text_config defaults, a few vision tensors (tests)",
       R"({"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3",
           "text_config":{"model_type":"gemma3_text","hidden_size":64,"intermediate_size":128,"num_hidden_layers":3,
             "num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"vocab_size":272,
             "max_position_embeddings":512,"rope_scaling":{"rope_type":"linear","factor":8.0},"sliding_window":6,
             "sliding_window_pattern":3,"query_pre_attn_scalar":24,"hidden_activation":"gelu"},
           "vision_config":{"model_type":"siglip_vision_model","hidden_size":16,"intermediate_size":32,
             "num_hidden_layers":1,"num_attention_heads":2,"image_size":28,"patch_size":14,"vision_use_head":false},
           "mm_tokens_per_image":4,"eos_token_id":[1,5],"initializer_range":0.02})",
       DType::F32, 0.2},
      // As google/gemma-3-4b-it's config.json has it: the rest of text_config is the defaults.
      {"gemma-3-4b", "Gemma 3 4B shapes (gemma3 multimodal, 34 layers, window 1024, linear rope 8 on globals)",
       R"({"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3","boi_token_index":255999,
           "eoi_token_index":256000,"eos_token_id":[1,106],"image_token_index":262144,"initializer_range":0.02,
           "mm_tokens_per_image":256,
           "text_config":{"hidden_size":2560,"intermediate_size":10240,"model_type":"gemma3_text",
             "num_hidden_layers":34,"rope_scaling":{"factor":8.0,"rope_type":"linear"},"sliding_window":1024},
           "torch_dtype":"bfloat16",
           "vision_config":{"hidden_size":1152,"image_size":896,"intermediate_size":4304,
             "model_type":"siglip_vision_model","num_attention_heads":16,"num_hidden_layers":27,"patch_size":14,
             "vision_use_head":false}})",
       DType::BF16, 0.02},
  };
}

}  // namespace

// The tensors of the released checkpoints are language_model.model.* (language_model.lm_head
// when untied); newer transformers versions save model.language_model.* and lm_head.weight.
FamilySpec gemma3_family() {
  return {
      .model_type = "gemma3",
      .architectures = {"Gemma3ForConditionalGeneration"},
      .text_model = TextModelLayout{.text_model_type = "gemma3_text",
                                    .text_defaults = kGemma3TextDefaults,
                                    .layouts = {{"language_model.model.", "language_model.lm_head.weight"},
                                                {"model.language_model.", "lm_head.weight"}},
                                    .skipped_prefixes = {"vision_tower.", "multi_modal_projector.",
                                                         "model.vision_tower.", "model.multi_modal_projector."},
                                    .skipped_what = "the vision tower and multi-modal projector",
                                    .other_tensors = gemma3_vision_tensors},
      .preset_tokenizer = PresetTokenizer::Gemma,
      .presets = gemma3_presets(),
  };
}

}  // namespace hfstatic
