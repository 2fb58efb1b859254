// Random-initialised checkpoints in exactly the Hugging Face layout, for tests and benchmarks.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/dtype.h"

namespace hfstatic {

struct CheckpointPreset {
  std::string name;
  std::string description;
  std::string config_json;  // config.json as the real model ships it (shapes, rope, ties)
  DType dtype;              // default tensor dtype
  double init_std;          // std of the random projection weights
};

const std::vector<CheckpointPreset>& checkpoint_presets();
const CheckpointPreset& find_checkpoint_preset(const std::string& name);  // throws Error listing presets

struct MakeCheckpointOptions {
  std::string preset = "tiny";
  uint64_t seed = 0;
  std::optional<DType> dtype;
  uint64_t shard_bytes = 0;  // > 0: split into model-0000i-of-0000n.safetensors shards of about this size
};

// Writes config.json, generation_config.json, model.safetensors (or shards + index) and a
// byte-level tokenizer.json / tokenizer_config.json into `dir` (created if needed).
void make_checkpoint(const std::string& dir, const MakeCheckpointOptions& options);

}  // namespace hfstatic
