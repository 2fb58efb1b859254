// The config.json fields of the families beyond llama's layout: phi3 (fused projections,
// sliding_window), smollm3 (layers without rope) and granite (multipliers).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "export/hf_config.h"

namespace hfstatic {

// Reads the family's own fields into config (model_type and the shapes are set). Throws Error
// naming the field at fault.
void parse_family_fields(const nlohmann::json& config_json, HfConfig& config, const std::string& origin);

}  // namespace hfstatic
