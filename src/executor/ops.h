// The op set of method graphs: for each op, a load-time check (input dtypes and shapes,
// attributes, the output it must declare) and the run function.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format/program_spec.h"
#include "kernels/parallel.h"
#include "util/error.h"

namespace hfstatic {

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  const Shape* shape = nullptr;
  int64_t dim(size_t i) const { return (*shape)[i]; }
  template <typename T>
  T* as() const { return static_cast<T*>(data); }
};

struct OpOperand {
  const ValueSpec* spec;
  bool is_weight;  // read-only file memory
};

// What a node's check derives from its inputs and attributes.
struct OpSignature {
  std::vector<ValueSpec> outputs;                  // dtype and shape each output must declare
  std::vector<size_t> mutated_inputs;              // inputs updated in place (must be method inputs)
  std::shared_ptr<const void> prepared;            // attributes decoded once at load
};

struct OpDef {
  const char* name;
  // Throws Error with a message naming the operand or attribute at fault.
  OpSignature (*check)(const std::vector<OpOperand>& inputs, const nlohmann::json& attrs);
  Status (*run)(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, const void* prepared);
  // Optional: runs consecutive nodes of this op that share their first input as one pass
  // (inputs[i] and outputs[i] are node i's). The executor groups such nodes at load.
  Status (*run_group)(const std::vector<std::vector<Tensor>>& inputs, const std::vector<std::vector<Tensor>>& outputs) =
      nullptr;
  // Row r of every [1, T, N] output depends only on row r of the [1, T, *] inputs, so the op
  // can run on a slice of rows (the executor does when only some rows of an output are wanted).
  bool row_wise = false;
  // Optional: what each of `threads` threads reads first when a step of this op runs on these
  // inputs (inputs[i] node i's), at most `bytes` each; the threads prefetch it while they wait
  // in the step before.
  std::vector<PrefetchRange> (*first_reads)(const std::vector<std::vector<Tensor>>& inputs, int threads,
                                            size_t bytes) = nullptr;
};

// Whether a step of linear nodes can take in the node of `op` that produces their shared input
// (an rms_norm or a silu_mul), when nothing else reads it: kernels::LinearFusion.
bool folds_into_linear(const OpDef* op);
// Runs such a step as one pass: ins[k] and outs[k] are its node k's, node 0 the folded one (of
// op `folded`, with `prepared`).
Status run_linear_folded(const OpDef* folded, const void* prepared, const std::vector<std::vector<Tensor>>& ins,
                         const std::vector<std::vector<Tensor>>& outs);

const OpDef* find_op(const std::string& name);
std::vector<std::string> op_names();

}  // namespace hfstatic
