// The mixture-of-experts families: mixtral (mistral's attention, experts on every layer, top-k
// weights renormalised), qwen2_moe (qwen2's attention, a sigmoid-gated shared expert, dense
// layers by mlp_only_layers and decoder_sparse_step), qwen3_moe (qwen3's attention, the same
// layer rule) and olmoe (q/k norms over the whole projections).
#include "export/config_reader.h"
#include "export/family_entries.h"
#include "export/hf_config.h"

namespace hfstatic {

namespace {

constexpr int64_t kMaxExperts = 1 << 12;
// Which layers of a Qwen MoE model slide differs between transformers versions.
constexpr const char* kQwenMoeWindow = "(transformers versions disagree on which qwen MoE layers slide)";

// The experts and top-k count under the family's keys; every layer has experts.
MoeConfig read_experts(const ConfigReader& r, const HfConfig& c, const char* experts_key, int64_t experts_default,
                       int64_t top_k_default) {
  MoeConfig moe;
  moe.layout = c.family->experts;
  moe.experts = r.integer(experts_key, 1, kMaxExperts, experts_default);
  moe.top_k = r.integer("num_experts_per_tok", 1, kMaxExperts, top_k_default);
  if (moe.top_k > moe.experts)
    fail(r.origin, ": config field 'num_experts_per_tok' = ", moe.top_k, " exceeds ", experts_key, " = ", moe.experts);
  moe.layers.assign(size_t(c.num_hidden_layers), true);
  return moe;
}

// Qwen's rule: layer l has experts unless it is in mlp_only_layers or (l + 1) is not a multiple
// of decoder_sparse_step.
void read_qwen_sparse_layers(const ConfigReader& r, const HfConfig& c, MoeConfig& moe) {
  const int64_t step = r.integer("decoder_sparse_step", 1, 1 << 20, 1);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) moe.layers[size_t(l)] = (l + 1) % step == 0;
  if (!r.has("mlp_only_layers")) return;
  const nlohmann::json& only = r.j["mlp_only_layers"];
  if (!only.is_array()) fail(r.origin, ": config field 'mlp_only_layers' = ", quote_json(only), " is not a list");
  for (const nlohmann::json& l : only) {
    if (!l.is_number_integer() || l.get<int64_t>() < 0 || l.get<int64_t>() >= c.num_hidden_layers)
      fail(r.origin, ": config field 'mlp_only_layers' holds ", quote_json(l), ", not a layer index in [0, ",
           c.num_hidden_layers, ")");
    moe.layers[size_t(l.get<int64_t>())] = false;
  }
}

void parse_mixtral(const ConfigReader& r, HfConfig& c) {
  MoeConfig moe = read_experts(r, c, "num_local_experts", 8, 2);
  moe.expert_size = c.intermediate_size;
  moe.normalize_top_k = true;
  c.moe = std::move(moe);
}

void parse_qwen2_moe(const ConfigReader& r, HfConfig& c) {
  MoeConfig moe = read_experts(r, c, "num_experts", 60, 4);
  moe.expert_size = r.integer("moe_intermediate_size", 1, int64_t(1) << 31, 1408);
  moe.shared_expert_size = r.integer("shared_expert_intermediate_size", 1, int64_t(1) << 31, 5632);
  moe.normalize_top_k = r.boolean("norm_topk_prob", false);
  read_qwen_sparse_layers(r, c, moe);
  c.moe = std::move(moe);
}

void parse_qwen3_moe(const ConfigReader& r, HfConfig& c) {
  MoeConfig moe = read_experts(r, c, "num_experts", 128, 8);
  moe.expert_size = r.integer("moe_intermediate_size", 1, int64_t(1) << 31, 768);
  moe.normalize_top_k = r.boolean("norm_topk_prob", false);
  read_qwen_sparse_layers(r, c, moe);
  c.moe = std::move(moe);
}

void parse_olmoe(const ConfigReader& r, HfConfig& c) {
  MoeConfig moe = read_experts(r, c, "num_experts", 64, 8);
  moe.expert_size = c.intermediate_size;
  moe.normalize_top_k = r.boolean("norm_topk_prob", false);
  c.moe = std::move(moe);
}

// Fields of router training that a forward pass never reads are accepted as they come
// (output_router_logits, router_aux_loss_coef, router_jitter_noise: noise only in training).

std::vector<CheckpointPreset> mixtral_presets() {
  return {
      {"tiny-mixtral", "tiny mixtral: 4 experts, top 2, renormalised (tests)",
       R"({"architectures":["MixtralForCausalLM"],"model_type":"mixtral","hidden_size":64,"intermediate_size":96,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-5,"rope_theta":1000000.0,"tie_word_embeddings":false,
           "sliding_window":null,"num_local_experts":4,"num_experts_per_tok":2,"router_aux_loss_coef":0.02,
           "output_router_logits":false,"bos_token_id":256,"eos_token_id":256,"hidden_act":"silu"})",
       DType::F32, 0.2},
      {"mixtral-8x7b", "Mixtral 8x7B shapes (mixtral, 32 layers, 8 experts, top 2, 46.7B, 12.9B active)",
       R"({"architectures":["MixtralForCausalLM"],"model_type":"mixtral","hidden_size":4096,"intermediate_size":14336,
           "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"vocab_size":32000,
           "max_position_embeddings":32768,"rms_norm_eps":1e-5,"rope_theta":1000000.0,"tie_word_embeddings":false,
           "sliding_window":null,"num_local_experts":8,"num_experts_per_tok":2,"router_aux_loss_coef":0.02,
           "output_router_logits":false,"bos_token_id":1,"eos_token_id":2,"hidden_act":"silu",
           "torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
  };
}

