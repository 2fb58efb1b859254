#include "export/hf_config.h"

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
  if (rule == SlidingLayers::Refused) return {};
  if (!c.sliding_window) return std::vector<bool>(n, false);
  if (rule == SlidingLayers::Every) return std::vector<bool>(n, true);
  std::vector<bool> out(n, false);
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
  c.attention_bias = r.boolean("attention_bias", false);
  c.o_proj_bias = c.attention_bias && family.attention_bias == AttentionBias::FromConfig;
}

void check_activation(const ConfigReader& r, const FamilySpec& family) {
  for (const std::string& key : family.activation_keys) {
    if (r.has(key.c_str()) && r.j[key] != family.activation)
      fail(r.origin, ": config field '", key, "' = ", quote_json(r.j[key]),
           " is not supported (supported: ", family.activation, ")");
  }
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
  if (!read || (!r.has("sliding_window") && !family.window_default)) return std::nullopt;
  return r.integer("sliding_window", 1, kBig, family.window_default);
}

}  // namespace

HfConfig HfConfig::parse(const json& j, const std::string& origin) {
  if (!j.is_object()) fail(origin, ": config is not a JSON object");
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
  check_activation(r, family);
  check_refusals(r, family);
  c.hidden_act = family.activation;
  c.qk_norm = family.qk_norm;
  c.fused_projections = family.fused_projections;
  c.sandwich_norms = family.sandwich_norms;
  c.norm_plus_one = family.norm_plus_one;
  if (family.embeddings_scaled) c.embedding_scale = std::sqrt(double(c.hidden_size));
  c.sliding_window = read_window(r, family);
  if (family.parse) family.parse(r, c);
  c.sliding_layers = read_sliding_layers(j, r, c);
  parse_rope_config(j, c, origin);
  if (family.refuses_rope_scaling && c.rope_scaling)
    fail(origin, ": config field 'rope_scaling' type '", c.rope_scaling->type, "' is not supported for ", c.model_type,
         " (supported: none, default)");
  if (r.has("bos_token_id")) c.bos_token_id = r.integer("bos_token_id", 0, c.vocab_size - 1);
  if (j.contains("eos_token_id")) c.eos_token_ids = token_ids(j["eos_token_id"], "eos_token_id", origin);
  for (int64_t id : c.eos_token_ids)
    if (id < 0 || id >= c.vocab_size)
      fail(origin, ": config field 'eos_token_id' holds ", id, ", outside the vocabulary");
  return c;
}

std::vector<WeightUse> expected_tensors(const HfConfig& c) {
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
      add(p + "self_attn.q_norm.weight", {D});
      add(p + "self_attn.k_norm.weight", {D});
    }
    if (c.sandwich_norms) {
      add(p + "pre_feedforward_layernorm.weight", {E});
      add(p + "post_feedforward_layernorm.weight", {E});
    }
    add(p + "self_attn.o_proj.weight", {E, Q});
    if (c.o_proj_bias) add(p + "self_attn.o_proj.bias", {E});
    add(p + "post_attention_layernorm.weight", {E});
    if (c.fused_projections) {
      add(p + "mlp.gate_up_proj.weight", {2 * F, E});
    } else {
      add(p + "mlp.gate_proj.weight", {F, E});
      add(p + "mlp.up_proj.weight", {F, E});
    }
    add(p + "mlp.down_proj.weight", {E, F});
  }
  add("model.norm.weight", {E});
  if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab_size, E});
  if (c.norm_plus_one)
    for (WeightUse& w : out) w.plus_one = w.name.find("norm.weight") != std::string::npos;
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
      out.push_back({prefix + name + ".weight", {rows, E}, fused.name, row});
      row += rows;
    }
  };
  for (const WeightUse& w : expected_tensors(c)) {
    const std::string& n = w.name;
    const size_t at = n.rfind('.', n.size() - std::string(".weight").size() - 1);
    const std::string prefix = n.substr(0, at + 1), leaf = n.substr(at + 1);
    if (leaf == "qkv_proj.weight")
      split(w, prefix, {{"q_proj", Q}, {"k_proj", KV}, {"v_proj", KV}});
    else if (leaf == "gate_up_proj.weight")
      split(w, prefix, {{"gate_proj", F}, {"up_proj", F}});
    else
      out.push_back(w);
  }
  return out;
}

}  // namespace hfstatic
