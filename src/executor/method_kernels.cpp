// Method::load's kernel planning: the tables every step runs with, and each step's variants and
// scratch (OpDef::plan), so that a run allocates nothing and `hfstatic inspect --plan` can say
// what runs.
#include <algorithm>

#include "executor/method.h"

namespace hfstatic {

namespace {
// "linear x3", or the op alone.
std::string op_count(const char* op, size_t count) {
  return count == 1 ? std::string(op) : std::string(op) + " x" + std::to_string(count);
}
}  // namespace

void Method::plan_kernels() {
  few_rows_kernels_ = kernels_->for_rows(1);
  many_rows_kernels_ = kernels_->for_rows(kernels::kManyRows);
  const bool planned_many = rows_ >= kernels::kManyRows;
  planned_kernels_ = planned_many ? &many_rows_kernels_ : rows_ > 0 ? &few_rows_kernels_ : kernels_;
  // An operand as planning sees it: weights with their data, the others with their shapes only.
  auto at_load = [&](size_t id) {
    const Value& v = values_[id];
    return Tensor{const_cast<uint8_t*>(v.weight), v.dtype, &v.shape};
  };
  for (Step& step : steps_) {
    const size_t body = step.folded ? step.first + 1 : step.first;  // the node whose op runs the step
    const Node& head = nodes_[step.first];
    const Node& runs = nodes_[body];
    StepPlan plan;
    plan.first_node = step.first;
    plan.nodes = step.count;
    plan.sliceable = step.sliceable_output != SIZE_MAX;
    plan.ops = step.folded ? std::string(head.op->name) + " + " + op_count(runs.op->name, step.count - 1)
                           : op_count(runs.op->name, step.count);
    if (step.folded) {
      std::vector<Tensor> head_ins;
      for (size_t id : head.inputs) head_ins.push_back(at_load(id));
      step.folded_op = head.op->linear_fusion(head_ins, head.prepared.get()).norm_w ? kernels::FoldedOp::Norm
                                                                                    : kernels::FoldedOp::Gate;
    }
    if (runs.op->plan) {
      std::vector<std::vector<Tensor>> ins;
      for (size_t k = body; k < step.first + step.count; ++k) {
        ins.emplace_back();
        for (size_t id : nodes_[k].inputs) ins.back().push_back(at_load(id));
      }
      const kernels::KernelPlan many = runs.op->plan(*kernels_, true, ins, runs.prepared.get(), step.folded_op);
      const kernels::KernelPlan few = runs.op->plan(*kernels_, false, ins, runs.prepared.get(), step.folded_op);
      plan.variant = planned_many ? many.variant : few.variant;
      plan.few_rows = few.variant;
      plan.scratch = planned_many ? many.scratch : few.scratch;
      plan.scratch.merge(few.scratch);
    }
    scratch_.merge(plan.scratch);
    step_plans_.push_back(std::move(plan));
  }
}

}  // namespace hfstatic
