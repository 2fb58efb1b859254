// Method::load's planning: the steps nodes run as (grouping, folding), the steps that can run on
// a slice of rows, and the arena.
#include <algorithm>

#include "executor/method.h"

namespace hfstatic {

namespace {
constexpr uint64_t kArenaAlignment = 64;

uint64_t align_up(uint64_t v) { return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

struct Interval {
  uint64_t offset, bytes;
  size_t first, last;  // steps where the value is live
};

// Greedy-by-size placement: each value, largest first, takes the lowest offset not used by an
// already placed value whose lifetime overlaps.
uint64_t place_intervals(std::vector<Interval*>& items) {
  std::sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->bytes > b->bytes; });
  std::vector<Interval*> placed;
  uint64_t total = 0;
  for (Interval* it : items) {
    std::vector<Interval*> overlapping;
    for (Interval* p : placed)
      if (!(p->last < it->first || it->last < p->first)) overlapping.push_back(p);
    std::sort(overlapping.begin(), overlapping.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    uint64_t offset = 0;
    for (Interval* p : overlapping) {
      if (offset + it->bytes <= p->offset) break;
      offset = std::max(offset, align_up(p->offset + p->bytes));
    }
    it->offset = offset;
    total = std::max(total, align_up(offset + it->bytes));
    placed.push_back(it);
  }
  return total;
}
}  // namespace

bool Method::Readers::only_within(size_t id, size_t first, size_t end) const {
  return !is_output[id] &&
         std::all_of(nodes[id].begin(), nodes[id].end(), [&](size_t n) { return n >= first && n < end; });
}

// A node joins the previous one's step when both run the same groupable op on the same first
// input and it reads nothing the step writes.
void Method::group_steps() {
  for (size_t ni = 0; ni < nodes_.size(); ++ni) {
    const Node& node = nodes_[ni];
    bool joins = false;
    if (!steps_.empty() && node.op->run_group) {
      const Step& step = steps_.back();
      const Node& head = nodes_[step.first];
      joins = head.op == node.op && head.inputs[0] == node.inputs[0];
      for (size_t k = step.first; joins && k < ni; ++k)
        for (size_t out : nodes_[k].outputs)
          if (std::find(node.inputs.begin(), node.inputs.end(), out) != node.inputs.end()) joins = false;
    }
    if (joins)
      ++steps_.back().count;
    else
      steps_.push_back({ni, 1});
  }
}

Method::Readers Method::readers() const {
  Readers r;
  r.is_output.assign(values_.size(), false);
  for (const Output& o : outputs_) r.is_output[o.value] = true;
  r.nodes.resize(values_.size());
  for (size_t ni = 0; ni < nodes_.size(); ++ni)
    for (size_t id : nodes_[ni].inputs)
      if (r.nodes[id].empty() || r.nodes[id].back() != ni) r.nodes[id].push_back(ni);
  return r;
}

// A step whose op takes a LinearFusion takes in the one-node step just before it when that
// node's op has one, produces the step's input, and nothing else reads it.
void Method::fold_into_linear_steps(const Readers& readers) {
  std::vector<Step> steps;
  for (const Step& step : steps_) {
    if (nodes_[step.first].op->takes_linear_fusion && !steps.empty() && steps.back().count == 1 &&
        !steps.back().folded) {
      const size_t x = nodes_[step.first].inputs[0];
      const Node& before = nodes_[steps.back().first];
      if (before.op->linear_fusion && before.outputs[0] == x &&
          readers.only_within(x, step.first, step.first + step.count)) {
        steps.back().count += step.count;
        steps.back().folded = true;
        values_[x].storage = Storage::Folded;
        continue;
      }
    }
    steps.push_back(step);
  }
  steps_ = std::move(steps);
}

// Steps of row-wise nodes that feed only the wanted rows of a [1, T, N] method output that no
// node reads: the step that produces it, then, going back, each step whose values are read only
// inside it or by steps already marked, up to and including the first step of linear products
// (an op that takes a folded op: the lm_head). So an op after the lm_head (Gemma 2's final
// soft-cap) leaves the lm_head on the wanted rows too.
void Method::mark_sliceable_steps(const Readers& readers) {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (spec_->outputs[i].memory == OutputMemory::Alias) continue;
    const size_t id = outputs_[i].value;
    const Value& v = values_[id];
    if (v.shape.size() != 3 || v.shape[0] != 1 || !readers.nodes[id].empty()) continue;
    std::vector<bool> marked(nodes_.size(), false);  // the nodes of the steps marked for output i
    for (size_t s = steps_.size(); s-- > 0;) {
      Step& step = steps_[s];
      const size_t first = step.first, end = step.first + step.count;
      bool feeds = false, sliceable = true;
      for (size_t k = first; k < end; ++k) {
        const Node& node = nodes_[k];
        sliceable = sliceable && node.op->row_wise;
        for (size_t out : node.outputs) {
          const std::vector<size_t>& by = readers.nodes[out];
          // Read by marked steps, and by no other step.
          const bool to_marked = !readers.is_output[out] && std::any_of(by.begin(), by.end(), [&](size_t n) {
            return marked[n];
          }) && std::all_of(by.begin(), by.end(), [&](size_t n) { return marked[n] || (n >= first && n < end); });
          if (out == id || to_marked)
            feeds = true;
          else
            sliceable = sliceable && readers.only_within(out, first, end);
        }
      }
      if (!feeds || !sliceable) continue;
      step.sliceable_output = i;
      std::fill(marked.begin() + std::ptrdiff_t(first), marked.begin() + std::ptrdiff_t(end), true);
      if (nodes_[end - 1].op->takes_linear_fusion) break;
    }
  }
}

void Method::find_token_axis() {
  int64_t rows = 0;
  bool agree = true;
  for (Step& step : steps_)
    for (size_t k = step.first; k < step.first + step.count; ++k) {
      const Node& node = nodes_[k];
      for (const auto& [ids, bits] :
           {std::pair{&node.inputs, node.op->row_inputs}, {&node.outputs, node.op->row_outputs}})
        for (size_t i = 0; i < ids->size(); ++i) {
          if (!row_operand(bits, i)) continue;
          step.has_rows = true;
          const Shape& shape = values_[(*ids)[i]].shape;
          const int axis = token_axis(shape);
          const int64_t r = axis < 0 ? -1 : shape[size_t(axis)];
          if (r < 1 || (rows && r != rows)) agree = false;
          rows = r;
        }
    }
  rows_ = agree ? rows : 0;
}

// Every arena value lives from the step that produces it to the last step that reads it (a
// step reads all its inputs while it writes all its outputs); values whose lives do not
// overlap share space.
void Method::plan_arena(const Uses& uses) {
  std::vector<size_t> step_of(nodes_.size() + 1);
  for (size_t si = 0; si < steps_.size(); ++si)
    for (size_t k = 0; k < steps_[si].count; ++k) step_of[steps_[si].first + k] = si;
  step_of[nodes_.size()] = steps_.size();
  std::vector<Interval> intervals;
  std::vector<size_t> interval_value;
  for (size_t id = 0; id < values_.size(); ++id) {
    if (values_[id].storage != Storage::Arena) continue;
    intervals.push_back({0, values_[id].bytes, step_of[uses.first[id]], step_of[uses.last[id]]});
    interval_value.push_back(id);
  }
  std::vector<Interval*> order;
  for (auto& iv : intervals) order.push_back(&iv);
  arena_bytes_ = place_intervals(order);
  for (size_t k = 0; k < intervals.size(); ++k) values_[interval_value[k]].offset = intervals[k].offset;
}

}  // namespace hfstatic
