// Execution::run_batch: one run of several executions of a method together, their linear and
// other row-wise steps that read weights (norms, moe) as one step over the rows of all of them.
#include <algorithm>
#include <cstring>
#include <deque>

#include "executor/method.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"

namespace hfstatic {

struct Execution::BatchState {
  // A row operand of a batched step: its value, floats a row, and where the B rows lie in rows.
  struct Row {
    size_t value, floats, offset;
  };
  struct Step {
    bool batched = false;
    std::vector<Row> gather, scatter;
    StepOperands operands;  // the row operands in `rows`, the others the weights
  };
  const Method* method = nullptr;
  size_t size = 0;
  int threads = 0;
  std::vector<Step> steps;
  std::deque<Shape> shapes;  // [1, B, N] of the row operands, where the operands point
  Buffer rows, resident;
  kernels::Workspace workspace;  // the scratch of the batched steps on B rows
};

std::string Execution::batch_problem(std::span<Execution* const> batch) {
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!batch[i]) return cat("execution ", i, " of the batch is null");
    for (size_t j = 0; j < i; ++j)
      if (batch[j] == batch[i]) return cat("execution ", i, " of the batch is execution ", j, " again");
  }
  if (batch.empty()) return {};
  const Method& a = *batch[0]->method_;
  for (size_t i = 1; i < batch.size(); ++i) {
    const Method& b = *batch[i]->method_;
    if (&a == &b) continue;
    const std::string which = cat("execution ", i, " runs method '", b.name(), "' of ", b.program().path(),
                                  ", execution 0 method '", a.name(), "' of ", a.program().path());
    if (&a.program() != &b.program() || a.name() != b.name())
      return cat(which, ": a batch runs one method of one loaded program");
    bool same = a.kernels_ == b.kernels_ && a.idle_prefetch_ == b.idle_prefetch_ && a.steps_.size() == b.steps_.size();
    for (size_t s = 0; same && s < a.steps_.size(); ++s)
      same = a.steps_[s].first == b.steps_[s].first && a.steps_[s].count == b.steps_[s].count &&
             a.steps_[s].folded == b.steps_[s].folded;
    if (!same) return cat(which, ", loaded with other options (ISA, folding): their steps differ");
  }
  return {};
}

