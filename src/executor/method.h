// Validated, memory-planned methods and their executions.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "executor/ops.h"
#include "executor/runtime_options.h"
#include "format/program.h"
#include "kernels/parallel.h"
#include "util/buffer_allocator.h"

namespace hfstatic {

class ThreadPool;

// Whether Method::load folds an rms_norm or silu_mul into the step of linear nodes that reads
// its output (see Method::Step): yes unless HFSTATIC_FOLD=0, or as last set (tests and
// benchmarks compare both; a loaded method keeps what it was loaded with).
bool op_folding_enabled();
void set_op_folding_enabled(bool enabled);

class Method {
 public:
  // Validates and plans `name` of `program`; throws Error "method 'NAME' ...: problem".
  static std::shared_ptr<const Method> load(std::shared_ptr<const Program> program, const std::string& name,
                                            const RuntimeOptions& options = {});

  const std::string& name() const { return spec_->name; }
  const MethodSpec& spec() const { return *spec_; }
  const Program& program() const { return *program_; }
  size_t num_inputs() const { return spec_->inputs.size(); }
  size_t num_outputs() const { return spec_->outputs.size(); }
  const ValueSpec& input(size_t i) const { return spec_->inputs[i]; }
  const ValueSpec& output_value(size_t i) const { return *spec_->output_value(i); }
  OutputMemory output_memory(size_t i) const { return spec_->outputs[i].memory; }
  // For an Alias output, the index of the input it reports.
  size_t alias_input(size_t output) const { return outputs_[output].index; }
  uint64_t arena_bytes() const { return arena_bytes_; }
  // Nodes, and the steps they run as (fewer when nodes are grouped).
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_steps() const { return steps_.size(); }
  // Steps that begin with a node folded into the linear nodes after it.
  size_t num_folded_steps() const;

 private:
  friend class Execution;
  // Folded: the output of a node folded into the step that alone reads it, never stored.
  enum class Storage { Input, Weight, Arena, Unplanned, Folded };
  struct Value {
    std::string name;
    DType dtype;
    Shape shape;
    Storage storage;
    size_t index = 0;        // input or output index for Input / Unplanned
    const uint8_t* weight = nullptr;
    uint64_t offset = 0;     // arena offset
    uint64_t bytes = 0;
  };
  struct Node {
    const OpDef* op;
    std::vector<size_t> inputs, outputs;  // value ids
    std::shared_ptr<const void> prepared;
  };
  struct Output {
    size_t value;
    size_t index;  // alias: input index
  };
  // What run() executes, nodes [first, first + count): one node, or consecutive nodes of an op
  // with run_group that share their first input (q/k/v, gate/up) as one pass. A step of linear
  // nodes may also begin with the rms_norm or silu_mul node just before them that produces
  // their input, when nothing else reads it (`folded`): one pass instead of two.
  struct Step {
    size_t first, count;
    bool folded = false;
    // The method output that only this step's row-wise nodes produce, read by no node and the
    // only value of the step read outside it: run() may compute only the rows the caller wants.
    size_t sliceable_output = SIZE_MAX;
  };
  void fold_into_linear_steps(const std::vector<std::vector<size_t>>& readers, const std::vector<bool>& is_output);

  std::shared_ptr<const Program> program_;
  const MethodSpec* spec_ = nullptr;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<Step> steps_;
  std::vector<Output> outputs_;
  uint64_t arena_bytes_ = 0;
};

// One caller's run state for a method: the arena and the bindings. Not thread-safe; use one
// Execution per thread.
class Execution {
 public:
  explicit Execution(std::shared_ptr<const Method> method, BufferAllocator& allocator = HeapAllocator::instance());

  const Method& method() const { return *method_; }
  // Binds input i (state inputs are read and updated in place). Checked at run().
  void bind_input(size_t i, void* data);
  // Binds unplanned output i; throws Error for a planned or alias output.
  void bind_output(size_t i, void* data);
  // Only rows [begin, end) of output i ([1, T, N], planned or unplanned) are wanted from now on:
  // when a row-wise op produces it (the logits' linear) only those rows are computed and the
  // others keep whatever they held. set_output_rows(i, 0, T) wants them all again (the default).
  // Throws Error naming the output for a bad index, an alias or non-[1, T, N] output, or rows
  // outside [0, T].
  void set_output_rows(size_t i, int64_t begin, int64_t end);
  void* input_data(size_t i) const { return inputs_[i]; }
  // Address of output i: the input it aliases, the arena slot, or the bound buffer.
  void* output_data(size_t i) const;
  // Runs every node; returns an error naming the unbound input/output or the failing node.
  Status run(ThreadPool* pool = nullptr);

 private:
  std::shared_ptr<const Method> method_;
  Buffer arena_;
  std::vector<void*> inputs_;
  std::vector<void*> outputs_;
  std::vector<std::pair<int64_t, int64_t>> output_rows_;  // wanted rows per output; {0, -1}: all
  // Per step, what each thread prefetches while it waits at the step's end (the next reading
  // step's first bytes: PrefetchRange); made for idle_plans_threads_ threads, 0 when stale.
  std::vector<std::vector<PrefetchRange>> idle_plans_;
  int idle_plans_threads_ = 0;
};

}  // namespace hfstatic
