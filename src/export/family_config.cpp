#include "export/family_config.h"

#include "export/config_reader.h"

namespace hfstatic {

using nlohmann::json;

namespace {

constexpr int64_t kBig = int64_t(1) << 31;

void parse_phi3(const ConfigReader& r, HfConfig& c) {
  c.fused_projections = true;
  if (c.attention_bias) fail(r.origin, ": config field 'attention_bias' = true is not supported for phi3");
  if (r.boolean("lm_head_bias", false)) fail(r.origin, ": config field 'lm_head_bias' = true is not supported");
  // Every phi3 layer attends through the window (Phi-3-mini-4k: 2047); build_program refuses a
  // max_context beyond it.
  if (r.has("sliding_window")) c.sliding_window = r.integer("sliding_window", 1, kBig);
}

// no_rope_layers[l] = 1: layer l uses rope; 0: it does not. Absent: every
// no_rope_layer_interval-th layer goes without.
void parse_smollm3(const ConfigReader& r, HfConfig& c) {
  const int64_t layers = c.num_hidden_layers;
  if (r.has("no_rope_layers")) {
    const json& list = r.j["no_rope_layers"];
    if (!list.is_array() || int64_t(list.size()) < layers)
      fail(r.origin, ": config field 'no_rope_layers' must be a list of at least num_hidden_layers = ", layers,
           " values");
    for (int64_t l = 0; l < layers; ++l) {
      const json& v = list[size_t(l)];
      if (!v.is_number_integer() || (v.get<int64_t>() != 0 && v.get<int64_t>() != 1))
        fail(r.origin, ": config field 'no_rope_layers' holds ", quote_json(v), " at layer ", l, ", not 0 or 1");
      c.rope_layers.push_back(v.get<int64_t>() == 1);
    }
  } else {
    const int64_t interval = r.integer("no_rope_layer_interval", 1, kBig, 4);
    for (int64_t l = 0; l < layers; ++l) c.rope_layers.push_back((l + 1) % interval != 0);
  }
  // The window applies to the layers without rope only; build_program refuses it whenever it is
  // shorter than max_context.
  if (r.boolean("use_sliding_window", false) && r.has("sliding_window"))
    c.sliding_window = r.integer("sliding_window", 1, kBig);
}

void parse_granite(const ConfigReader& r, HfConfig& c) {
  c.embedding_multiplier = r.number("embedding_multiplier", -1e6, 1e6, 1);
  c.residual_multiplier = r.number("residual_multiplier", -1e6, 1e6, 1);
  c.attention_multiplier = r.number("attention_multiplier", 1e-9, 1e6, 1);  // Granite's default is 1
  c.logits_scaling = r.number("logits_scaling", 1e-9, 1e9, 1);
}

}  // namespace

void parse_family_fields(const json& j, HfConfig& c, const std::string& origin) {
  ConfigReader r{j, origin};
  if (c.model_type == "phi3") parse_phi3(r, c);
  if (c.model_type == "smollm3") parse_smollm3(r, c);
  if (c.model_type == "granite") parse_granite(r, c);
}

}  // namespace hfstatic