std::vector<CheckpointPreset> qwen2_moe_presets() {
  return {
      {"tiny-qwen2-moe", "tiny qwen2_moe: 6 experts, top 2, a gated shared expert, layer 1 dense (tests)",
       R"({"architectures":["Qwen2MoeForCausalLM"],"model_type":"qwen2_moe","hidden_size":64,"intermediate_size":128,
           "num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-6,"rope_theta":1000000.0,"tie_word_embeddings":false,
           "use_sliding_window":false,"sliding_window":4096,"max_window_layers":21,"num_experts":6,
           "num_experts_per_tok":2,"moe_intermediate_size":32,"shared_expert_intermediate_size":96,
           "norm_topk_prob":false,"decoder_sparse_step":1,"mlp_only_layers":[1],"bos_token_id":256,
           "eos_token_id":258,"hidden_act":"silu"})",
       DType::F32, 0.2},
      {"qwen1.5-moe-a2.7b", "Qwen1.5-MoE-A2.7B shapes (qwen2_moe, 24 layers, 60 experts, top 4, shared expert)",
       R"({"architectures":["Qwen2MoeForCausalLM"],"model_type":"qwen2_moe","hidden_size":2048,"intermediate_size":5632,
           "num_hidden_layers":24,"num_attention_heads":16,"num_key_value_heads":16,"vocab_size":151936,
           "max_position_embeddings":8192,"rms_norm_eps":1e-6,"rope_theta":1000000.0,"tie_word_embeddings":false,
           "use_sliding_window":false,"sliding_window":32768,"max_window_layers":21,"num_experts":60,
           "num_experts_per_tok":4,"moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,
           "norm_topk_prob":false,"decoder_sparse_step":1,"bos_token_id":151643,"eos_token_id":151643,
           "hidden_act":"silu","torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
  };
}

