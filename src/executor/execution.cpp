#include <algorithm>
#include <tuple>

#include "executor/method.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"

namespace hfstatic {

Execution::Execution(std::shared_ptr<const Method> method, BufferAllocator& allocator)
    : method_(std::move(method)),
      arena_(allocator, std::max<uint64_t>(method_->arena_bytes(), 64)),
      inputs_(method_->num_inputs(), nullptr),
      outputs_(method_->num_outputs(), nullptr),
      output_rows_(method_->num_outputs(), {0, -1}) {}

void Execution::bind_input(size_t i, void* data) {
  if (i >= inputs_.size())
    fail("method '", method_->name(), "': input index ", i, " out of range (", inputs_.size(), " inputs)");
  if (inputs_[i] != data) idle_plans_threads_ = 0, operands_valid_ = false;
  inputs_[i] = data;
}

void Execution::bind_output(size_t i, void* data) {
  if (i >= outputs_.size())
    fail("method '", method_->name(), "': output index ", i, " out of range (", outputs_.size(), " outputs)");
  if (method_->output_memory(i) != OutputMemory::Unplanned)
    fail("method '", method_->name(), "': output ", i, " '", method_->spec().outputs[i].name, "' is ",
         output_memory_name(method_->output_memory(i)), ", only unplanned outputs take a buffer");
  if (outputs_[i] != data) idle_plans_threads_ = 0, operands_valid_ = false;
  outputs_[i] = data;
}

void Execution::set_output_rows(size_t i, int64_t begin, int64_t end) {
  const std::string where = cat("method '", method_->name(), "'");
  if (i >= outputs_.size()) fail(where, ": output index ", i, " out of range (", outputs_.size(), " outputs)");
  const std::string owhere = cat(where, " output ", i, " '", method_->spec().outputs[i].name, "'");
  if (method_->output_memory(i) == OutputMemory::Alias)
    fail(owhere, " is an alias of an input; its rows cannot be limited");
  const Shape& shape = method_->values_[method_->outputs_[i].value].shape;
  if (shape.size() != 3 || shape[0] != 1)
    fail(owhere, " is ", shape_str(shape), ", not [1, T, N]; its rows cannot be limited");
  if (begin < 0 || end > shape[1] || begin >= end)
    fail(owhere, ": rows [", begin, ", ", end, ") are not a non-empty range within its ", shape[1], " rows");
  output_rows_[i] = begin == 0 && end == shape[1] ? std::pair<int64_t, int64_t>{0, -1} : std::pair{begin, end};
}

void Execution::set_active_rows(int64_t n) {
  const int64_t rows = method_->rows();
  if (rows == 0)
    fail("method '", method_->name(), "' has no token axis its row operands share; it cannot run on active rows");
  if (n < 1 || n > rows) fail("method '", method_->name(), "': ", n, " active rows are not within its ", rows, " rows");
  active_rows_ = n == rows ? -1 : n;
}

void Execution::set_kernel_rows(int64_t rows) {
  if (rows < 0) fail("method '", method_->name(), "': kernel rows ", rows, " is negative");
  const Method& m = *method_;
  kernel_rows_ = rows == 0 ? nullptr : rows < kernels::kManyRows ? &m.few_rows_kernels_ : &m.many_rows_kernels_;
}

void* Execution::output_data(size_t i) const {
  const auto& o = method_->outputs_[i];
  switch (method_->output_memory(i)) {
    case OutputMemory::Alias: return inputs_[o.index];
    case OutputMemory::Planned: return static_cast<uint8_t*>(arena_.data()) + method_->values_[o.value].offset;
    case OutputMemory::Unplanned: return outputs_[i];
  }
  return nullptr;
}

Tensor Execution::tensor(size_t id) const {
  const Method::Value& v = method_->values_[id];
  void* data = nullptr;
  switch (v.storage) {
    case Method::Storage::Input: data = inputs_[v.index]; break;
    case Method::Storage::Weight: data = const_cast<uint8_t*>(v.weight); break;
    case Method::Storage::Arena: data = static_cast<uint8_t*>(arena_.data()) + v.offset; break;
    case Method::Storage::Unplanned: data = outputs_[v.index]; break;
    case Method::Storage::Folded: break;
  }
  return Tensor{data, v.dtype, &v.shape};
}

// While the threads wait at the end of a step, they prefetch what they will read first in the
// next step that says so (the weights of the next linear): the memory would idle otherwise.
void Execution::plan_idle_prefetch(int threads) {
  constexpr size_t kIdlePrefetchBytes = size_t(256) << 10;  // a fraction of a core's L2
  const Method& m = *method_;
  idle_plans_.assign(m.steps_.size(), {});
  std::vector<PrefetchRange> next;
  for (size_t si = m.steps_.size(); si-- > 0;) {
    idle_plans_[si] = next;
    // The nodes of the step's op (a folded step's linears).
    const Method::Step& step = m.steps_[si];
    const size_t first = step.first + (step.folded ? 1 : 0), end = step.first + step.count;
    const Method::Node& head = m.nodes_[first];
    if (!head.op->first_reads) continue;
    std::vector<std::vector<Tensor>> step_ins(end - first);
    for (size_t k = first; k < end; ++k)
      for (size_t id : m.nodes_[k].inputs) step_ins[k - first].push_back(tensor(id));
    next = head.op->first_reads(*m.kernels_, step_ins, threads, kIdlePrefetchBytes);
  }
  idle_plans_threads_ = threads;
}

void Execution::slice_rows(size_t si, int64_t begin, int64_t end, std::vector<std::vector<Tensor>>& ins,
                           std::vector<std::vector<Tensor>>& outs, std::vector<Shape>& slices) const {
  const Method& m = *method_;
  const Method::Step& step = m.steps_[si];
  slices.clear();
  for (size_t k = 0; k < step.count; ++k) slices.resize(slices.size() + ins[k].size() + outs[k].size());
  size_t next = 0;
  for (size_t k = 0; k < step.count; ++k) {
    const OpDef& op = *m.nodes_[step.first + k].op;
    for (auto [list, bits] : {std::pair{&ins[k], op.row_inputs}, {&outs[k], op.row_outputs}})
      for (size_t i = 0; i < list->size(); ++i) {
        if (!row_operand(bits, i)) continue;
        Tensor& t = (*list)[i];
        Shape& cut = slices[next++];
        cut = *t.shape;
        const size_t axis = size_t(token_axis(cut));  // the op checks gave every row operand one
        int64_t row_elems = 1;
        for (size_t d = axis + 1; d < cut.size(); ++d) row_elems *= cut[d];
        if (t.data) t.data = static_cast<uint8_t*>(t.data) + size_t(begin * row_elems) * dtype_size(t.dtype);
        cut[axis] = end - begin;
        t.shape = &cut;
      }
  }
}

void Execution::bind_operands() {
  const Method& m = *method_;
  operands_.assign(m.steps_.size(), {});
  for (size_t si = 0; si < m.steps_.size(); ++si) {
    const Method::Step& step = m.steps_[si];
    StepOperands& ops = operands_[si];
    ops.ins.resize(step.count);
    ops.outs.resize(step.count);
    for (size_t n = 0; n < step.count; ++n) {
      const Method::Node& node = m.nodes_[step.first + n];
      for (size_t id : node.inputs) ops.ins[n].push_back(tensor(id));
      for (size_t id : node.outputs) ops.outs[n].push_back(tensor(id));
    }
    if (step.folded)
      for (size_t n = 1; n < step.count; ++n) ops.ins[n][0] = ops.ins[0][0];
  }
  operands_valid_ = true;
}

Status Execution::check_bound() const {
  const Method& m = *method_;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!inputs_[i])
      return Status::error(
          cat(m.program().path(), ": method '", m.name(), "': input ", i, " '", m.input(i).name, "' is not bound"));
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (m.output_memory(i) == OutputMemory::Unplanned && !outputs_[i])
      return Status::error(cat(m.program().path(), ": method '", m.name(), "': output ", i, " '",
                               m.spec().outputs[i].name,
                               "' is unplanned and has no bound buffer; bind one before running"));
  return {};
}

