#include "export/hf_config.h"

#include <algorithm>
#include <cmath>

#include "export/config_reader.h"
#include "export/family_config.h"
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

// Which layers use the sliding window, by Hugging Face's rule for the family: every layer of
// mistral; for qwen2/qwen3 an explicit layer_types, else layers >= max_window_layers.
std::vector<bool> read_sliding_layers(const json& j, const ConfigReader& r, const HfConfig& c) {
  const size_t n = size_t(c.num_hidden_layers);
  // phi3's and smollm3's windows are not read into layers: build_program refuses them when they
  // are shorter than max_context.
  if (c.model_type == "phi3" || c.model_type == "smollm3") return {};
  if (!c.sliding_window) return std::vector<bool>(n, false);
  if (c.model_type == "mistral") return std::vector<bool>(n, true);
  std::vector<bool> out(n, false);
  if (c.model_type == "gemma3_text" && !r.has("layer_types")) {  // every pattern-th layer is global
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

// gemma3_text: GeGLU, norms around attention and MLP that scale by 1 + w, q/k norms, scaled
// embeddings, its own attention scale, and sliding layers with their own rope base.
void read_gemma3(const json& j, const ConfigReader& r, HfConfig& c) {
  for (const char* key : {"hidden_activation", "hidden_act"}) {
    if (r.has(key) && j[key] != "gelu_pytorch_tanh")
      fail(r.origin, ": config field '", key, "' = ", quote_json(j[key]),
           " is not supported (supported: gelu_pytorch_tanh)");
  }
  for (const char* key : {"final_logit_softcapping", "attn_logit_softcapping"})
    if (r.has(key))
      fail(r.origin, ": config field '", key, "' = ", quote_json(j[key]), " is not supported (only null)");
  if (r.boolean("use_bidirectional_attention", false))
    fail(r.origin, ": config field 'use_bidirectional_attention' = true is not supported");
  c.hidden_act = "gelu_pytorch_tanh";
  c.qk_norm = true;
  c.sandwich_norms = true;
  c.norm_plus_one = true;
  c.embedding_scale = std::sqrt(double(c.hidden_size));
  c.query_pre_attn_scalar = r.number("query_pre_attn_scalar", 1e-6, 1e9, 256);
  c.rope_local_theta = r.number("rope_local_base_freq", 1, 1e12, 10000);
  c.sliding_window = r.integer("sliding_window", 1, int64_t(1) << 31, 4096);
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
  const std::vector<std::string> supported = {"llama", "mistral", "qwen2",   "qwen3",
                                              "phi3",  "smollm3", "granite", "gemma3_text"};
  if (std::find(supported.begin(), supported.end(), c.model_type) == supported.end())
    fail(origin, ": config field 'model_type' = '", c.model_type,
         "' is not supported (supported: llama, mistral, qwen2, qwen3, phi3, smollm3, granite, gemma3_text)");
  const bool gemma = c.model_type == "gemma3_text";
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
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", gemma);
  c.torch_dtype = r.has("torch_dtype") && j["torch_dtype"].is_string() ? j["torch_dtype"].get<std::string>() : "";

  if (c.model_type == "qwen2") {
    c.attention_bias = true;
  } else {
    c.attention_bias = r.boolean("attention_bias", false);
    c.o_proj_bias = c.attention_bias && c.model_type != "qwen3";
  }
  if (r.boolean("mlp_bias", false)) fail(origin, ": config field 'mlp_bias' = true is not supported");
  c.qk_norm = c.model_type == "qwen3";
  if (gemma) {
    read_gemma3(j, r, c);
  } else if (r.has("hidden_act")) {
    if (!j["hidden_act"].is_string() || j["hidden_act"].get<std::string>() != "silu")
      fail(origin, ": config field 'hidden_act' = ", quote_json(j["hidden_act"]),
           " is not supported (supported: silu)");
  }
  if (c.model_type == "mistral" && r.has("sliding_window")) {
    c.sliding_window = r.integer("sliding_window", 1, kBig);
  }
  if ((c.model_type == "qwen2" || c.model_type == "qwen3") && r.boolean("use_sliding_window", false)) {
    c.sliding_window = r.integer("sliding_window", 1, kBig, 4096);
  }
  parse_family_fields(j, c, origin);
  c.sliding_layers = read_sliding_layers(j, r, c);
  parse_rope_config(j, c, origin);
  // Its global layers would need the scaling and its local ones the plain local base.
  if (gemma && c.rope_scaling)
    fail(origin, ": config field 'rope_scaling' type '", c.rope_scaling->type,
         "' is not supported for gemma3_text (supported: none, default)");
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
