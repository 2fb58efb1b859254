// The supported Hugging Face model families as a table: one FamilySpec entry per model_type
// holds what config.json parsing, the graph builder and make-checkpoint need to know about it.
// Adding a family is adding an entry (src/export/README.md, "Adding a family").
#pragma once
#include <cstdint>
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
  // None: the window is kept in HfConfig::sliding_window only, and build_program refuses one
  // shorter than max_context (phi3, smollm3).
  Refused,
};

// A config.json field whose value the exporter does not implement for the family.
struct Refusal {
  enum class When { NotNull, True };
  std::string key;
  When when;
  std::string detail = {};  // said after "is not supported": "(only null)", "for phi3"
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
  std::string activation = "silu";                            // the one hidden activation accepted
  std::vector<std::string> activation_keys = {"hidden_act"};  // fields that must name it when present
  bool tied_by_default = false;                               // tie_word_embeddings when absent
  WindowField window = WindowField::Ignored;
  std::optional<int64_t> window_default = std::nullopt;  // sliding_window when the field is read but absent
  SlidingLayers sliding_layers = SlidingLayers::Every;
  // The top-level original_max_position_embeddings when absent, for longrope (Phi3Config: 4096).
  std::optional<int64_t> longrope_original_default = std::nullopt;
  bool refuses_rope_scaling = false;  // any rope_scaling type other than default
  std::vector<Refusal> refusals = {};
  // Reads the family's own fields once the shared ones are set; throws Error naming the field.
  void (*parse)(const ConfigReader& reader, HfConfig& config) = nullptr;

  // Graph flags (copied into HfConfig, read by expected_tensors and build_program).
  bool qk_norm = false;            // per-head RMSNorm of q and k before rope
  bool fused_projections = false;  // qkv_proj (rows q, k, v) and gate_up_proj (rows gate, up)
  bool sandwich_norms = false;     // norms after attention and MLP too (pre/post_feedforward_layernorm)
  bool norm_plus_one = false;      // RMSNorm weights scale by (1 + w)
  bool embeddings_scaled = false;  // embeddings multiplied by sqrt(hidden_size)

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
