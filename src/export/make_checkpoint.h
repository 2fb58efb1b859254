// Random-initialised checkpoints in exactly the Hugging Face layout, for tests and benchmarks.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "export/family_spec.h"
#include "util/dtype.h"

namespace hfstatic {

// Every family's presets, in table order.
const std::vector<CheckpointPreset>& checkpoint_presets();
const CheckpointPreset& find_checkpoint_preset(const std::string& name);  // throws Error listing presets

struct MakeCheckpointOptions {
  std::string preset = "tiny";
  uint64_t seed = 0;
  std::optional<DType> dtype;
  uint64_t shard_bytes = 0;  // > 0: split into model-0000i-of-0000n.safetensors shards of about this size
  // The preset with its first N layers only (per-layer lists cut to match): a model of a real
  // width that fits a small disk. A figure per layer scales to the full depth.
  std::optional<int64_t> num_layers;
};

// Writes config.json, generation_config.json, model.safetensors (or shards + index) and a
// byte-level tokenizer.json / tokenizer_config.json into `dir` (created if needed).
void make_checkpoint(const std::string& dir, const MakeCheckpointOptions& options);

}  // namespace hfstatic