std::vector<CheckpointPreset> qwen3_moe_presets() {
  return {
      {"tiny-qwen3-moe", "tiny qwen3_moe: 8 experts, top 3, renormalised, experts every 2nd layer (tests)",
       R"({"architectures":["Qwen3MoeForCausalLM"],"model_type":"qwen3_moe","hidden_size":64,"intermediate_size":96,
           "num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-6,"rope_theta":1000000.0,"tie_word_embeddings":true,
           "attention_bias":false,"use_sliding_window":false,"num_experts":8,"num_experts_per_tok":3,
           "moe_intermediate_size":64,"norm_topk_prob":true,"decoder_sparse_step":2,"mlp_only_layers":[],
           "bos_token_id":256,"eos_token_id":258,"hidden_act":"silu"})",
       DType::F32, 0.2},
      {"qwen3-30b-a3b", "Qwen3-30B-A3B shapes (qwen3_moe, 48 layers, 128 experts, top 8, 30.5B, 3.3B active)",
       R"({"architectures":["Qwen3MoeForCausalLM"],"model_type":"qwen3_moe","hidden_size":2048,"intermediate_size":6144,
           "num_hidden_layers":48,"num_attention_heads":32,"num_key_value_heads":4,"head_dim":128,"vocab_size":151936,
           "max_position_embeddings":40960,"rms_norm_eps":1e-6,"rope_theta":1000000.0,"tie_word_embeddings":false,
           "attention_bias":false,"use_sliding_window":false,"sliding_window":null,"max_window_layers":48,
           "num_experts":128,"num_experts_per_tok":8,"moe_intermediate_size":768,"norm_topk_prob":true,
           "decoder_sparse_step":1,"mlp_only_layers":[],"bos_token_id":151643,"eos_token_id":151645,
           "hidden_act":"silu","torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
  };
}

std::vector<CheckpointPreset> olmoe_presets() {
  return {
      {"tiny-olmoe", "tiny olmoe: 8 experts, top 2, q/k norms over the whole projections (tests)",
       R"({"architectures":["OlmoeForCausalLM"],"model_type":"olmoe","hidden_size":64,"intermediate_size":32,
           "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":4,"vocab_size":272,
           "max_position_embeddings":512,"rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":false,
           "attention_bias":false,"clip_qkv":null,"num_experts":8,"num_experts_per_tok":2,"norm_topk_prob":false,
           "bos_token_id":256,"eos_token_id":256,"hidden_act":"silu"})",
       DType::F32, 0.2},
      {"olmoe-1b-7b", "OLMoE-1B-7B shapes (olmoe, 16 layers, 64 experts, top 8, 6.9B, 1.3B active)",
       R"({"architectures":["OlmoeForCausalLM"],"model_type":"olmoe","hidden_size":2048,"intermediate_size":1024,
           "num_hidden_layers":16,"num_attention_heads":16,"num_key_value_heads":16,"vocab_size":50304,
           "max_position_embeddings":4096,"rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":false,
           "attention_bias":false,"clip_qkv":null,"num_experts":64,"num_experts_per_tok":8,"norm_topk_prob":false,
           "pad_token_id":1,"eos_token_id":50279,"hidden_act":"silu","torch_dtype":"bfloat16"})",
       DType::BF16, 0.02},
  };
}

}  // namespace

FamilySpec mixtral_family() {
  return {
      .model_type = "mixtral",
      .architectures = {"MixtralForCausalLM"},
      .window = WindowField::Read,
      .sliding_layers = SlidingLayers::Every,
      .parse = parse_mixtral,
      .experts = ExpertLayout::BlockSparse,
      .presets = mixtral_presets(),
  };
}

FamilySpec qwen2_moe_family() {
  return {
      .model_type = "qwen2_moe",
      .architectures = {"Qwen2MoeForCausalLM"},
      .attention_bias = AttentionBias::QkvFromQkvBias,
      .refusals = {{"use_sliding_window", Refusal::When::True, kQwenMoeWindow}},
      .parse = parse_qwen2_moe,
      .experts = ExpertLayout::MlpExperts,
      .presets = qwen2_moe_presets(),
  };
}

FamilySpec qwen3_moe_family() {
  return {
      .model_type = "qwen3_moe",
      .architectures = {"Qwen3MoeForCausalLM"},
      .attention_bias = AttentionBias::FromConfigQkvOnly,
      .refusals = {{"use_sliding_window", Refusal::When::True, kQwenMoeWindow}},
      .parse = parse_qwen3_moe,
      .qk_norm = true,
      .experts = ExpertLayout::MlpExperts,
      .presets = qwen3_moe_presets(),
  };
}

FamilySpec olmoe_family() {
  return {
      .model_type = "olmoe",
      .architectures = {"OlmoeForCausalLM"},
      .refusals = {{"clip_qkv", Refusal::When::NotNull, "(only null)"}},
      .parse = parse_olmoe,
      .qk_norm = true,
      .qk_norm_whole = true,
      .experts = ExpertLayout::MlpExperts,
      .presets = olmoe_presets(),
  };
}

}  // namespace hfstatic
