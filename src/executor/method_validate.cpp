// Method::load's validation: every value defined before use and produced once, each node's
// operands against its op, declared values equal to what the op produces, in-place updates only
// on method inputs, outputs resolvable.
#include <algorithm>

#include "executor/method.h"

namespace hfstatic {

void Method::add_values(Uses& uses) {
  const std::string where = cat("method '", name(), "'");
  auto add_value = [&](Value v) {
    if (uses.ids.count(v.name)) fail(where, ": value '", v.name, "' is defined twice");
    uses.ids[v.name] = values_.size();
    values_.push_back(std::move(v));
  };
  for (size_t i = 0; i < spec_->inputs.size(); ++i) {
    const auto& in = spec_->inputs[i];
    if (program_->weight(in.name).info) fail(where, ": input '", in.name, "' has the name of a weight");
    add_value({in.name, in.dtype, in.shape, Storage::Input, i});
  }
  std::map<std::string, size_t> unplanned_outputs;
  for (size_t i = 0; i < spec_->outputs.size(); ++i)
    if (spec_->outputs[i].memory == OutputMemory::Unplanned) unplanned_outputs[spec_->outputs[i].value] = i;
  for (const auto& v : spec_->values) {
    if (program_->weight(v.name).info) fail(where, ": value '", v.name, "' has the name of a weight");
    auto u = unplanned_outputs.find(v.name);
    Value value{v.name, v.dtype, v.shape, u == unplanned_outputs.end() ? Storage::Arena : Storage::Unplanned};
    if (u != unplanned_outputs.end()) value.index = u->second;
    value.bytes = uint64_t(*shape_numel(v.shape)) * dtype_size(v.dtype);
    add_value(std::move(value));
  }
  uses.produced.assign(values_.size(), false);
  uses.first.assign(values_.size(), SIZE_MAX);
  uses.last.assign(values_.size(), 0);
}

size_t Method::add_weight(const std::string& weight_name, Uses& uses) {
  WeightRef w = program_->weight(weight_name);
  Value v{weight_name, w.info->dtype, w.info->shape, Storage::Weight};
  v.weight = w.data;
  uses.ids[weight_name] = values_.size();
  values_.push_back(std::move(v));
  uses.produced.push_back(true);
  uses.first.push_back(SIZE_MAX);
  uses.last.push_back(0);
  return values_.size() - 1;
}

// Node `index` in order: operands resolve to inputs, weights or values produced by earlier nodes.
void Method::add_node(size_t index, Uses& uses) {
  const NodeSpec& ns = spec_->nodes[index];
  const std::string nwhere = cat("method '", name(), "' node ", index, " (", ns.op, ")");
  Node node;
  node.op = find_op(ns.op);
  if (!node.op) fail(nwhere, ": unknown op '", ns.op, "'");
  for (const auto& in_name : ns.inputs) {
    auto it = uses.ids.find(in_name);
    size_t id;
    if (it != uses.ids.end()) {
      id = it->second;
    } else {
      if (!program_->weight(in_name).info)
        fail(nwhere, ": operand '", in_name, "' is not an input, a weight or a declared value");
      id = add_weight(in_name, uses);
    }
    const Value& v = values_[id];
    if ((v.storage == Storage::Arena || v.storage == Storage::Unplanned) && !uses.produced[id])
      fail(nwhere, ": operand '", in_name, "' is used before any node produces it");
    node.inputs.push_back(id);
    uses.last[id] = index;
  }
  std::vector<ValueSpec> operand_specs;
  operand_specs.reserve(node.inputs.size());
  for (size_t id : node.inputs) {
    const Value& v = values_[id];
    // An empty operand has nothing to compute on: a width of 0 would divide by zero in a norm.
    if (std::find(v.shape.begin(), v.shape.end(), 0) != v.shape.end())
      fail(nwhere, ": operand '", v.name, "' has shape ", shape_str(v.shape), ", with a dimension of 0");
    operand_specs.push_back({v.name, v.dtype, v.shape});
  }
  std::vector<OpOperand> operands;
  for (size_t k = 0; k < node.inputs.size(); ++k)
    operands.push_back({&operand_specs[k], values_[node.inputs[k]].storage == Storage::Weight});
  OpSignature sig;
  try {
    sig = node.op->check(operands, ns.attrs);
  } catch (const Error& e) {
    fail(nwhere, ": ", e.what());
  }
  if (ns.outputs.size() != sig.outputs.size())
    fail(nwhere, ": produces ", sig.outputs.size(), " outputs, the node lists ", ns.outputs.size());
  for (size_t k : sig.mutated_inputs) {
    const Value& v = values_[node.inputs[k]];
    if (v.storage != Storage::Input)
      fail(nwhere, ": updates operand '", v.name, "' in place, but only method inputs may be updated");
    uses.mutated.insert(node.inputs[k]);
  }
  for (size_t k = 0; k < ns.outputs.size(); ++k) {
    auto it = uses.ids.find(ns.outputs[k]);
    if (it == uses.ids.end()) fail(nwhere, ": output '", ns.outputs[k], "' is not a declared value");
    size_t id = it->second;
    Value& v = values_[id];
    if (v.storage == Storage::Input || v.storage == Storage::Weight)
      fail(nwhere, ": output '", v.name, "' names an input or a weight");
    if (uses.produced[id]) fail(nwhere, ": value '", v.name, "' is produced twice");
    const ValueSpec& want = sig.outputs[k];
    if (v.dtype != want.dtype || v.shape != want.shape)
      fail(nwhere, ": output '", v.name, "' is declared ", dtype_name(v.dtype), " ", shape_str(v.shape),
           " but the op produces ", dtype_name(want.dtype), " ", shape_str(want.shape));
    uses.produced[id] = true;
    uses.first[id] = index;
    uses.last[id] = std::max(uses.last[id], index);
    node.outputs.push_back(id);
  }
  node.prepared = std::move(sig.prepared);
  nodes_.push_back(std::move(node));
}

void Method::check_all_produced(const Uses& uses) const {
  for (size_t id = 0; id < values_.size(); ++id)
    if ((values_[id].storage == Storage::Arena || values_[id].storage == Storage::Unplanned) && !uses.produced[id])
      fail("method '", name(), "': value '", values_[id].name, "' is declared but no node produces it");
}

void Method::add_outputs(Uses& uses) {
  std::set<std::string> output_names;
  const size_t end_of_method = spec_->nodes.size();
  for (size_t i = 0; i < spec_->outputs.size(); ++i) {
    const OutputSpec& o = spec_->outputs[i];
    const std::string owhere = cat("method '", name(), "' output ", i, " '", o.name, "'");
    if (!output_names.insert(o.name).second) fail(owhere, ": output name is used twice");
    auto it = uses.ids.find(o.value);
    if (it == uses.ids.end()) fail(owhere, ": value '", o.value, "' does not exist");
    const Value& v = values_[it->second];
    switch (o.memory) {
      case OutputMemory::Alias:
        if (v.storage != Storage::Input)
          fail(owhere, ": an alias output must name a method input, '", o.value, "' is not one");
        if (!uses.mutated.count(it->second)) fail(owhere, ": aliases input '", o.value, "', which no node updates");
        outputs_.push_back({it->second, v.index});
        break;
      case OutputMemory::Planned:
        if (v.storage != Storage::Arena) fail(owhere, ": a planned output must name a value a node produces");
        uses.last[it->second] = end_of_method;  // lives until the caller reads it
        outputs_.push_back({it->second, i});
        break;
      case OutputMemory::Unplanned:
        if (v.storage != Storage::Unplanned)
          fail(owhere, ": an unplanned output must name a value a node produces, '", o.value, "' is not one");
        if (v.index != i) fail(owhere, ": value '", o.value, "' backs more than one output");
        outputs_.push_back({it->second, i});
        break;
    }
  }
}

}  // namespace hfstatic
