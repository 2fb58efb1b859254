// The op set of method graphs: for each op, a load-time check (input dtypes and shapes,
// attributes, the output it must declare) and the run function.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "format/program_spec.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "util/error.h"

namespace hfstatic {

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  const Shape* shape = nullptr;
  int64_t dim(size_t i) const { return (*shape)[i]; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

struct OpOperand {
  const ValueSpec* spec;
  bool is_weight;  // read-only file memory
};

// What a node's check derives from its inputs and attributes.
struct OpSignature {
  std::vector<ValueSpec> outputs;        // dtype and shape each output must declare
  std::vector<size_t> mutated_inputs;    // inputs updated in place (must be method inputs)
  std::shared_ptr<const void> prepared;  // attributes decoded once at load
};

struct OpDef {
  const char* name;
  // Throws Error with a message naming the operand or attribute at fault.
  OpSignature (*check)(const std::vector<OpOperand>& inputs, const nlohmann::json& attrs);
  // Runs one node with the kernels of `k` (the method's ISA).
  Status (*run)(const kernels::KernelTable& k, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                const void* prepared);
  // Optional: runs consecutive nodes of this op that share their first input as one pass
  // (inputs[i] and outputs[i] are node i's). The executor groups such nodes at load. fusion:
  // the op folded into the group (only for an op that takes_linear_fusion), or null; with one,
  // inputs[i][0] is the folded node's first input, which the group reads through the fusion.
  Status (*run_group)(const kernels::KernelTable& k, std::span<const std::vector<Tensor>> inputs,
                      std::span<const std::vector<Tensor>> outputs, const kernels::LinearFusion* fusion) = nullptr;
  // The operands that have the token axis T, as bits (input i: bit i of row_inputs; output i:
  // of row_outputs): [1, T] ids and positions, [1, T, N] activations, [1, 1, T, C] masks. The
  // op computes rows [0, n) of its outputs from rows [0, n) of these and whole other operands,
  // so a step can run on its first n rows alone (active rows: the rest are padding).
  uint32_t row_inputs = 0, row_outputs = 0;  // the first 32 operands (a moe node has hundreds)
  // Row r of every row output depends only on row r of the row inputs, so the op can run on any
  // slice of rows (the executor does when only some rows of an output are wanted).
  bool row_wise = false;
  // Optional: what each of `threads` threads reads first when a step of this op runs on these
  // inputs (inputs[i] node i's), at most `bytes` each; the threads prefetch it while they wait
  // in the step before.
  std::vector<PrefetchRange> (*first_reads)(const kernels::KernelTable& k, std::span<const std::vector<Tensor>> inputs,
                                            int threads, size_t bytes) = nullptr;
  // Optional: the kernels::LinearFusion that computes a node of this op (inputs, prepared) inside
  // a group of linear products reading its output: an op with it can be folded into the step
  // of an op that takes_linear_fusion, when nothing else reads its output.
  kernels::LinearFusion (*linear_fusion)(const std::vector<Tensor>& inputs, const void* prepared) = nullptr;
  // run_group takes a folded op's LinearFusion.
  bool takes_linear_fusion = false;
  // Optional: the kernel variant that a step of this op runs with the table k (its many-rows
  // variants, or its few-rows ones) and the scratch it takes, planned when the method is loaded:
  // inputs[i] node i's, weights with their data, other operands with their shapes only.
  // Without it the step runs its op's one kernel and takes no scratch.
  kernels::KernelPlan (*plan)(const kernels::KernelTable& k, bool many_rows,
                              std::span<const std::vector<Tensor>> inputs, const void* prepared,
                              kernels::FoldedOp folded) = nullptr;
};

// Whether operand i is a row operand by the bits of OpDef::row_inputs or row_outputs.
constexpr bool row_operand(uint32_t bits, size_t i) { return i < 32 && (bits >> i & 1) != 0; }

// The token axis of a row operand's shape: the second dimension of [1, T] and [1, T, N], the
// third of a [1, 1, T, C] mask; -1 for another shape.
inline int token_axis(const Shape& s) {
  if ((s.size() == 2 || s.size() == 3) && s[0] == 1) return 1;
  if (s.size() == 4 && s[0] == 1 && s[1] == 1) return 2;
  return -1;
}

const OpDef* find_op(const std::string& name);
std::vector<std::string> op_names();

}  // namespace hfstatic
