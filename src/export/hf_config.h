// Hugging Face config.json of the supported decoder families, validated.
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "export/family_spec.h"

namespace hfstatic {

// config.json's rope_scaling (see rope_config.h for what each type computes).
struct RopeScaling {
  std::string type;  // llama3, linear, dynamic, yarn, longrope
  double factor = 1, low_freq_factor = 1, high_freq_factor = 4, original_max_position_embeddings = 8192;
  double beta_fast = 32, beta_slow = 1;                            // yarn
  std::optional<double> mscale, mscale_all_dim, attention_factor;  // yarn; attention_factor for longrope too
  bool truncate = true;                                            // yarn
  std::vector<double> short_factor, long_factor;                   // longrope: rotary_dim / 2 each
};

// A mixture-of-experts MLP: a router scores the experts of each token, the top_k are run and
// their outputs summed with the router's softmax probabilities (renormalised over the k with
// normalize_top_k).
struct MoeConfig {
  ExpertLayout layout = ExpertLayout::None;
  int64_t experts = 0, top_k = 0, expert_size = 0;
  bool normalize_top_k = false;
  int64_t shared_expert_size = 0;  // qwen2_moe: an expert every token runs, gated by a sigmoid (0: none)
  std::vector<bool> layers;        // per layer: true for experts, false for the dense MLP of intermediate_size
};

// The parsed config: shapes and token ids, and the flags the graph builder reads, set from the
// family's FamilySpec entry and its fields.
struct HfConfig {
  std::string model_type;
  const FamilySpec* family = nullptr;  // model_type's entry in families()
  int64_t hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0, num_attention_heads = 0;
  int64_t num_key_value_heads = 0, head_dim = 0, vocab_size = 0, max_position_embeddings = 0;
  double rms_norm_eps = 1e-6, rope_theta = 10000;
  bool tie_word_embeddings = false;
  bool attention_bias = false;            // q/k/v biases (always on for qwen2)
  bool o_proj_bias = false;               // llama's attention_bias also covers o_proj
  bool qk_norm = false;                   // FamilySpec::qk_norm
  bool qk_norm_whole = false;             // FamilySpec::qk_norm_whole
  std::optional<MoeConfig> moe;           // families with ExpertLayout other than None
  std::optional<int64_t> sliding_window;  // as FamilySpec::window reads it
  std::vector<bool> sliding_layers;       // per layer: true for HF's "sliding_attention"
  // Gemma-style architecture details (defaults: the llama layout).
  std::string hidden_act = "silu";              // "gelu_pytorch_tanh" (gated GELU, tanh), "gelu" (exact GELU)
  bool sandwich_norms = false;                  // norms after attention and MLP too (pre/post_feedforward_layernorm)
  bool norm_plus_one = false;                   // RMSNorm weights scale by (1 + w); the exporter folds the 1 in
  std::optional<double> embedding_scale;        // embeddings multiplied by this (sqrt(hidden_size) in gemma)
  std::optional<double> query_pre_attn_scalar;  // attention scale query_pre_attn_scalar^-0.5
  std::optional<double> rope_local_theta;       // rope base of sliding layers (rope_local_base_freq)
  // Soft-capping (gemma2, gemma3): attention scores to cap * tanh(score / cap) before the mask,
  // logits to cap * tanh(logit / cap).
  std::optional<double> attn_logit_softcapping, final_logit_softcapping;
  std::optional<RopeScaling> rope_scaling;
  int64_t rotary_dim = 0;          // leading values of each head that rotate (partial_rotary_factor)
  std::vector<bool> rope_layers;   // smollm3: false for a layer without rope; empty: every layer
  bool fused_projections = false;  // phi3: qkv_proj and gate_up_proj
  double embedding_multiplier = 1, residual_multiplier = 1, logits_scaling = 1;  // granite
  std::optional<double> attention_multiplier;  // granite: the attention scale (default 1/sqrt(head_dim))
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;
  std::string torch_dtype;
  std::string origin;  // the config.json it was read from, for errors
  // The checkpoint's names of the program's "model." tensors and of its lm_head.weight: other
  // than these in a multimodal checkpoint (FamilySpec::text_model; HfCheckpoint picks the layout).
  std::string model_prefix = "model.", lm_head_name = "lm_head.weight";

  // Throws Error naming the config field and value at fault.
  static HfConfig parse(const nlohmann::json& config, const std::string& origin);
};

struct WeightUse {
  std::string name;  // Hugging Face tensor name
  std::vector<int64_t> shape;
  // A program weight cut from a fused checkpoint tensor: rows [source_row, source_row + shape[0])
  // of `source`. Empty: the checkpoint tensor `name` itself.
  std::string source = {};
  int64_t source_row = 0;
  bool plus_one = false;  // a norm that scales by 1 + w: exported as float32 1 + w
};

// The tensor names of layer `layer`'s mixture of experts: its router, each expert's gate, up and
// down projections, and the shared expert's (with its gate) when it has one.
struct MoeLayerNames {
  std::string router;
  std::vector<std::array<std::string, 3>> experts;  // gate, up, down
  std::array<std::string, 3> shared;                // empty without a shared expert
  std::string shared_gate;
};
MoeLayerNames moe_layer_names(const MoeConfig& moe, int64_t layer);
// Those tensors with their shapes, router first.
std::vector<WeightUse> expert_tensors(const MoeConfig& moe, int64_t layer, int64_t hidden);

// Every tensor a checkpoint of this config holds, with the shape the config implies.
std::vector<WeightUse> expected_tensors(const HfConfig& config);

// Every weight a program of this config reads: the checkpoint tensors, with fused ones (phi3's
// qkv_proj, gate_up_proj) split into the q/k/v and gate/up projections of the other families,
// named as in a text-only checkpoint (`source` names a multimodal checkpoint's tensor).
std::vector<WeightUse> program_weights(const HfConfig& config);

}  // namespace hfstatic