int Execution::prepare_run(int pool_threads) {
  const Method& m = *method_;
  if (workspace_threads_ != pool_threads) {
    workspace_.reserve(m.scratch_, pool_threads);
    workspace_threads_ = pool_threads;
  }
  const int threads = m.idle_prefetch_ ? pool_threads : 1;
  if (threads > 1 && idle_plans_threads_ != threads) plan_idle_prefetch(threads);
  if (!operands_valid_) bind_operands();
  return threads;
}

Status Execution::run_step(size_t si, StepCut& cut) {
  const Method& m = *method_;
  const Method::Step& step = m.steps_[si];
  const std::vector<std::vector<Tensor>>* ins = &operands_[si].ins;
  const std::vector<std::vector<Tensor>>* outs = &operands_[si].outs;
  // The rows to compute: those wanted of the step's output (by kernels picked for that many),
  // else the active rows, or all (by the kernels of all rows).
  const kernels::KernelTable* k = m.planned_kernels_;
  int64_t begin = 0, end = active_rows_;
  if (step.sliceable_output != SIZE_MAX && output_rows_[step.sliceable_output].second >= 0) {
    std::tie(begin, end) = output_rows_[step.sliceable_output];
    k = m.kernels_;
  }
  if (kernel_rows_) k = kernel_rows_;
  if (step.has_rows && end >= 0) {
    cut.ins = *ins;
    cut.outs = *outs;
    slice_rows(si, begin, end, cut.ins, cut.outs, cut.slices);
    ins = &cut.ins;
    outs = &cut.outs;
  }
  return run_nodes(si, *k, *ins, *outs);
}

