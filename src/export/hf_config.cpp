#include "export/hf_config.h"

#include <algorithm>

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
  if (!v.is_array()) fail(origin, ": config field '", key, "' = ", v.dump(), " is not a token id or a list of them");
  for (const auto& e : v) {
    if (!e.is_number_integer()) fail(origin, ": config field '", key, "' holds ", e.dump(), ", not a token id");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

}  // namespace

HfConfig HfConfig::parse(const json& j, const std::string& origin) {
  if (!j.is_object()) fail(origin, ": config is not a JSON object");
  ConfigReader r{j, origin};
  HfConfig c;
  if (!r.has("model_type") || !j["model_type"].is_string())
    fail(origin, ": config field 'model_type' is missing or not a string");
  c.model_type = j["model_type"].get<std::string>();
  const std::vector<std::string> supported = {"llama", "mistral", "qwen2", "qwen3", "phi3", "smollm3", "granite"};
  if (std::find(supported.begin(), supported.end(), c.model_type) == supported.end())
    fail(origin, ": config field 'model_type' = '", c.model_type,
         "' is not supported (supported: llama, mistral, qwen2, qwen3, phi3, smollm3, granite)");
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
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  c.torch_dtype = r.has("torch_dtype") && j["torch_dtype"].is_string() ? j["torch_dtype"].get<std::string>() : "";

  if (c.model_type == "qwen2") {
    c.attention_bias = true;
  } else {
    c.attention_bias = r.boolean("attention_bias", false);
    c.o_proj_bias = c.attention_bias && c.model_type != "qwen3";
  }
  if (r.boolean("mlp_bias", false)) fail(origin, ": config field 'mlp_bias' = true is not supported");
  c.qk_norm = c.model_type == "qwen3";
  if (r.has("hidden_act")) {
    if (!j["hidden_act"].is_string() || j["hidden_act"].get<std::string>() != "silu")
      fail(origin, ": config field 'hidden_act' = ", j["hidden_act"].dump(), " is not supported (supported: silu)");
  }
  if (c.model_type == "mistral" && r.has("sliding_window")) {
    c.sliding_window = r.integer("sliding_window", 1, kBig);
  }
  if ((c.model_type == "qwen2" || c.model_type == "qwen3") && r.boolean("use_sliding_window", false)) {
    c.sliding_window = r.integer("sliding_window", 1, kBig, 4096);
  }
  parse_family_fields(j, c, origin);
  parse_rope_config(j, c, origin);
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
