#include "export/hf_config.h"

#include <algorithm>
#include <cmath>

#include "export/config_reader.h"
#include "export/rope_config.h"
#include "util/error.h"

namespace hfstatic {

using nlohmann::json;

namespace {

std::vector<int64_t> token_ids(const json& v, const char* key, const std::string& origin) {
  std::vector<int64_t> out;
  if (v.is_null()) return out;
  if (v.is_number_integer()) return {v.get<int64_t>()};
  if (!v.is_array())
    fail(origin, ": config field '", key, "' = ", quote_json(v), " is not a token id or a list of them");
  for (const auto& e : v) {
    if (!e.is_number_integer()) fail(origin, ": config field '", key, "' holds ", quote_json(e), ", not a token id");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

// Which layers use the sliding window, by the family's rule (SlidingLayers).
std::vector<bool> read_sliding_layers(const json& j, const ConfigReader& r, const HfConfig& c) {
  const size_t n = size_t(c.num_hidden_layers);
  const SlidingLayers rule = c.family->sliding_layers;
  // Without a window the layer types still choose Gemma 3's rope base.
  if (!c.sliding_window && !c.rope_local_theta) return std::vector<bool>(n, false);
  if (rule == SlidingLayers::Every) return std::vector<bool>(n, true);
  std::vector<bool> out(n, false);
  if (rule == SlidingLayers::LayerTypesOrEven && !r.has("layer_types")) {
    for (size_t l = 0; l < n; ++l) out[l] = l % 2 == 0;
    return out;
  }
  if (rule == SlidingLayers::LayerTypesOrNoRope && !r.has("layer_types")) {
    for (size_t l = 0; l < n; ++l) out[l] = !c.rope_layers.empty() && !c.rope_layers[l];
    return out;
  }
  if (rule == SlidingLayers::LayerTypesOrPattern && !r.has("layer_types")) {  // every pattern-th layer is global
    const char* key = r.has("sliding_window_pattern") ? "sliding_window_pattern" : "_sliding_window_pattern";
    const int64_t pattern = r.integer(key, 1, 1 << 20, 6);
    for (size_t l = 0; l < n; ++l) out[l] = (int64_t(l) + 1) % pattern != 0;
    return out;
  }
  if (r.has("layer_types")) {
    const json& types = j["layer_types"];
    if (!types.is_array() || types.size() != n)
      fail(r.origin, ": config field 'layer_types' = ", quote_json(types), " is not a list of ", n, " layer types");
    for (size_t l = 0; l < n; ++l) {
      const json& t = types[l];
      if (!t.is_string() || (t != "sliding_attention" && t != "full_attention"))
        fail(r.origin, ": config field 'layer_types' holds ", quote_json(t),
             ", not \"sliding_attention\" or \"full_attention\"");
      out[l] = t == "sliding_attention";
    }
    return out;
  }
  const int64_t first = r.integer("max_window_layers", 0, 1 << 20, 28);
  for (size_t l = 0; l < n; ++l) out[l] = int64_t(l) >= first;
  return out;
}

void read_attention_bias(const ConfigReader& r, const FamilySpec& family, HfConfig& c) {
  if (family.attention_bias == AttentionBias::AlwaysQkv) {
    c.attention_bias = true;
    return;
  }
  if (family.attention_bias == AttentionBias::QkvFromQkvBias) {
    c.attention_bias = r.boolean("qkv_bias", true);
    return;
  }
  c.attention_bias = r.boolean("attention_bias", false);
  c.o_proj_bias = c.attention_bias && family.attention_bias == AttentionBias::FromConfig;
}

// The hidden activation: the first of the family's activation fields present (each present one
// must name an activation it implements), else its default.
std::string read_activation(const ConfigReader& r, const FamilySpec& family) {
  std::string supported = family.activation, out;
  for (const std::string& a : family.other_activations) supported += ", " + a;
  for (const std::string& key : family.activation_keys) {
    if (!r.has(key.c_str())) continue;
    const json& v = r.j[key];
    const bool known =
        v == family.activation || std::find(family.other_activations.begin(), family.other_activations.end(), v) !=
                                      family.other_activations.end();
    if (!known)
      fail(r.origin, ": config field '", key, "' = ", quote_json(v), " is not supported (supported: ", supported, ")");
    if (out.empty()) out = v.get<std::string>();
  }
  return out.empty() ? family.activation : out;
}

void check_refusals(const ConfigReader& r, const FamilySpec& family) {
  for (const Refusal& refusal : family.refusals) {
    const char* key = refusal.key.c_str();
    const std::string detail = refusal.detail.empty() ? "" : " " + refusal.detail;
    if (refusal.when == Refusal::When::NotNull && r.has(key))
      fail(r.origin, ": config field '", key, "' = ", quote_json(r.j[key]), " is not supported", detail);
    if (refusal.when == Refusal::When::True && r.boolean(key, false))
      fail(r.origin, ": config field '", key, "' = true is not supported", detail);
  }
}

std::optional<int64_t> read_window(const ConfigReader& r, const FamilySpec& family) {
  constexpr int64_t kBig = int64_t(1) << 31;
  const bool read = family.window == WindowField::Read ||
                    (family.window == WindowField::ReadWhenUsed && r.boolean("use_sliding_window", false));
  // An explicit null is transformers' None: no window, whatever the family's default.
  if (!read || (r.j.contains("sliding_window") && r.j["sliding_window"].is_null())) return std::nullopt;
  if (!r.has("sliding_window") && !family.window_default) return std::nullopt;
  return r.integer("sliding_window", 1, kBig, family.window_default);
}

// A multimodal checkpoint's language model (FamilySpec::text_model): text_config over the text
// config class's defaults, with the top level's token ids and dtype, parsed as its own family.
HfConfig parse_text_model(const json& j, const FamilySpec& family, const std::string& origin) {
  const TextModelLayout& layout = *family.text_model;
  json text = json::parse(layout.text_defaults);
  if (j.contains("text_config") && !j["text_config"].is_null()) {
    if (!j["text_config"].is_object())
      fail(origin, ": config field 'text_config' = ", quote_json(j["text_config"]), " is not an object");
    // A transformers 5 text_config carries its rotary settings in rope_parameters alone.
    if (j["text_config"].contains("rope_parameters"))
      for (const char* key : {"rope_theta", "rope_scaling", "rope_local_base_freq", "partial_rotary_factor"})
        text.erase(key);
    for (const auto& [key, value] : j["text_config"].items()) text[key] = value;
  }
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype"})
    if (j.contains(key) && !j[key].is_null()) text[key] = j[key];
  text["model_type"] = layout.text_model_type;
  HfConfig c = HfConfig::parse(text, origin + " (text_config)");
  c.model_type = family.model_type;
  c.family = &family;
  c.model_prefix = layout.layouts.at(0).first;
  c.lm_head_name = layout.layouts.at(0).second;
  return c;
}

}  // namespace

HfConfig HfConfig::parse(const json& config_json, const std::string& origin) {
  if (!config_json.is_object()) fail(origin, ": config is not a JSON object");
  const json j = with_version4_rope_fields(config_json, origin);
  ConfigReader r{j, origin};
  HfConfig c;
  c.origin = origin;
  if (!r.has("model_type") || !j["model_type"].is_string())
    fail(origin, ": config field 'model_type' is missing or not a string");
  c.model_type = j["model_type"].get<std::string>();
  c.family = find_family(c.model_type);
  if (!c.family)
    fail(origin, ": config field 'model_type' = '", c.model_type,
         "' is not supported (supported: ", supported_families(), ")");
  const FamilySpec& family = *c.family;
  if (family.text_model) return parse_text_model(j, family, origin);
  constexpr int64_t kBig = int64_t(1) << 31;
  c.hidden_size = r.integer("hidden_size", 1, kBig);
  c.intermediate_size = r.integer("intermediate_size", 1, kBig);
  c.num_hidden_layers = r.integer("num_hidden_layers", 1, 4096);
  c.num_attention_heads = r.integer("num_attention_heads", 1, 4096);
  c.num_key_value_heads = r.integer("num_key_value_heads", 1, 4096, c.num_attention_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    fail(origin, ": config field 'num_key_value_heads' = ", c.num_key_value_heads,
         " does not divide num_attention_heads = ", c.num_attention_heads);
  if (!r.has("head_dim") && c.hidden_size % c.num_attention_heads != 0)
    fail(origin, ": config field 'hidden_size' = ", c.hidden_size,
         " is not a multiple of num_attention_heads = ", c.num_attention_heads);
  c.head_dim = r.integer("head_dim", 2, 65536, c.hidden_size / c.num_attention_heads);
  if (c.head_dim % 2 != 0)
    fail(origin, ": config field 'head_dim' = ", c.head_dim, " is odd; rotary embedding needs an even head_dim");
  c.vocab_size = r.integer("vocab_size", 1, kBig);
  c.max_position_embeddings = r.integer("max_position_embeddings", 2, kBig, 2048);
  c.rms_norm_eps = r.number("rms_norm_eps", 0, 1, 1e-6);
  c.rope_theta = r.number("rope_theta", 1, 1e12, 10000);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", family.tied_by_default);
  c.torch_dtype = r.has("torch_dtype") && j["torch_dtype"].is_string() ? j["torch_dtype"].get<std::string>() : "";

  read_attention_bias(r, family, c);
  if (r.boolean("mlp_bias", false)) fail(origin, ": config field 'mlp_bias' = true is not supported");
  c.hidden_act = read_activation(r, family);
  check_refusals(r, family);
  c.qk_norm = family.qk_norm;
  c.qk_norm_whole = family.qk_norm_whole;
  c.fused_projections = family.fused_projections;
  c.sandwich_norms = family.sandwich_norms;
  c.norm_plus_one = family.norm_plus_one;
  if (family.embeddings_scaled) c.embedding_scale = std::sqrt(double(c.hidden_size));
  c.sliding_window = read_window(r, family);
  if (family.parse) family.parse(r, c);
  if (r.has("rope_local_base_freq") && !c.rope_local_theta &&
      r.number("rope_local_base_freq", 1, 1e12, c.rope_theta) != c.rope_theta)
    fail(origin, ": config field 'rope_local_base_freq' (rope_parameters.sliding_attention.rope_theta) = ",
         quote_json(j["rope_local_base_freq"]), " differs from rope_theta = ", c.rope_theta, "; model_type '",
         c.model_type, "' rotates every layer with one base");
  c.sliding_layers = read_sliding_layers(j, r, c);
  parse_rope_config(j, c, origin);
  if (r.has("bos_token_id")) c.bos_token_id = r.integer("bos_token_id", 0, c.vocab_size - 1);
  if (j.contains("eos_token_id")) c.eos_token_ids = token_ids(j["eos_token_id"], "eos_token_id", origin);
  for (int64_t id : c.eos_token_ids)
    if (id < 0 || id >= c.vocab_size)
      fail(origin, ": config field 'eos_token_id' holds ", id, ", outside the vocabulary");
  return c;
}

MoeLayerNames moe_layer_names(const MoeConfig& moe, int64_t layer) {
  const std::string p = cat("model.layers.", layer, ".");
  MoeLayerNames n;
  const bool block_sparse = moe.layout == ExpertLayout::BlockSparse;
  const std::string block = p + (block_sparse ? "block_sparse_moe." : "mlp.");
  n.router = block + "gate.weight";
  for (int64_t e = 0; e < moe.experts; ++e) {
    const std::string x = cat(block, "experts.", e, ".");
    n.experts.push_back(block_sparse
                            ? std::array{x + "w1.weight", x + "w3.weight", x + "w2.weight"}
                            : std::array{x + "gate_proj.weight", x + "up_proj.weight", x + "down_proj.weight"});
  }
  if (moe.shared_expert_size > 0) {
    const std::string x = block + "shared_expert.";
    n.shared = {x + "gate_proj.weight", x + "up_proj.weight", x + "down_proj.weight"};
    n.shared_gate = block + "shared_expert_gate.weight";
  }
  return n;
}

std::vector<WeightUse> expert_tensors(const MoeConfig& moe, int64_t layer, int64_t hidden) {
  const MoeLayerNames n = moe_layer_names(moe, layer);
  const int64_t E = hidden, F = moe.expert_size, S = moe.shared_expert_size;
  std::vector<WeightUse> out = {{n.router, {moe.experts, E}}};
  for (const auto& [gate, up, down] : n.experts) {
    out.push_back({gate, {F, E}});
    out.push_back({up, {F, E}});
    out.push_back({down, {E, F}});
  }
  if (S > 0) {
    out.push_back({n.shared[0], {S, E}});
    out.push_back({n.shared[1], {S, E}});
    out.push_back({n.shared[2], {E, S}});
    out.push_back({n.shared_gate, {1, E}});
  }
  return out;
}

// Every tensor of the config as a text-only checkpoint names it.
static std::vector<WeightUse> model_tensors(const HfConfig& c) {
  std::vector<WeightUse> out;
  const int64_t E = c.hidden_size, D = c.head_dim, Q = c.num_attention_heads * D, KV = c.num_key_value_heads * D;
  const int64_t F = c.intermediate_size;
  auto add = [&](const std::string& n, std::vector<int64_t> s) { out.push_back({n, std::move(s)}); };
  add("model.embed_tokens.weight", {c.vocab_size, E});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {E});
    if (c.fused_projections) {
      add(p + "self_attn.qkv_proj.weight", {Q + 2 * KV, E});
    } else {
      add(p + "self_attn.q_proj.weight", {Q, E});
      add(p + "self_attn.k_proj.weight", {KV, E});
      add(p + "self_attn.v_proj.weight", {KV, E});
    }
    if (c.attention_bias) {
      add(p + "self_attn.q_proj.bias", {Q});
      add(p + "self_attn.k_proj.bias", {KV});
      add(p + "self_attn.v_proj.bias", {KV});
    }
    if (c.qk_norm) {
      add(p + "self_attn.q_norm.weight", {c.qk_norm_whole ? Q : D});
      add(p + "self_attn.k_norm.weight", {c.qk_norm_whole ? KV : D});
    }
    if (c.sandwich_norms) {
      add(p + "pre_feedforward_layernorm.weight", {E});
      add(p + "post_feedforward_layernorm.weight", {E});
    }
    add(p + "self_attn.o_proj.weight", {E, Q});
    if (c.o_proj_bias) add(p + "self_attn.o_proj.bias", {E});
    add(p + "post_attention_layernorm.weight", {E});
    if (c.moe && c.moe->layers[size_t(l)]) {
      for (const WeightUse& w : expert_tensors(*c.moe, l, E)) out.push_back(w);
    } else if (c.fused_projections) {
      add(p + "mlp.gate_up_proj.weight", {2 * F, E});
      add(p + "mlp.down_proj.weight", {E, F});
    } else {
      add(p + "mlp.gate_proj.weight", {F, E});
      add(p + "mlp.up_proj.weight", {F, E});
      add(p + "mlp.down_proj.weight", {E, F});
    }
  }
  add("model.norm.weight", {E});
  if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab_size, E});
  if (c.norm_plus_one)
    for (WeightUse& w : out) w.plus_one = w.name.find("norm.weight") != std::string::npos;
  return out;
}