Status Execution::run_nodes(size_t si, const kernels::KernelTable& k, const std::vector<std::vector<Tensor>>& ins,
                            const std::vector<std::vector<Tensor>>& outs) const {
  const Method& m = *method_;
  const Method::Step& step = m.steps_[si];
  const Method::Node& head = m.nodes_[step.first];
  Status s;
  if (step.folded) {
    // Node 0 is computed inside the group of the others, which read its input through it.
    const kernels::LinearFusion fusion = head.op->linear_fusion(ins[0], head.prepared.get());
    const std::span<const std::vector<Tensor>> step_ins(ins), step_outs(outs);
    s = m.nodes_[step.first + 1].op->run_group(k, step_ins.subspan(1), step_outs.subspan(1), &fusion);
  } else if (step.count == 1) {
    s = head.op->run(k, ins[0], outs[0], head.prepared.get());
  } else {
    s = head.op->run_group(k, ins, outs, nullptr);
  }
  if (s.ok()) return s;
  const std::string nodes =
      step.count == 1 ? cat("node ", step.first) : cat("nodes ", step.first, "-", step.first + step.count - 1);
  return Status::error(
      cat(m.program().path(), ": method '", m.name(), "' ", nodes, " (", head.op->name, "): ", s.message()));
}

Status Execution::run(ThreadPool* pool) {
  if (Status s = check_bound(); !s.ok()) return s;
  ScopedThreadPool scoped(pool);
  const int threads = prepare_run(pool ? pool->threads() : 1);
  kernels::ScopedWorkspace scratch(&workspace_);
  StepCut cut;
  for (size_t si = 0; si < method_->steps_.size(); ++si) {
    ScopedIdlePrefetch idle(threads > 1 ? std::span<const PrefetchRange>(idle_plans_[si])
                                        : std::span<const PrefetchRange>());
    if (Status s = run_step(si, cut); !s.ok()) return s;
  }
  return {};
}

}  // namespace hfstatic