// A step runs batched when its rows are independent of each other (a group of linear products,
// or a row-wise op: a norm, an add, moe, whose rows each choose their experts), each row operand
// is a float32 [1, 1, N] activation and every other operand a weight: the weights are the same
// for every execution of the method, and are read once for all of its rows. A step's row
// operands are copied into `rows` and its results back to each execution, except the values that
// only batched steps write and read (the residual stream between its adds and the products, the
// gate and up rows the down projection reads): those stay in `resident` from the step that
// writes them to the last that reads them, so a batched add costs no copy and no parallel
// region of its own per execution.
void Execution::plan_batch(size_t size, int pool_threads) {
  const Method& m = *method_;
  if (!batch_) batch_ = std::make_shared<BatchState>();
  BatchState& bs = *batch_;
  if (bs.method == &m && bs.size == size && bs.threads == pool_threads) return;
  bs.method = &m;
  bs.size = size;
  bs.threads = pool_threads;
  constexpr size_t kAlignFloats = 16;
  auto batch_floats = [&](size_t id) {
    return (size * size_t(m.values_[id].shape[2]) + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  };
  // Calls fn(node, operand index, value id, output?) for every operand of step si, a folded
  // step's linears reading the folded node's input.
  auto each_operand = [&](size_t si, auto&& fn) {
    const Method::Step& step = m.steps_[si];
    for (size_t n = 0; n < step.count; ++n) {
      const Method::Node& node = m.nodes_[step.first + n];
      for (size_t i = 0; i < node.inputs.size(); ++i)
        fn(n, i, step.folded && n > 0 && i == 0 ? m.nodes_[step.first].inputs[0] : node.inputs[i], false);
      for (size_t i = 0; i < node.outputs.size(); ++i) fn(n, i, node.outputs[i], true);
    }
  };
  struct Placed {
    Tensor* operand;
    bool resident;
    size_t offset;
  };
  std::vector<size_t> resident(m.values_.size(), SIZE_MAX);  // offsets in `resident`, SIZE_MAX: none
  std::vector<Placed> placed;
  size_t rows_floats = 0;
  // Plans every step's operands, the values with a resident offset kept there.
  auto plan_steps = [&] {
    bs.steps.assign(m.steps_.size(), {});
    bs.shapes.clear();
    placed.clear();
    rows_floats = 0;
    for (size_t si = 0; si < m.steps_.size(); ++si) {
      const Method::Step& step = m.steps_[si];
      const size_t body = step.first + (step.folded ? 1 : 0);
      const OpDef& op = *m.nodes_[body].op;
      const bool rows_independent = op.takes_linear_fusion ? op.run_group != nullptr : op.row_wise;
      if (!rows_independent || !step.has_rows) continue;
      BatchState::Step& plan = bs.steps[si];
      plan.operands = operands_[si];
      const size_t placed_before = placed.size();
      size_t floats = 0;
      bool batchable = true;
      // Points operand t (value id) at its rows in the buffers when it is a row operand.
      auto place = [&](Tensor& t, size_t id, bool row, std::vector<BatchState::Row>& rows) {
        const Method::Value& v = m.values_[id];
        if (v.storage == Method::Storage::Folded) return;
        if (!row) {
          batchable = batchable && v.storage == Method::Storage::Weight;
          return;
        }
        if (v.dtype != DType::F32 || v.shape.size() != 3 || v.shape[0] != 1 || v.shape[1] != 1) {
          batchable = false;
          return;
        }
        t.shape = &bs.shapes.emplace_back(Shape{1, int64_t(size), v.shape[2]});
        if (resident[id] != SIZE_MAX) {
          placed.push_back({&t, true, resident[id]});
          return;
        }
        auto known = std::find_if(rows.begin(), rows.end(), [&](const BatchState::Row& r) { return r.value == id; });
        size_t offset = floats;
        if (known != rows.end()) {
          offset = known->offset;
        } else {
          rows.push_back({id, size_t(v.shape[2]), offset});
          floats += batch_floats(id);
        }
        placed.push_back({&t, false, offset});
      };
      each_operand(si, [&](size_t n, size_t i, size_t id, bool output) {
        const OpDef& node_op = *m.nodes_[step.first + n].op;
        if (output)
          place(plan.operands.outs[n][i], id, row_operand(node_op.row_outputs, i), plan.scatter);
        else
          place(plan.operands.ins[n][i], id, row_operand(node_op.row_inputs, i), plan.gather);
      });
      if (!batchable) {
        placed.resize(placed_before);
        plan = {};
        continue;
      }
      plan.batched = true;
      rows_floats = std::max(rows_floats, floats);
    }
  };
  plan_steps();
  // The values to keep resident: arena values, not method outputs, written by a batched step
  // and read by at least one, every step that reads them batched. A step with a sliceable
  // output may run unbatched (run_batch), so it neither writes nor reads one.
  std::vector<size_t> last_reader(m.values_.size(), SIZE_MAX);
  std::vector<bool> eligible(m.values_.size());
  for (size_t id = 0; id < m.values_.size(); ++id) eligible[id] = m.values_[id].storage == Method::Storage::Arena;
  for (const Method::Output& o : m.outputs_) eligible[o.value] = false;
  for (size_t si = 0; si < m.steps_.size(); ++si) {
    const bool batched = bs.steps[si].batched && m.steps_[si].sliceable_output == SIZE_MAX;
    each_operand(si, [&](size_t, size_t, size_t id, bool output) {
      if (!batched) eligible[id] = false;
      if (!output) last_reader[id] = si;
    });
  }
  // Offsets in `resident` by first fit over the values' lifetimes, in the order they are written
  // (each value once: Method::load refuses a value produced twice).
  struct Slot {
    size_t offset, floats, busy_until;
  };
  std::vector<Slot> slots;
  size_t resident_floats = 0;
  for (size_t si = 0; si < m.steps_.size(); ++si)
    each_operand(si, [&](size_t, size_t, size_t id, bool output) {
      if (!output || !eligible[id] || last_reader[id] == SIZE_MAX) return;
      const size_t floats = batch_floats(id);
      auto free = std::find_if(slots.begin(), slots.end(),
                               [&](const Slot& s) { return s.floats >= floats && s.busy_until < si; });
      if (free == slots.end()) {
        slots.push_back({resident_floats, floats, 0});
        resident_floats += floats;
        free = slots.end() - 1;
      }
      free->busy_until = last_reader[id];
      resident[id] = free->offset;
    });
  plan_steps();
  bs.rows = Buffer(HeapAllocator::instance(), std::max<size_t>(rows_floats, 1) * sizeof(float));
  bs.resident = Buffer(HeapAllocator::instance(), std::max<size_t>(resident_floats, 1) * sizeof(float));
  for (const Placed& p : placed) p.operand->data = (p.resident ? bs.resident : bs.rows).as<float>() + p.offset;
  kernels::ScratchNeed need;
  for (size_t si = 0; si < m.steps_.size(); ++si) {
    const BatchState::Step& plan = bs.steps[si];
    if (!plan.batched) continue;
    const Method::Step& step = m.steps_[si];
    const size_t body = step.first + (step.folded ? 1 : 0);
    const OpDef& op = *m.nodes_[body].op;
    if (!op.plan) continue;  // its one kernel, no scratch
    const std::span<const std::vector<Tensor>> ins(plan.operands.ins);
    need.merge(
        op.plan(*m.kernels_, false, ins.subspan(body - step.first), m.nodes_[body].prepared.get(), step.folded_op)
            .scratch);
  }
  bs.workspace.reserve(need, pool_threads);
}

Status Execution::run_batch(std::span<Execution* const> batch, ThreadPool* pool) {
  if (std::string problem = batch_problem(batch); !problem.empty()) return Status::error(cat("run_batch: ", problem));
  if (batch.empty()) return {};
  if (batch.size() == 1) return batch[0]->run(pool);
  for (Execution* e : batch)
    if (Status s = e->check_bound(); !s.ok()) return s;
  ScopedThreadPool scoped(pool);
  const int pool_threads = pool ? pool->threads() : 1;
  Execution& lead = *batch[0];
  const Method& m = *lead.method_;
  int threads = 1;
  bool few_rows = true;  // every execution runs a one-row linear on the few-rows variant
  for (Execution* e : batch) {
    threads = e->prepare_run(pool_threads);
    few_rows = few_rows && e->active_rows_ < 0 && e->kernel_rows_ != &e->method_->many_rows_kernels_;
  }
  lead.plan_batch(batch.size(), pool_threads);
  BatchState& bs = *lead.batch_;
  std::vector<StepCut> cuts(batch.size());
  std::vector<Status> statuses(batch.size());
  // Steps [first, end) of every execution on its own buffers, as run() runs them: `together`, in
  // one parallel region over the executions, each one's steps on one thread (its kernels inline);
  // else one execution after another, up to the first error.
  auto each_execution = [&](size_t first, size_t end, bool together) -> Status {
    auto run = [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        Status& status = statuses[size_t(b)];
        kernels::ScopedWorkspace scratch(&batch[size_t(b)]->workspace_);
        for (size_t s = first; s < end && status.ok(); ++s) status = batch[size_t(b)]->run_step(s, cuts[size_t(b)]);
        if (!together && !status.ok()) return;
      }
    };
    if (together)
      parallel_for(int64_t(batch.size()), 1, run);
    else
      run(0, int64_t(batch.size()));
    for (const Status& s : statuses)
      if (!s.ok()) return s;
    return {};
  };
  for (size_t si = 0; si < m.steps_.size(); ++si) {
    const BatchState::Step& plan = bs.steps[si];
    if (!plan.batched && few_rows && threads > 1) {
      // A run of steps that never run batched (the embedding, rope, cache writes, attention:
      // each execution's own rows and caches) as one region instead of one per execution and
      // step. Every kernel gives the same bits on one thread as on several.
      size_t end = si + 1;
      while (end < m.steps_.size() && !bs.steps[end].batched) ++end;
      ScopedIdlePrefetch idle(lead.idle_plans_[end - 1]);
      if (Status s = each_execution(si, end, true); !s.ok()) return s;
      si = end - 1;
      continue;
    }
    ScopedIdlePrefetch idle(threads > 1 ? std::span<const PrefetchRange>(lead.idle_plans_[si])
                                        : std::span<const PrefetchRange>());
    const size_t sliceable = m.steps_[si].sliceable_output;
    bool batched = plan.batched && few_rows;
    for (Execution* e : batch) batched = batched && (sliceable == SIZE_MAX || e->output_rows_[sliceable].second < 0);
    if (!batched) {
      if (Status s = each_execution(si, si + 1, false); !s.ok()) return s;
      continue;
    }
    float* rows = bs.rows.as<float>();
    for (size_t b = 0; b < batch.size(); ++b)
      for (const auto& r : plan.gather)
        std::memcpy(rows + r.offset + b * r.floats, batch[b]->tensor(r.value).data, r.floats * sizeof(float));
    {
      kernels::ScopedWorkspace scratch(&bs.workspace);
      if (Status s = lead.run_nodes(si, m.few_rows_kernels_, plan.operands.ins, plan.operands.outs); !s.ok()) return s;
    }
    for (size_t b = 0; b < batch.size(); ++b)
      for (const auto& r : plan.scatter)
        std::memcpy(batch[b]->tensor(r.value).data, rows + r.offset + b * r.floats, r.floats * sizeof(float));
  }
  return {};
}

}  // namespace hfstatic
