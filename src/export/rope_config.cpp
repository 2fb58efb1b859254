#include "export/rope_config.h"

#include <algorithm>
#include <cmath>

#include "export/config_reader.h"

namespace hfstatic {

using nlohmann::json;

namespace {

constexpr double kPi = 3.14159265358979323846;

// The type of a rope_scaling (or rope_parameters, the object's name in `field`) object.
std::string scaling_type(const json& s, const std::string& field, const std::string& origin) {
  for (const char* key : {"rope_type", "type"})
    if (s.contains(key) && !s[key].is_string())
      fail(origin, ": config field '", field, ".", key, "' = ", quote_json(s[key]), " is not a string");
  if (s.contains("rope_type") && s["rope_type"].is_string()) return s["rope_type"].get<std::string>();
  if (s.contains("type") && s["type"].is_string()) return s["type"].get<std::string>();
  return "";
}

// config[key] = value, unless config already holds another value there.
void take_field(json& config, const char* key, const json& value, const std::string& from, const std::string& origin) {
  if (config.contains(key) && !config[key].is_null() && config[key] != value)
    fail(origin, ": config field '", key, "' = ", quote_json(config[key]), " disagrees with '", from,
         "' = ", quote_json(value));
  config[key] = value;
}

RopeScaling parse_scaling(const json& s, const std::string& field, const std::string& type, const json& j,
                          const HfConfig& c, const std::string& origin) {
  constexpr int64_t kBig = int64_t(1) << 31;
  ConfigReader sr{s, origin, field + "."};
  ConfigReader top{j, origin};
  RopeScaling rs;
  rs.type = type;
  if (type == "llama3") {
    rs.factor = sr.number("factor", 1e-6, 1e6, 8);
    rs.low_freq_factor = sr.number("low_freq_factor", 1e-6, 1e6, 1);
    rs.high_freq_factor = sr.number("high_freq_factor", 1e-6, 1e6, 4);
    rs.original_max_position_embeddings = double(sr.integer("original_max_position_embeddings", 1, kBig, 8192));
    if (!(rs.high_freq_factor > rs.low_freq_factor))
      fail(origin, ": config field '", field, "' needs high_freq_factor > low_freq_factor");
  } else if (type == "linear" || type == "dynamic" || type == "yarn") {
    rs.factor = sr.required_number("factor", 1e-6, 1e6);
    // dynamic: Hugging Face grows the base beyond max_position_embeddings (and ignores this field).
    rs.original_max_position_embeddings =
        double(sr.integer("original_max_position_embeddings", 1, kBig, c.max_position_embeddings));
    if (type == "yarn") {
      rs.attention_factor = sr.optional_number("attention_factor", 1e-6, 1e6);
      rs.mscale = sr.optional_number("mscale", -1e6, 1e6);
      rs.mscale_all_dim = sr.optional_number("mscale_all_dim", -1e6, 1e6);
      // Hugging Face takes 0 (or null) as the default too.
      rs.beta_fast = sr.number("beta_fast", 0, 1e6, 32);
      rs.beta_slow = sr.number("beta_slow", 0, 1e6, 1);
      if (rs.beta_fast == 0) rs.beta_fast = 32;
      if (rs.beta_slow == 0) rs.beta_slow = 1;
      rs.truncate = sr.boolean("truncate", true);
    }
  } else if (type == "longrope" || type == "su") {
    rs.type = "longrope";
    const size_t n = size_t(c.rotary_dim / 2);
    rs.short_factor = sr.numbers("short_factor", n, 1e-6, 1e6);
    rs.long_factor = sr.numbers("long_factor", n, 1e-6, 1e6);
    rs.attention_factor = sr.optional_number("attention_factor", 1e-6, 1e6);
    // Phi-3's original length is a top-level field (Phi3Config defaults it to 4096); the
    // attention factor then follows max_position_embeddings / original.
    const std::optional<int64_t> original_default = c.family->longrope_original_default;
    if (top.has("original_max_position_embeddings") || original_default) {
      rs.original_max_position_embeddings =
          double(top.integer("original_max_position_embeddings", 1, kBig, original_default));
      rs.factor = double(c.max_position_embeddings) / rs.original_max_position_embeddings;
    } else {
      rs.original_max_position_embeddings = double(c.max_position_embeddings);
      rs.factor = sr.number("factor", 1e-6, 1e6, 1);
    }
  } else {
    fail(origin, ": config field '", field, "' type '", type,
         "' is not supported (supported: linear, dynamic, yarn, longrope, llama3)");
  }
  return rs;
}

std::vector<double> plain_inv_freq(int64_t dim, double theta) {
  std::vector<double> inv(size_t(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) inv[size_t(i)] = 1.0 / std::pow(theta, double(2 * i) / double(dim));
  return inv;
}

double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

// YaRN: frequencies blended between interpolated (/ factor) and original by a linear ramp over
// the dimensions between the beta_fast and beta_slow rotation counts.
std::vector<double> yarn_inv_freq(const RopeScaling& s, int64_t dim, double theta) {
  auto correction_dim = [&](double rotations) {
    return double(dim) * std::log(s.original_max_position_embeddings / (rotations * 2 * kPi)) / (2 * std::log(theta));
  };
  double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
  if (s.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, double(dim - 1));
  if (low == high) high += 0.001;
  std::vector<double> inv = plain_inv_freq(dim, theta);
  for (size_t i = 0; i < inv.size(); ++i) {
    double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
    double extrapolation = 1 - ramp;
    inv[i] = inv[i] / s.factor * (1 - extrapolation) + inv[i] * extrapolation;
  }
  return inv;
}

double yarn_attention_factor(const RopeScaling& s) {
  if (s.attention_factor) return *s.attention_factor;
  if (s.mscale && s.mscale_all_dim && *s.mscale != 0 && *s.mscale_all_dim != 0)
    return yarn_mscale(s.factor, *s.mscale) / yarn_mscale(s.factor, *s.mscale_all_dim);
  return yarn_mscale(s.factor, 1);
}

double longrope_attention_factor(const RopeScaling& s) {
  if (s.attention_factor) return *s.attention_factor;
  if (s.factor <= 1) return 1;
  return std::sqrt(1 + std::log(s.factor) / std::log(s.original_max_position_embeddings));
}

// The rope_parameters object of the full attention layers and its name: the whole object, or its
// "full_attention" entry when it holds one object per layer type. Null without rope_parameters.
const json* global_rope_parameters(const json& j, std::string& name, const std::string& origin) {
  if (!j.contains("rope_parameters") || j["rope_parameters"].is_null()) return nullptr;
  const json& rp = j["rope_parameters"];
  if (!rp.is_object()) fail(origin, ": config field 'rope_parameters' = ", quote_json(rp), " is not an object");
  bool per_layer_type = !rp.empty();
  for (const auto& [key, value] : rp.items())
    per_layer_type = per_layer_type && (key == "full_attention" || key == "sliding_attention") && value.is_object();
  name = "rope_parameters";
  if (!per_layer_type) return &rp;
  if (!rp.contains("full_attention")) fail(origin, ": config field 'rope_parameters' has no 'full_attention' entry");
  name = "rope_parameters.full_attention";
  return &rp["full_attention"];
}

}  // namespace

json with_version4_rope_fields(const json& j, const std::string& origin) {
  std::string name;
  const json* global = global_rope_parameters(j, name, origin);
  if (!global) return j;
  json out = j;
  for (const char* key : {"rope_theta", "partial_rotary_factor"})
    if (global->contains(key) && !(*global)[key].is_null())
      take_field(out, key, (*global)[key], name + "." + key, origin);
  const json& rp = j["rope_parameters"];
  if (name != "rope_parameters" && rp.contains("sliding_attention")) {
    const json& local = rp["sliding_attention"];
    const std::string type = scaling_type(local, "rope_parameters.sliding_attention", origin);
    if (!type.empty() && type != "default")
      fail(origin, ": config field 'rope_parameters.sliding_attention.rope_type' = '", type,
           "' is not supported (sliding layers take the plain rotary embedding)");
    if (local.contains("rope_theta") && !local["rope_theta"].is_null())
      take_field(out, "rope_local_base_freq", local["rope_theta"], "rope_parameters.sliding_attention.rope_theta",
                 origin);
    if (local.value("partial_rotary_factor", json()) != global->value("partial_rotary_factor", json()))
      fail(origin, ": config field 'rope_parameters.sliding_attention.partial_rotary_factor' differs from the ",
           "full attention layers'; one rotary width for every layer is supported");
  }
  return out;
}

void parse_rope_config(const json& j, HfConfig& c, const std::string& origin) {
  ConfigReader r{j, origin};
  const double partial = r.number("partial_rotary_factor", 1e-6, 1, 1);
  c.rotary_dim = int64_t(double(c.head_dim) * partial);
  if (c.rotary_dim < 2 || c.rotary_dim % 2 != 0)
    fail(origin, ": config field 'partial_rotary_factor' = ", partial, " gives ", c.rotary_dim,
         " rotary dimensions of head_dim ", c.head_dim, "; an even number of at least 2 is needed");
  // transformers 5's rope_parameters holds the scaling (as it reads them, rope_scaling wins).
  std::string field = "rope_scaling";
  const json* s = r.has("rope_scaling") ? &j["rope_scaling"] : global_rope_parameters(j, field, origin);
  if (!s) return;
  if (!s->is_object()) fail(origin, ": config field '", field, "' = ", quote_json(*s), " is not an object");
  std::string type = scaling_type(*s, field, origin);
  if (type.empty() || type == "default") return;  // same as no scaling
  // Phi3Config renames an old config's "yarn" to longrope.
  if (type == "yarn" && c.family->legacy_yarn_is_longrope) type = "longrope";
  c.rope_scaling = parse_scaling(*s, field, type, j, c, origin);
}

json rope_attributes(const HfConfig& c, int64_t max_context) {
  json attrs = {{"head_dim", c.head_dim}, {"theta", c.rope_theta}};
  if (c.rotary_dim != c.head_dim) attrs["rotary_dim"] = c.rotary_dim;
  if (!c.rope_scaling) return attrs;
  const RopeScaling& s = *c.rope_scaling;
  const int64_t dim = c.rotary_dim;
  std::vector<double> inv;
  double attention_factor = 1;
  if (s.type == "llama3") {
    attrs["scaling"] = {{"type", s.type},
                        {"factor", s.factor},
                        {"low_freq_factor", s.low_freq_factor},
                        {"high_freq_factor", s.high_freq_factor},
                        {"original_max_position_embeddings", s.original_max_position_embeddings}};
    return attrs;
  } else if (s.type == "linear") {
    inv = plain_inv_freq(dim, c.rope_theta);
    for (double& f : inv) f /= s.factor;
  } else if (s.type == "dynamic") {
    return attrs;  // the plain frequencies up to max_position_embeddings, which max_context never exceeds
  } else if (s.type == "yarn") {
    inv = yarn_inv_freq(s, dim, c.rope_theta);
    attention_factor = yarn_attention_factor(s);
  } else if (s.type == "longrope") {
    // A context beyond the original length takes long_factor for every position (llama.cpp's
    // choice by context size: Hugging Face switches with each sequence's length).
    const std::vector<double>& factors =
        double(max_context) > s.original_max_position_embeddings ? s.long_factor : s.short_factor;
    inv = plain_inv_freq(dim, c.rope_theta);
    for (size_t i = 0; i < inv.size(); ++i) inv[i] /= factors[i];
    attention_factor = longrope_attention_factor(s);
  }
  attrs.erase("theta");
  attrs["inv_freq"] = inv;
  if (attention_factor != 1) attrs["attention_factor"] = attention_factor;
  return attrs;
}

}  // namespace hfstatic
