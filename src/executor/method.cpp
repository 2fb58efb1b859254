#include "executor/method.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>

#include "kernels/parallel.h"
#include "kernels/thread_pool.h"
#include "util/env.h"

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
uint64_t plan_arena(std::vector<Interval*>& items) {
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

// Value id is no method output and only nodes [first, end) read it (readers: the nodes reading
// each value).
bool read_only_within(const std::vector<std::vector<size_t>>& readers, const std::vector<bool>& is_output, size_t id,
                      size_t first, size_t end) {
  return !is_output[id] && std::all_of(readers[id].begin(), readers[id].end(), [&](size_t n) { return n >= first && n < end; });
}

std::atomic<bool>& op_folding_switch() {
  static std::atomic<bool> enabled = env_switch_on("HFSTATIC_FOLD");
  return enabled;
}
}  // namespace

bool op_folding_enabled() { return op_folding_switch().load(std::memory_order_relaxed); }
void set_op_folding_enabled(bool enabled) { op_folding_switch().store(enabled, std::memory_order_relaxed); }

void Method::fold_into_linear_steps(const std::vector<std::vector<size_t>>& readers, const std::vector<bool>& is_output) {
  const OpDef* linear = find_op("linear");
  std::vector<Step> steps;
  for (const Step& step : steps_) {
    if (nodes_[step.first].op == linear && !steps.empty() && steps.back().count == 1 && !steps.back().folded) {
      const size_t x = nodes_[step.first].inputs[0];
      const Node& before = nodes_[steps.back().first];
      if (folds_into_linear(before.op) && before.outputs[0] == x &&
          read_only_within(readers, is_output, x, step.first, step.first + step.count)) {
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

size_t Method::num_folded_steps() const {
  return size_t(std::count_if(steps_.begin(), steps_.end(), [](const Step& s) { return s.folded; }));
}

std::shared_ptr<const Method> Method::load(std::shared_ptr<const Program> program, const std::string& name,
                                          const RuntimeOptions& options) {
  const MethodSpec* spec = program->spec().find_method(name);
  if (!spec) fail("program has no method '", name, "'");
  auto m = std::shared_ptr<Method>(new Method());
  m->program_ = program;
  m->spec_ = spec;
  const std::string where = cat("method '", name, "'");

  std::map<std::string, size_t> ids;
  auto add_value = [&](Value v) {
    if (ids.count(v.name)) fail(where, ": value '", v.name, "' is defined twice");
    ids[v.name] = m->values_.size();
    m->values_.push_back(std::move(v));
  };
  for (size_t i = 0; i < spec->inputs.size(); ++i) {
    const auto& in = spec->inputs[i];
    if (program->weight(in.name).info) fail(where, ": input '", in.name, "' has the name of a weight");
    add_value({in.name, in.dtype, in.shape, Storage::Input, i});
  }
  std::map<std::string, size_t> unplanned_outputs;
  for (size_t i = 0; i < spec->outputs.size(); ++i)
    if (spec->outputs[i].memory == OutputMemory::Unplanned) unplanned_outputs[spec->outputs[i].value] = i;
  for (const auto& v : spec->values) {
    if (program->weight(v.name).info) fail(where, ": value '", v.name, "' has the name of a weight");
    auto u = unplanned_outputs.find(v.name);
    Value value{v.name, v.dtype, v.shape, u == unplanned_outputs.end() ? Storage::Arena : Storage::Unplanned};
    if (u != unplanned_outputs.end()) value.index = u->second;
    value.bytes = uint64_t(*shape_numel(v.shape)) * dtype_size(v.dtype);
    add_value(std::move(value));
  }

  // Nodes in order: operands resolve to inputs, weights or values produced by earlier nodes.
  std::vector<bool> produced(m->values_.size(), false);
  std::vector<size_t> first_use(m->values_.size(), SIZE_MAX), last_use(m->values_.size(), 0);
  std::set<size_t> mutated;
  for (size_t ni = 0; ni < spec->nodes.size(); ++ni) {
    const NodeSpec& ns = spec->nodes[ni];
    const std::string nwhere = cat(where, " node ", ni, " (", ns.op, ")");
    Node node;
    node.op = find_op(ns.op);
    if (!node.op) fail(nwhere, ": unknown op '", ns.op, "'");
    std::vector<OpOperand> operands;
    for (const auto& in_name : ns.inputs) {
      auto it = ids.find(in_name);
      if (it == ids.end()) {
        WeightRef w = program->weight(in_name);
        if (!w.info) fail(nwhere, ": operand '", in_name, "' is not an input, a weight or a declared value");
        Value v{in_name, w.info->dtype, w.info->shape, Storage::Weight};
        v.weight = w.data;
        add_value(std::move(v));
        produced.push_back(true);
        first_use.push_back(SIZE_MAX);
        last_use.push_back(0);
        it = ids.find(in_name);
      }
      size_t id = it->second;
      const Value& v = m->values_[id];
      if ((v.storage == Storage::Arena || v.storage == Storage::Unplanned) && !produced[id])
        fail(nwhere, ": operand '", in_name, "' is used before any node produces it");
      node.inputs.push_back(id);
      last_use[id] = ni;
    }
    std::vector<ValueSpec> operand_specs;
    operand_specs.reserve(node.inputs.size());
    for (size_t id : node.inputs) operand_specs.push_back({m->values_[id].name, m->values_[id].dtype, m->values_[id].shape});
    for (size_t k = 0; k < node.inputs.size(); ++k)
      operands.push_back({&operand_specs[k], m->values_[node.inputs[k]].storage == Storage::Weight});
    OpSignature sig;
    try {
      sig = node.op->check(operands, ns.attrs);
    } catch (const Error& e) {
      fail(nwhere, ": ", e.what());
    }
    if (ns.outputs.size() != sig.outputs.size())
      fail(nwhere, ": produces ", sig.outputs.size(), " outputs, the node lists ", ns.outputs.size());
    for (size_t k : sig.mutated_inputs) {
      const Value& v = m->values_[node.inputs[k]];
      if (v.storage != Storage::Input)
        fail(nwhere, ": updates operand '", v.name, "' in place, but only method inputs may be updated");
      mutated.insert(node.inputs[k]);
    }
    for (size_t k = 0; k < ns.outputs.size(); ++k) {
      auto it = ids.find(ns.outputs[k]);
      if (it == ids.end()) fail(nwhere, ": output '", ns.outputs[k], "' is not a declared value");
      size_t id = it->second;
      Value& v = m->values_[id];
      if (v.storage == Storage::Input || v.storage == Storage::Weight)
        fail(nwhere, ": output '", v.name, "' names an input or a weight");
      if (produced[id]) fail(nwhere, ": value '", v.name, "' is produced twice");
      const ValueSpec& want = sig.outputs[k];
      if (v.dtype != want.dtype || v.shape != want.shape)
        fail(nwhere, ": output '", v.name, "' is declared ", dtype_name(v.dtype), " ", shape_str(v.shape), " but the op produces ",
             dtype_name(want.dtype), " ", shape_str(want.shape));
      produced[id] = true;
      first_use[id] = ni;
      last_use[id] = std::max(last_use[id], ni);
      node.outputs.push_back(id);
    }
    node.prepared = std::move(sig.prepared);
    m->nodes_.push_back(std::move(node));
  }
  for (size_t id = 0; id < m->values_.size(); ++id)
    if ((m->values_[id].storage == Storage::Arena || m->values_[id].storage == Storage::Unplanned) && !produced[id])
      fail(where, ": value '", m->values_[id].name, "' is declared but no node produces it");

  // Steps: a node joins the previous one's step when both run the same groupable op on the
  // same first input and it reads nothing the step writes.
  for (size_t ni = 0; ni < m->nodes_.size(); ++ni) {
    const Node& node = m->nodes_[ni];
    bool joins = false;
    if (!m->steps_.empty() && node.op->run_group) {
      const Step& step = m->steps_.back();
      const Node& head = m->nodes_[step.first];
      joins = head.op == node.op && head.inputs[0] == node.inputs[0];
      for (size_t k = step.first; joins && k < ni; ++k)
        for (size_t out : m->nodes_[k].outputs)
          if (std::find(node.inputs.begin(), node.inputs.end(), out) != node.inputs.end()) joins = false;
    }
    if (joins) ++m->steps_.back().count;
    else m->steps_.push_back({ni, 1});
  }

  // Outputs.
  std::set<std::string> output_names;
  const size_t end_of_method = spec->nodes.size();
  for (size_t i = 0; i < spec->outputs.size(); ++i) {
    const OutputSpec& o = spec->outputs[i];
    const std::string owhere = cat(where, " output ", i, " '", o.name, "'");
    if (!output_names.insert(o.name).second) fail(owhere, ": output name is used twice");
    auto it = ids.find(o.value);
    if (it == ids.end()) fail(owhere, ": value '", o.value, "' does not exist");
    const Value& v = m->values_[it->second];
    switch (o.memory) {
      case OutputMemory::Alias:
        if (v.storage != Storage::Input) fail(owhere, ": an alias output must name a method input, '", o.value, "' is not one");
        if (!mutated.count(it->second)) fail(owhere, ": aliases input '", o.value, "', which no node updates");
        m->outputs_.push_back({it->second, v.index});
        break;
      case OutputMemory::Planned:
        if (v.storage != Storage::Arena) fail(owhere, ": a planned output must name a value a node produces");
        last_use[it->second] = end_of_method;  // lives until the caller reads it
        m->outputs_.push_back({it->second, i});
        break;
      case OutputMemory::Unplanned:
        if (v.storage != Storage::Unplanned) fail(owhere, ": an unplanned output must name a value a node produces, '", o.value, "' is not one");
        if (v.index != i) fail(owhere, ": value '", o.value, "' backs more than one output");
        m->outputs_.push_back({it->second, i});
        break;
    }
  }

  std::vector<bool> is_output(m->values_.size(), false);
  for (const Output& o : m->outputs_) is_output[o.value] = true;
  std::vector<std::vector<size_t>> readers(m->values_.size());
  for (size_t ni = 0; ni < m->nodes_.size(); ++ni)
    for (size_t id : m->nodes_[ni].inputs)
      if (readers[id].empty() || readers[id].back() != ni) readers[id].push_back(ni);
  if (op_folding_enabled()) m->fold_into_linear_steps(readers, is_output);
  std::vector<size_t> step_of(m->nodes_.size() + 1);
  for (size_t si = 0; si < m->steps_.size(); ++si)
    for (size_t k = 0; k < m->steps_[si].count; ++k) step_of[m->steps_[si].first + k] = si;
  step_of[m->nodes_.size()] = m->steps_.size();

  // Steps of row-wise nodes whose one value read outside the step is a [1, T, N] method output
  // that no node reads.
  for (size_t i = 0; i < m->outputs_.size(); ++i) {
    if (spec->outputs[i].memory == OutputMemory::Alias) continue;
    const size_t id = m->outputs_[i].value;
    const Value& v = m->values_[id];
    if (v.shape.size() != 3 || v.shape[0] != 1 || !readers[id].empty()) continue;
    for (Step& step : m->steps_) {
      bool produces = false, sliceable = true;
      for (size_t k = step.first; k < step.first + step.count; ++k) {
        const Node& node = m->nodes_[k];
        sliceable = sliceable && node.op->row_wise;
        for (size_t out : node.outputs) {
          if (out == id) produces = true;
          else sliceable = sliceable && read_only_within(readers, is_output, out, step.first, step.first + step.count);
        }
      }
      if (produces && sliceable) step.sliceable_output = i;
    }
  }

  std::vector<Interval> intervals;
  std::vector<size_t> interval_value;
  for (size_t id = 0; id < m->values_.size(); ++id) {
    if (m->values_[id].storage != Storage::Arena) continue;
    // A step reads all its inputs while it writes all its outputs.
    intervals.push_back({0, m->values_[id].bytes, step_of[first_use[id]], step_of[last_use[id]]});
    interval_value.push_back(id);
  }
  std::vector<Interval*> order;
  for (auto& iv : intervals) order.push_back(&iv);
  m->arena_bytes_ = plan_arena(order);
  for (size_t k = 0; k < intervals.size(); ++k) m->values_[interval_value[k]].offset = intervals[k].offset;
  return m;
}

Execution::Execution(std::shared_ptr<const Method> method, BufferAllocator& allocator)
    : method_(std::move(method)),
      arena_(allocator, std::max<uint64_t>(method_->arena_bytes(), 64)),
      inputs_(method_->num_inputs(), nullptr),
      outputs_(method_->num_outputs(), nullptr),
      output_rows_(method_->num_outputs(), {0, -1}) {}

void Execution::bind_input(size_t i, void* data) {
  if (i >= inputs_.size()) fail("method '", method_->name(), "': input index ", i, " out of range (", inputs_.size(), " inputs)");
  if (inputs_[i] != data) idle_plans_threads_ = 0;
  inputs_[i] = data;
}

void Execution::bind_output(size_t i, void* data) {
  if (i >= outputs_.size()) fail("method '", method_->name(), "': output index ", i, " out of range (", outputs_.size(), " outputs)");
  if (method_->output_memory(i) != OutputMemory::Unplanned)
    fail("method '", method_->name(), "': output ", i, " '", method_->spec().outputs[i].name, "' is ",
         output_memory_name(method_->output_memory(i)), ", only unplanned outputs take a buffer");
  if (outputs_[i] != data) idle_plans_threads_ = 0;
  outputs_[i] = data;
}

void Execution::set_output_rows(size_t i, int64_t begin, int64_t end) {
  const std::string where = cat("method '", method_->name(), "'");
  if (i >= outputs_.size()) fail(where, ": output index ", i, " out of range (", outputs_.size(), " outputs)");
  const std::string owhere = cat(where, " output ", i, " '", method_->spec().outputs[i].name, "'");
  if (method_->output_memory(i) == OutputMemory::Alias) fail(owhere, " is an alias of an input; its rows cannot be limited");
  const Shape& shape = method_->values_[method_->outputs_[i].value].shape;
  if (shape.size() != 3 || shape[0] != 1) fail(owhere, " is ", shape_str(shape), ", not [1, T, N]; its rows cannot be limited");
  if (begin < 0 || end > shape[1] || begin >= end)
    fail(owhere, ": rows [", begin, ", ", end, ") are not a non-empty range within its ", shape[1], " rows");
  output_rows_[i] = begin == 0 && end == shape[1] ? std::pair<int64_t, int64_t>{0, -1} : std::pair{begin, end};
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

Status Execution::run(ThreadPool* pool) {
  const Method& m = *method_;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!inputs_[i])
      return Status::error(cat("method '", m.name(), "': input ", i, " '", m.input(i).name, "' is not bound"));
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (m.output_memory(i) == OutputMemory::Unplanned && !outputs_[i])
      return Status::error(cat("method '", m.name(), "': output ", i, " '", m.spec().outputs[i].name,
                               "' is unplanned and has no bound buffer; bind one before running"));
  ScopedThreadPool scoped(pool);
  auto tensor = [&](size_t id) {
    const Method::Value& v = m.values_[id];
    void* data = nullptr;
    switch (v.storage) {
      case Method::Storage::Input: data = inputs_[v.index]; break;
      case Method::Storage::Weight: data = const_cast<uint8_t*>(v.weight); break;
      case Method::Storage::Arena: data = static_cast<uint8_t*>(arena_.data()) + v.offset; break;
      case Method::Storage::Unplanned: data = outputs_[v.index]; break;
      case Method::Storage::Folded: break;
    }
    return Tensor{data, v.dtype, &v.shape};
  };
  // While the threads wait at the end of a step, they prefetch what they will read first in the
  // next step that says so (the weights of the next linear): the memory would idle otherwise.
  const int threads = pool && idle_prefetch_enabled() ? pool->threads() : 1;
  if (threads > 1 && idle_plans_threads_ != threads) {
    constexpr size_t kIdlePrefetchBytes = size_t(256) << 10;  // a fraction of a core's L2
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
      next = head.op->first_reads(step_ins, threads, kIdlePrefetchBytes);
    }
    idle_plans_threads_ = threads;
  }
  std::vector<std::vector<Tensor>> ins, outs;  // per node of the step
  std::vector<Shape> slices;                     // shapes of row slices, alive while their step runs
  for (size_t si = 0; si < m.steps_.size(); ++si) {
    const Method::Step& step = m.steps_[si];
    const Method::Node& head = m.nodes_[step.first];
    ScopedIdlePrefetch idle(threads > 1 ? std::span<const PrefetchRange>(idle_plans_[si]) : std::span<const PrefetchRange>());
    ins.resize(step.count);
    outs.resize(step.count);
    for (size_t k = 0; k < step.count; ++k) {
      const Method::Node& node = m.nodes_[step.first + k];
      ins[k].clear();
      outs[k].clear();
      for (size_t id : node.inputs) ins[k].push_back(tensor(id));
      for (size_t id : node.outputs) outs[k].push_back(tensor(id));
    }
    if (step.sliceable_output != SIZE_MAX && output_rows_[step.sliceable_output].second >= 0) {
      // Every [1, T, *] operand of the step, cut to the wanted rows.
      const auto [begin, end] = output_rows_[step.sliceable_output];
      const int64_t rows = m.values_[m.outputs_[step.sliceable_output].value].shape[1];
      slices.clear();
      for (size_t k = 0; k < step.count; ++k) slices.resize(slices.size() + ins[k].size() + outs[k].size());
      size_t next = 0;
      for (size_t k = 0; k < step.count; ++k)
        for (std::vector<Tensor>* list : {&ins[k], &outs[k]})
          for (Tensor& t : *list) {
            const Shape& shape = *t.shape;
            if (shape.size() != 3 || shape[0] != 1 || shape[1] != rows) continue;
            if (t.data) t.data = static_cast<uint8_t*>(t.data) + size_t(begin * shape[2]) * dtype_size(t.dtype);
            slices[next] = Shape{1, end - begin, shape[2]};
            t.shape = &slices[next++];
          }
    }
    Status s;
    if (step.folded) s = run_linear_folded(head.op, head.prepared.get(), ins, outs);
    else if (step.count == 1) s = head.op->run(ins[0], outs[0], head.prepared.get());
    else s = head.op->run_group(ins, outs);
    if (!s.ok()) {
      const std::string nodes = step.count == 1 ? cat("node ", step.first) : cat("nodes ", step.first, "-", step.first + step.count - 1);
      return Status::error(cat("method '", m.name(), "' ", nodes, " (", head.op->name, "): ", s.message()));
    }
  }
  return {};
}

}  // namespace hfstatic
