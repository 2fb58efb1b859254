// The families of the plain llama layout, told apart by flags: llama, mistral (a window on
// every layer), qwen2 (q/k/v biases, windows from max_window_layers on), qwen3 (q/k norms).
#include "export/family_entries.h"

namespace hfstatic {

namespace {

std::vector<CheckpointPreset> llama_presets() {
  return {
      {"tiny", "tiny llama, untied lm_head (tests)",
       R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":64,"intermediate_size":160,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":false,
           "bos_token_id":256,"eos_token_id":256,"hidden_act":"silu","attention_bias":false})",
       DType::F32, 0.2},
      {"tiny-wide", "tiny llama 512 wide: quantized rows of whole blocks of groups and more (tests)",
       R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":512,"intermediate_size":576,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":false,
           "bos_token_id":256,"eos_token_id":256,"hidden_act":"silu","attention_bias":false})",
       DType::F32, 0.05},
      {"tiny-llama3", "tiny llama with llama3 rope scaling and a tied lm_head (tests)",
       R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":1,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-5,"rope_theta":500000.0,"tie_word_embeddings":true,
           "rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,
                           "original_max_position_embeddings":64},
           "bos_token_id":256,"eos_token_id":[256,258],"hidden_act":"silu"})",
       DType::F32, 0.2},
      {"tiny-yarn", "tiny llama with yarn rope scaling (mscale, mscale_all_dim) (tests)",
       R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":false,
           "rope_scaling":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":64,
                           "beta_fast":32,"beta_slow":1,"mscale":1.0,"mscale_all_dim":0.5},
           "bos_token_id":256,"eos_token_id":256,"hidden_act":"silu"})",
       DType::F32, 0.2},
      {"smollm2-135m", "SmolLM2-135M shapes (llama, 30 layers, tied)",
       R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":576,"intermediate_size":1536,
           "num_hidden_layers":30,"num_attention_heads":9,"num_key_value_heads":3,"vocab_size":49152,
           "max_position_embeddings":8192,"rms_norm_eps":1e-5,"rope_theta":100000.0,"tie_word_embeddings":true,
           "bos_token_id":1,"eos_token_id":2,"hidden_act":"silu","attention_bias":false,"torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
      {"olmoe-1b-7b-dense",
       "OLMoE-1B-7B's active shapes as a dense llama (MLP 8192 = 8 experts x 1024): MoE benchmarks",
       R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":2048,"intermediate_size":8192,
           "num_hidden_layers":16,"num_attention_heads":16,"num_key_value_heads":16,"vocab_size":50304,
           "max_position_embeddings":4096,"rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":false,
           "eos_token_id":50279,"hidden_act":"silu","torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
  };
}

}  // namespace

FamilySpec llama_family() {
  return {
      .model_type = "llama",
      .architectures = {"LlamaForCausalLM"},
      .presets = llama_presets(),
  };
}

namespace {

std::vector<CheckpointPreset> mistral_presets() {
  return {
      {"tiny-mistral", "tiny mistral without an effective sliding window (tests)",
       R"({"architectures":["MistralForCausalLM"],"model_type":"mistral","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-5,"rope_theta":1000000.0,"tie_word_embeddings":false,
           "sliding_window":null,"bos_token_id":256,"eos_token_id":256,"hidden_act":"silu"})",
       DType::F32, 0.2},
      {"tiny-mistral-sw", "tiny mistral with a sliding window of 5 on every layer (tests)",
       R"({"architectures":["MistralForCausalLM"],"model_type":"mistral","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":false,
           "sliding_window":5,"bos_token_id":256,"eos_token_id":256,"hidden_act":"silu"})",
       DType::F32, 0.2},
  };
}

}  // namespace

FamilySpec mistral_family() {
  return {
      .model_type = "mistral",
      .architectures = {"MistralForCausalLM"},
      .window = WindowField::Read,
      .sliding_layers = SlidingLayers::Every,
      .presets = mistral_presets(),
  };
}

namespace {

std::vector<CheckpointPreset> qwen2_presets() {
  return {
      {"tiny-qwen2", "tiny qwen2 with q/k/v biases and a tied lm_head (tests)",
       R"({"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-6,"rope_theta":1000000.0,"tie_word_embeddings":true,
           "use_sliding_window":false,"sliding_window":4096,"bos_token_id":256,"eos_token_id":258,"hidden_act":"silu"})",
       DType::F32, 0.2},
      {"tiny-qwen2-sw", "tiny qwen2 whose layers from max_window_layers 1 on slide over 5 positions (tests)",
       R"({"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-6,"rope_theta":1000000.0,"tie_word_embeddings":true,
           "use_sliding_window":true,"sliding_window":5,"max_window_layers":1,"bos_token_id":256,"eos_token_id":258,
           "hidden_act":"silu"})",
       DType::F32, 0.2},
      {"qwen2.5-0.5b", "Qwen2.5-0.5B shapes (qwen2, 24 layers, q/k/v bias, tied)",
       R"({"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","hidden_size":896,"intermediate_size":4864,
           "num_hidden_layers":24,"num_attention_heads":14,"num_key_value_heads":2,"vocab_size":151936,
           "max_position_embeddings":32768,"rms_norm_eps":1e-6,"rope_theta":1000000.0,"tie_word_embeddings":true,
           "use_sliding_window":false,"sliding_window":32768,"bos_token_id":151643,"eos_token_id":151643,
           "hidden_act":"silu","torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
  };
}

}  // namespace

FamilySpec qwen2_family() {
  return {
      .model_type = "qwen2",
      .architectures = {"Qwen2ForCausalLM"},
      .attention_bias = AttentionBias::AlwaysQkv,
      .window = WindowField::ReadWhenUsed,
      .window_default = 4096,
      .sliding_layers = SlidingLayers::LayerTypesOrFromMax,
      .presets = qwen2_presets(),
  };
}

namespace {

std::vector<CheckpointPreset> qwen3_presets() {
  return {
      {"tiny-qwen3", "tiny qwen3 with q/k norm and head_dim != hidden/heads (tests)",
       R"({"architectures":["Qwen3ForCausalLM"],"model_type":"qwen3","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-6,"rope_theta":1000000.0,"tie_word_embeddings":true,
           "attention_bias":false,"use_sliding_window":false,"bos_token_id":256,"eos_token_id":258,"hidden_act":"silu"})",
       DType::F32, 0.2},
      {"qwen3-0.6b", "Qwen3-0.6B shapes (qwen3, 28 layers, q/k norm, head_dim 128, tied)",
       R"({"architectures":["Qwen3ForCausalLM"],"model_type":"qwen3","hidden_size":1024,"intermediate_size":3072,
           "num_hidden_layers":28,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"vocab_size":151936,
           "max_position_embeddings":40960,"rms_norm_eps":1e-6,"rope_theta":1000000.0,"tie_word_embeddings":true,
           "attention_bias":false,"use_sliding_window":false,"bos_token_id":151643,"eos_token_id":151645,
           "hidden_act":"silu","torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
  };
}

}  // namespace

FamilySpec qwen3_family() {
  return {
      .model_type = "qwen3",
      .architectures = {"Qwen3ForCausalLM"},
      .attention_bias = AttentionBias::FromConfigQkvOnly,
      .window = WindowField::ReadWhenUsed,
      .window_default = 4096,
      .sliding_layers = SlidingLayers::LayerTypesOrFromMax,
      .qk_norm = true,
      .presets = qwen3_presets(),
  };
}

}  // namespace hfstatic
