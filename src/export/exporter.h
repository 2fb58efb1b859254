// Hugging Face checkpoint folder -> hf_static program file.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "export/graph_builder.h"

namespace hfstatic {

struct ExportOptions {
  GraphOptions graph;
  std::optional<DType> weights_dtype;  // default: the checkpoint's own dtype
  // Linear and embedding weights quantized (export/quantize.h); the other weights (norms,
  // biases) keep weights_dtype.
  std::optional<WeightQuant> quant;
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct ExportSummary {
  uint64_t file_bytes = 0;
  uint64_t weight_bytes = 0;
  size_t tensors = 0;
  // A multimodal checkpoint's tensors that are not the language model's: how many, and whose
  // ("the vision tower and multi-modal projector").
  size_t skipped_tensors = 0;
  std::string skipped_what;
};

// Validates the checkpoint against its config, then writes `out_path` atomically: on any error
// nothing is left at `out_path`. Throws Error.
ExportSummary export_program(const std::string& checkpoint_dir, const std::string& out_path,
                             const ExportOptions& options);

}  // namespace hfstatic
