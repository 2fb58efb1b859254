// Validated, memory-planned methods and their executions.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "executor/ops.h"
#include "executor/runtime_options.h"
#include "format/program.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "util/buffer_allocator.h"

namespace hfstatic {

class ThreadPool;

class Method {
 public:
  // Validates and plans `name` of `program`; throws Error "method 'NAME' ...: problem". The
  // method runs with the kernels of the best ISA at or below options.isa, folds ops into linear
  // steps when options.fold_ops, and has waiting threads prefetch when options.idle_prefetch.
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
  // The ISA of the kernels it runs.
  kernels::Isa isa() const { return isa_; }
  // The length T of the token axis every row operand shares (OpDef::row_inputs), or 0 when the
  // method has none or they disagree: then it cannot run on active rows.
  int64_t rows() const { return rows_; }

  // What a step runs, planned at load: its nodes, the kernel variant of the method's rows (what
  // every run takes, active rows included) and the one a run on few rows takes (the rows a
  // caller wants of a sliceable output, set_kernel_rows(1)), and the scratch of both.
  struct StepPlan {
    size_t first_node = 0, nodes = 0;
    std::string ops;         // "linear x3", "rms_norm + linear x2" (folded)
    std::string variant;     // of the method's rows
    std::string few_rows;    // of a run on fewer than kernels::kManyRows rows
    bool sliceable = false;  // may run on the rows wanted of its output only
    kernels::ScratchNeed scratch;
  };
  const std::vector<StepPlan>& step_plans() const { return step_plans_; }
  // Each scratch buffer at the largest any step takes: what an Execution reserves per thread.
  const kernels::ScratchNeed& scratch() const { return scratch_; }

 private:
  static std::shared_ptr<const Method> load_checked(std::shared_ptr<const Program> program, const std::string& name,
                                                    const RuntimeOptions& options);
  friend class Execution;
  // Folded: the output of a node folded into the step that alone reads it, never stored.
  enum class Storage { Input, Weight, Arena, Unplanned, Folded };
  struct Value {
    std::string name;
    DType dtype;
    Shape shape;
    Storage storage;
    size_t index = 0;  // input or output index for Input / Unplanned
    const uint8_t* weight = nullptr;
    uint64_t offset = 0;  // arena offset
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
  // with run_group that share their first input (q/k/v, gate/up) as one pass. A step of an op
  // that takes_linear_fusion (linear) may also begin with the node just before it that produces
  // its input, when that node's op has a linear_fusion (rms_norm, silu_mul) and nothing else
  // reads the input (`folded`): one pass instead of two.
  struct Step {
    size_t first, count;
    bool folded = false;
    kernels::FoldedOp folded_op = kernels::FoldedOp::None;  // what a folded step's first node is, for planning
    // The method output, read by no node, that this step's row-wise nodes produce or feed alone
    // (through the steps after it up to the output: mark_sliceable_steps): run() may compute only
    // the rows the caller wants of it.
    size_t sliceable_output = SIZE_MAX;
    bool has_rows = false;  // some node has a row operand: active rows cut it
  };
  // What validation learns on the way: value ids by name, which are produced, and for each the
  // nodes that first and last use it (planning turns them into lifetimes); inputs updated in place.
  struct Uses {
    std::map<std::string, size_t> ids;
    std::vector<bool> produced;
    std::vector<size_t> first, last;
    std::set<size_t> mutated;
  };
  // Who reads each value: the nodes (in order, each once), and whether it is a method output.
  struct Readers {
    std::vector<std::vector<size_t>> nodes;
    std::vector<bool> is_output;
    // Value id is no method output and only nodes [first, end) read it.
    bool only_within(size_t id, size_t first, size_t end) const;
  };

  // Validation (method_validate.cpp): every value defined before use and produced once, each
  // node checked against its op, outputs resolvable.
  void add_values(Uses& uses);
  size_t add_weight(const std::string& name, Uses& uses);
  void add_node(size_t index, Uses& uses);
  void check_all_produced(const Uses& uses) const;
  void add_outputs(Uses& uses);
  // Planning (method_plan.cpp): steps, folding, row slicing, the arena.
  void group_steps();
  Readers readers() const;
  void fold_into_linear_steps(const Readers& readers);
  void mark_sliceable_steps(const Readers& readers);
  // rows_ and each step's has_rows from the nodes' row operands.
  void find_token_axis();
  void plan_arena(const Uses& uses);
  // The kernel tables and step_plans_ (method_kernels.cpp).
  void plan_kernels();

