// The supported Hugging Face model families as a table: one FamilySpec entry per model_type
// holds what config.json parsing, the graph builder and make-checkpoint need to know about it.
// Adding a family is adding an entry (src/export/README.md, "Adding a family").
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/dtype.h"

namespace hfstatic {

struct ConfigReader;
struct HfConfig;

// A make-checkpoint preset: a config.json from which random weights in the family's layout are made.
struct CheckpointPreset {
  std::string name;
  std::string description;
  std::string config_json;  // config.json as the real model ships it (shapes, rope, ties)
  DType dtype;              // default tensor dtype
  double init_std;          // std of the random projection weights
};

// Which q/k/v and o_proj biases a family's checkpoints hold.
enum class AttentionBias {
  FromConfig,         // attention_bias covers q/k/v and o_proj (llama)
  FromConfigQkvOnly,  // attention_bias covers q/k/v only (qwen3)
  AlwaysQkv,          // q/k/v always, o_proj never; attention_bias is not read (qwen2)
  QkvFromQkvBias,     // q/k/v unless qkv_bias is false (default true), o_proj never (qwen2_moe)
};

// When config.json's sliding_window is read; a family that does not read it has no window.
enum class WindowField {
  Ignored,
  Read,          // whenever present (or window_default when absent, if set)
  ReadWhenUsed,  // only with use_sliding_window: true
};

// Which layers attend through the window, by Hugging Face's rule for the family.
enum class SlidingLayers {
  Every,                // every layer (mistral)
  LayerTypesOrFromMax,  // layer_types, else the layers from max_window_layers on (qwen2, qwen3)
  LayerTypesOrPattern,  // layer_types, else all but every sliding_window_pattern-th (gemma3_text)
  LayerTypesOrEven,     // layer_types, else the even layers 0, 2, 4, ... (gemma2)
  LayerTypesOrNoRope,   // layer_types, else the layers without rope (smollm3's no_rope_layers)
};

// A config.json field whose value the exporter does not implement for the family.
struct Refusal {
  enum class When { NotNull, True };
  std::string key;
  When when;
  std::string detail = {};  // said after "is not supported": "(only null)", "for phi3"
};

// A multimodal checkpoint whose language model is exported alone (gemma3's
// Gemma3ForConditionalGeneration): config.json holds the language model's fields under
// text_config, its tensors sit under a prefix, and the other towers' tensors are skipped.
struct TextModelLayout {
  std::string text_model_type;  // the family of text_config ("gemma3_text")
  std::string text_defaults;    // JSON: the text config class's defaults, for the fields text_config omits
  // Where checkpoints hold the language model's "model." tensors and its lm_head.weight: the
  // first pair whose embedding a checkpoint holds (as transformers versions saved them).
  std::vector<std::pair<std::string, std::string>> layouts;
  std::vector<std::string> skipped_prefixes;  // the other towers' tensors, not exported
  std::string skipped_what;                   // what they are, as the export summary says it
  // make-checkpoint: some of the other towers' tensors (name, shape) for a config.json, so that
  // its checkpoints hold what export skips.
  std::vector<std::pair<std::string, std::vector<int64_t>>> (*other_tensors)(const nlohmann::json& config) = nullptr;
};

// Where a family's mixture-of-experts layers keep their router and experts (HfConfig::moe).
enum class ExpertLayout {
  None,         // a dense MLP on every layer
  BlockSparse,  // mixtral: block_sparse_moe.gate, block_sparse_moe.experts.J.w1 (gate), w3 (up), w2 (down)
  MlpExperts,   // qwen2_moe, qwen3_moe, olmoe: mlp.gate, mlp.experts.J.{gate,up,down}_proj
};

// The tokenizer make-checkpoint writes for the family's presets.
enum class PresetTokenizer {
  ChatMl,  // <|endoftext|> <|im_start|> <|im_end|> after the 256 bytes
  Gemma,   // Gemma's special ids (pad 0, eos 1, bos 2, ...) before the bytes, bos prepended
};

struct FamilySpec {
  std::string model_type = {};
  std::vector<std::string> architectures = {};  // config.json's "architectures" of its checkpoints

  // config.json fields beyond those every family reads (shapes, rope, eps, token ids).
  AttentionBias attention_bias = AttentionBias::FromConfig;
  std::string activation = "silu";                            // the hidden activation when no field names one
  std::vector<std::string> other_activations = {};            // also accepted ("gelu": the exact GELU)
  std::vector<std::string> activation_keys = {"hidden_act"};  // fields naming it; the first one present is used
  bool tied_by_default = false;                               // tie_word_embeddings when absent
  WindowField window = WindowField::Ignored;
  std::optional<int64_t> window_default = std::nullopt;  // sliding_window when the field is read but absent
  SlidingLayers sliding_layers = SlidingLayers::Every;
  // The top-level original_max_position_embeddings when absent, for longrope (Phi3Config: 4096).
  std::optional<int64_t> longrope_original_default = std::nullopt;
  bool legacy_yarn_is_longrope = false;  // rope_scaling type "yarn" means longrope (Phi3Config's old configs)
  std::vector<Refusal> refusals = {};
  // Reads the family's own fields once the shared ones are set; throws Error naming the field.
  void (*parse)(const ConfigReader& reader, HfConfig& config) = nullptr;

  // Graph flags (copied into HfConfig, read by expected_tensors and build_program).
  bool qk_norm = false;                       // per-head RMSNorm of q and k before rope
  bool qk_norm_whole = false;                 // with qk_norm: over the whole q and k projections (olmoe)
  ExpertLayout experts = ExpertLayout::None;  // the parse hook fills HfConfig::moe
  bool fused_projections = false;             // qkv_proj (rows q, k, v) and gate_up_proj (rows gate, up)
  bool sandwich_norms = false;                // norms after attention and MLP too (pre/post_feedforward_layernorm)
  bool norm_plus_one = false;                 // RMSNorm weights scale by (1 + w)
  bool embeddings_scaled = false;             // embeddings multiplied by sqrt(hidden_size)

  // The language model of a multimodal checkpoint: parsed as the text_model_type entry, whose
  // fields above then apply (this entry's own are not read).
  std::optional<TextModelLayout> text_model = std::nullopt;

  PresetTokenizer preset_tokenizer = PresetTokenizer::ChatMl;
  // tiny-* presets for the tests first, then real model shapes. Tiny ones have a few layers and a
  // small vocabulary; their larger init std makes the next-token distribution peaked, so greedy
  // decoding is not decided by rounding noise.
  std::vector<CheckpointPreset> presets = {};
};

// Every supported family, in the order the supported list names them.
const std::vector<FamilySpec>& families();

// The entry of a model_type, or nullptr.
const FamilySpec* find_family(std::string_view model_type);

// "llama, mistral, ...": the supported model_types as errors list them.
std::string supported_families();

}  // namespace hfstatic