// A tensor's name in the checkpoint: under the language model's prefix in a multimodal one.
static std::string checkpoint_name(const HfConfig& c, const std::string& name) {
  if (name == "lm_head.weight") return c.lm_head_name;
  if (name.rfind("model.", 0) == 0) return c.model_prefix + name.substr(6);
  return name;
}

std::vector<WeightUse> expected_tensors(const HfConfig& c) {
  std::vector<WeightUse> out = model_tensors(c);
  for (WeightUse& w : out) w.name = checkpoint_name(c, w.name);
  return out;
}

std::vector<WeightUse> program_weights(const HfConfig& c) {
  std::vector<WeightUse> out;
  const int64_t E = c.hidden_size, Q = c.num_attention_heads * c.head_dim, KV = c.num_key_value_heads * c.head_dim;
  const int64_t F = c.intermediate_size;
  auto split = [&](const WeightUse& fused, const std::string& prefix,
                   std::vector<std::pair<const char*, int64_t>> parts) {
    int64_t row = 0;
    for (const auto& [name, rows] : parts) {
      out.push_back({prefix + name + ".weight", {rows, E}, checkpoint_name(c, fused.name), row});
      row += rows;
    }
  };
  for (const WeightUse& w : model_tensors(c)) {
    const std::string& n = w.name;
    const size_t at = n.rfind('.', n.size() - std::string(".weight").size() - 1);
    const std::string prefix = n.substr(0, at + 1), leaf = n.substr(at + 1);
    if (leaf == "qkv_proj.weight")
      split(w, prefix, {{"q_proj", Q}, {"k_proj", KV}, {"v_proj", KV}});
    else if (leaf == "gate_up_proj.weight")
      split(w, prefix, {{"gate_proj", F}, {"up_proj", F}});
    else if (checkpoint_name(c, n) != n)
      out.push_back({n, w.shape, checkpoint_name(c, n), 0, w.plus_one});
    else
      out.push_back(w);
  }
  return out;
}

}  // namespace hfstatic