  std::shared_ptr<const Program> program_;
  const MethodSpec* spec_ = nullptr;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<Step> steps_;
  std::vector<Output> outputs_;
  uint64_t arena_bytes_ = 0;
  kernels::Isa isa_ = kernels::Isa::Scalar;
  // The ISA's table (its linear and attention pick their variant by the rows they are given),
  // and the same with the variants of rows_ rows fixed: what every step runs, so that a step
  // on fewer active rows computes them as the run of all would. A step cut to the rows a caller
  // wants of its output (set_output_rows) runs the first; set_kernel_rows picks one of the
  // last two.
  const kernels::KernelTable* kernels_ = nullptr;
  kernels::KernelTable few_rows_kernels_{}, many_rows_kernels_{};
  const kernels::KernelTable* planned_kernels_ = nullptr;  // one of the three above
  std::vector<StepPlan> step_plans_;
  kernels::ScratchNeed scratch_;
  int64_t rows_ = 0;
  bool idle_prefetch_ = true;
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
  // From now on only rows [0, n) of the token axis are real: every step computes its row
  // operands' first n rows only, exactly as a run of all T computes them (the kernel variants
  // of T rows); the rest of each keeps whatever it held. Rows wanted of an output
  // (set_output_rows) must lie within them. set_active_rows(T) runs all again (the default).
  // Throws Error when n is outside [1, T] or the method has no token axis (rows() == 0).
  void set_active_rows(int64_t n);
  // From now on every step runs the kernel variants `rows` rows take (1: each row exactly as a
  // one-row method computes it, a decode step), the rows wanted of outputs included; 0 goes
  // back to the method's own (the default). Throws Error for a negative count.
  void set_kernel_rows(int64_t rows);
  void* input_data(size_t i) const { return inputs_[i]; }
  // Address of output i: the input it aliases, the arena slot, or the bound buffer.
  void* output_data(size_t i) const;
  // Runs every node; returns an error naming the unbound input/output or the failing node.
  Status run(ThreadPool* pool = nullptr);

  // Runs every execution of `batch` (each bound to its own inputs, outputs and state) as run()
  // would, step by step together: a step of independent rows that reads weights (linear, norms,
  // moe) whose row operands are [1, 1, N] runs once over the rows of all of them with the
  // few-rows kernels (which read each weight row once for all the rows and compute each row from
  // its own inputs only, so every row is bit for bit its one-row run); every other step runs per
  // execution. The gathered rows and the scratch of B rows are kept by batch[0], made once per
  // batch size. Returns an error for a batch that batch_problem() refuses, or as run() does.
  static Status run_batch(std::span<Execution* const> batch, ThreadPool* pool = nullptr);
  // Why `batch` cannot run together (one line), or empty: a null or repeated execution, or
  // executions of different methods, programs or load options.
  static std::string batch_problem(std::span<Execution* const> batch);

 private:
  // The tensor of value id as bound now (a folded value has no data).
  Tensor tensor(size_t id) const;
  // Makes idle_plans_ for `threads` threads.
  void plan_idle_prefetch(int threads);
  // Cuts the row operands of `step` to rows [begin, end); `slices` holds the cut shapes.
  void slice_rows(size_t step, int64_t begin, int64_t end, std::vector<std::vector<Tensor>>& ins,
                  std::vector<std::vector<Tensor>>& outs, std::vector<Shape>& slices) const;
  // Makes operands_ from the bindings.
  void bind_operands();
  // run()'s parts: the binding errors; the workspace, idle plans and operands for a pool of
  // `pool_threads` (returns the threads that prefetch while idle); one step.
  Status check_bound() const;
  int prepare_run(int pool_threads);
  struct StepCut {  // a step's operands cut to the wanted rows, and their shapes
    std::vector<std::vector<Tensor>> ins, outs;
    std::vector<Shape> slices;
  };
  Status run_step(size_t step, StepCut& cut);
  // Runs step's nodes with the table k on these operands.
  Status run_nodes(size_t step, const kernels::KernelTable& k, const std::vector<std::vector<Tensor>>& ins,
                   const std::vector<std::vector<Tensor>>& outs) const;
  // run_batch's plan for `size` executions of this one's method (execution_batch.cpp).
  struct BatchState;
  void plan_batch(size_t size, int pool_threads);

  // A step's nodes' operands as bound: a folded step's linears read its input through the
  // folded op (their first input is the folded op's).
  struct StepOperands {
    std::vector<std::vector<Tensor>> ins, outs;
  };

  std::shared_ptr<const Method> method_;
  Buffer arena_;
  std::vector<void*> inputs_;
  std::vector<void*> outputs_;
  std::vector<std::pair<int64_t, int64_t>> output_rows_;  // wanted rows per output; {0, -1}: all
  int64_t active_rows_ = -1;                              // -1: all
  const kernels::KernelTable* kernel_rows_ = nullptr;     // set_kernel_rows: every step's table
  // Every thread's scratch, reserved to the method's plan for workspace_threads_ threads.
  kernels::Workspace workspace_;
  int workspace_threads_ = 0;
  // Per step, what each thread prefetches while it waits at the step's end (the next reading
  // step's first bytes: PrefetchRange); made for idle_plans_threads_ threads, 0 when stale.
  std::vector<std::vector<PrefetchRange>> idle_plans_;
  int idle_plans_threads_ = 0;
  // Per step, its operands as bound now; remade when a binding changes (operands_valid_ false).
  std::vector<StepOperands> operands_;
  bool operands_valid_ = false;
  std::shared_ptr<BatchState> batch_;  // run_batch's, when this execution leads a batch
};

}  // namespace hfstatic
