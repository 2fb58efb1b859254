// Emits the hf_static v1 program spec (metadata, prefill and decode graphs) for a config.
#pragma once
#include <string>
#include <vector>

#include "export/hf_config.h"
#include "format/program_spec.h"

namespace hfstatic {

struct GraphOptions {
  int64_t prefill_len = 32;
  int64_t max_context = 512;
  DType cache_dtype = DType::F32;
  bool repeat_state = false;  // emit the state again, in input order, as unplanned outputs after logits
  std::string mutation_order = "input";
  DType weights_dtype = DType::F32;  // the exported weights' dtype (gemma's embedding scale is rounded to it)
};

// Names accepted by GraphOptions::mutation_order.
std::vector<std::string> mutation_orders();

struct BuiltProgram {
  ProgramSpec spec;
  std::vector<WeightUse> weights;  // every tensor the graphs read, once
};

// Throws Error for options the config cannot take (context too long, unknown order, ...).
BuiltProgram build_program(const HfConfig& config, const GraphOptions& options);

}  // namespace hfstatic
