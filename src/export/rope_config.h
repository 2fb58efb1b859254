// Rotary embedding of the supported families: config.json's rope_scaling and partial rotary,
// and the rope op attributes a fixed-length program of max_context positions uses.
//
// A program has no sequence length at run time, so types that Hugging Face recomputes per
// sequence are fixed at export:
// - dynamic (NTK): Hugging Face keeps the plain frequencies while the sequence is within
//   max_position_embeddings and grows the base with the sequence beyond it. max_context never
//   exceeds max_position_embeddings, so the program uses the plain frequencies: what Hugging
//   Face computes for every sequence the program can hold.
// - longrope: Hugging Face uses short_factor while a sequence is within
//   original_max_position_embeddings and long_factor once it is longer. The program uses one
//   set for every position, chosen by its context (as llama.cpp does): short_factor when
//   max_context is within the original length, long_factor (and the attention factor, which
//   does not depend on the length) when it is beyond. So a program with a long context computes
//   its short sequences as Hugging Face computes long ones.
// linear, yarn and longrope frequencies are computed here once and stored in the op's inv_freq;
// llama3 keeps its scaling attributes, computed by the op at load.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "export/hf_config.h"

namespace hfstatic {

// transformers 5 writes the rotary settings as one object, rope_parameters: rope_type,
// rope_theta, partial_rotary_factor and the scaling's own fields, or for models whose sliding
// layers rotate with another base one such object per layer type ({"full_attention": ...,
// "sliding_attention": ...}). Returns config_json with its base, rotary width and sliding base as
// the version-4 fields (rope_theta, partial_rotary_factor, rope_local_base_freq); a field given
// both ways with two values is an error naming both. parse_rope_config reads the scaling from it.
nlohmann::json with_version4_rope_fields(const nlohmann::json& config_json, const std::string& origin);

// Reads partial_rotary_factor (into config.rotary_dim) and rope_scaling, else rope_parameters'
// scaling; config's head_dim, max_position_embeddings and family are set. Throws Error naming the
// field at fault.
void parse_rope_config(const nlohmann::json& config_json, HfConfig& config, const std::string& origin);

// Attributes of the rope op for a program of max_context positions. Throws Error when the
// scaling cannot serve that length.
nlohmann::json rope_attributes(const HfConfig& config, int64_t max_context);

}  // namespace hfstatic
