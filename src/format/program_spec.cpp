#include "format/program_spec.h"

#include <iterator>

#include "util/error.h"

namespace hfstatic {

using nlohmann::json;

const char* output_memory_name(OutputMemory m) {
  switch (m) {
    case OutputMemory::Alias: return "alias";
    case OutputMemory::Planned: return "planned";
    case OutputMemory::Unplanned: return "unplanned";
  }
  return "?";
}

const ValueSpec* MethodSpec::find_value(const std::string& n) const {
  for (const auto& v : inputs)
    if (v.name == n) return &v;
  for (const auto& v : values)
    if (v.name == n) return &v;
  return nullptr;
}

const ValueSpec* MethodSpec::output_value(size_t i) const {
  return i < outputs.size() ? find_value(outputs[i].value) : nullptr;
}

const MethodSpec* ProgramSpec::find_method(const std::string& n) const {
  for (const auto& m : methods)
    if (m.name == n) return &m;
  return nullptr;
}

json weight_quant_attrs(const WeightQuant& q) {
  return {{kWeightDtypeAttr, dtype_name(q.dtype)}, {kGroupSizeAttr, q.group}};
}

bool is_quant_group_size(int64_t group) {
  for (int64_t g : kQuantGroupSizes)
    if (g == group) return true;
  return false;
}

std::string quant_group_sizes_text() {
  const size_t n = std::size(kQuantGroupSizes);
  std::string text;
  for (size_t i = 0; i < n; ++i)
    text += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::to_string(kQuantGroupSizes[i]);
  return text;
}

std::optional<WeightQuant> weight_quant_from_attrs(const json& attrs) {
  auto it = attrs.find(kWeightDtypeAttr);
  if (it == attrs.end()) return std::nullopt;
  WeightQuant q;
  if (it->is_string() && *it == "int8")
    q.dtype = DType::I8;
  else if (it->is_string() && *it == "int4")
    q.dtype = DType::I4;
  else
    fail("attribute '", kWeightDtypeAttr, "' = ", it->dump(), " is not \"int8\" or \"int4\"");
  auto g = attrs.find(kGroupSizeAttr);
  if (g == attrs.end()) fail("attribute '", kGroupSizeAttr, "' is missing (a quantized weight needs it)");
  if (!g->is_number_integer() || !is_quant_group_size(g->get<int64_t>()))
    fail("attribute '", kGroupSizeAttr, "' = ", g->dump(), " is not a group size the kernels implement (",
         quant_group_sizes_text(), ")");
  q.group = g->get<int64_t>();
  return q;
}

Shape quantized_storage_shape(const WeightQuant& q, const Shape& logical) {
  Shape s = logical;
  if (q.dtype == DType::I4 && !s.empty()) s.back() /= 2;
  return s;
}

DType quantized_storage_dtype(const WeightQuant& q) { return q.dtype == DType::I4 ? DType::U8 : DType::I8; }

std::vector<QuantizedOperand> quantized_operands(const NodeSpec& node) {
  std::optional<WeightQuant> q;
  try {
    q = weight_quant_from_attrs(node.attrs);
  } catch (const Error&) {}
  if (!q || node.inputs.size() < 3) return {};
  if (node.op != "moe") return {{node.inputs[1], node.inputs[2], *q}};
  std::vector<QuantizedOperand> out;
  for (size_t i = 2; i + 1 < node.inputs.size(); i += 2) out.push_back({node.inputs[i], node.inputs[i + 1], *q});
  return out;
}

bool ProgramSpec::has_quantized_weights() const {
  for (const auto& m : methods)
    for (const auto& n : m.nodes)
      if (n.attrs.contains(kWeightDtypeAttr)) return true;
  return false;
}

namespace {

json value_to_json(const ValueSpec& v) {
  return {{"name", v.name}, {"dtype", dtype_name(v.dtype)}, {"shape", v.shape}};
}

const json& member(const json& obj, const char* key, const std::string& path) {
  if (!obj.is_object()) fail("program spec: ", path, " is not an object");
  auto it = obj.find(key);
  if (it == obj.end()) fail("program spec: ", path, " has no '", key, "'");
  return *it;
}

std::string get_string(const json& obj, const char* key, const std::string& path) {
  const json& v = member(obj, key, path);
  if (!v.is_string()) fail("program spec: ", path, ".", key, " is not a string");
  return v.get<std::string>();
}

const json& get_array(const json& obj, const char* key, const std::string& path) {
  const json& v = member(obj, key, path);
  if (!v.is_array()) fail("program spec: ", path, ".", key, " is not an array");
  return v;
}

ValueSpec value_from_json(const json& j, const std::string& path) {
  ValueSpec v;
  v.name = get_string(j, "name", path);
  std::string dt = get_string(j, "dtype", path);
  auto dtype = dtype_from_name(dt);
  if (!dtype) fail("program spec: ", path, ".dtype '", dt, "' is not a known dtype");
  v.dtype = *dtype;
  if (v.dtype == DType::I4) fail("program spec: ", path, ".dtype 'int4' is only for weights (stored as uint8)");
  for (const auto& d : get_array(j, "shape", path)) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t(1) << 40))
      fail("program spec: ", path, ".shape has an invalid dimension ", d.dump());
    v.shape.push_back(d.get<int64_t>());
  }
  if (v.shape.size() > 8) fail("program spec: ", path, ".shape has rank ", v.shape.size(), ", more than 8");
  if (!shape_numel(v.shape)) fail("program spec: ", path, ".shape ", shape_str(v.shape), " overflows");
  return v;
}

std::vector<std::string> strings_from_json(const json& j, const std::string& path) {
  if (!j.is_array()) fail("program spec: ", path, " is not an array");
  std::vector<std::string> out;
  for (const auto& s : j) {
    if (!s.is_string()) fail("program spec: ", path, " holds a non-string");
    out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace

json ProgramSpec::to_json() const {
  json methods_json = json::array();
  for (const auto& m : methods) {
    json inputs = json::array(), outputs = json::array(), values = json::array(), nodes = json::array();
    for (const auto& v : m.inputs) inputs.push_back(value_to_json(v));
    for (const auto& o : m.outputs)
      outputs.push_back({{"name", o.name}, {"value", o.value}, {"memory", output_memory_name(o.memory)}});
    for (const auto& v : m.values) values.push_back(value_to_json(v));
    for (const auto& n : m.nodes)
      nodes.push_back({{"op", n.op}, {"inputs", n.inputs}, {"outputs", n.outputs}, {"attrs", n.attrs}});
    methods_json.push_back(
        {{"name", m.name}, {"inputs", inputs}, {"outputs", outputs}, {"values", values}, {"nodes", nodes}});
  }
  return {{"format", kProgramFormatName},
          {"format_version", has_quantized_weights() ? kQuantizedFormatVersion : 1},
          {"metadata", metadata},
          {"methods", methods_json}};
}

ProgramSpec ProgramSpec::from_json(const json& j) {
  if (!j.is_object()) fail("program spec: not a JSON object");
  std::string format = get_string(j, "format", "program");
  if (format != kProgramFormatName) fail("program spec: format '", format, "' is not '", kProgramFormatName, "'");
  const json& fv = member(j, "format_version", "program");
  if (!fv.is_number_integer() || fv.get<int64_t>() < 1 || fv.get<int64_t>() > kProgramFormatVersion)
    fail("program spec: format_version ", fv.dump(), " is not supported (supported: 1 to ", kProgramFormatVersion,
         "; a newer hfstatic may read it)");
  ProgramSpec spec;
  spec.format_version = int(fv.get<int64_t>());
  spec.metadata = member(j, "metadata", "program");
  if (!spec.metadata.is_object()) fail("program spec: metadata is not an object");
  const json& methods = get_array(j, "methods", "program");
  for (size_t mi = 0; mi < methods.size(); ++mi) {
    std::string mpath = cat("methods[", mi, "]");
    MethodSpec m;
    m.name = get_string(methods[mi], "name", mpath);
    mpath = cat("method '", m.name, "'");
    if (spec.find_method(m.name)) fail("program spec: method '", m.name, "' is defined twice");
    const json& inputs = get_array(methods[mi], "inputs", mpath);
    for (size_t i = 0; i < inputs.size(); ++i)
      m.inputs.push_back(value_from_json(inputs[i], cat(mpath, " inputs[", i, "]")));
    const json& values = get_array(methods[mi], "values", mpath);
    for (size_t i = 0; i < values.size(); ++i)
      m.values.push_back(value_from_json(values[i], cat(mpath, " values[", i, "]")));
    const json& outputs = get_array(methods[mi], "outputs", mpath);
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string opath = cat(mpath, " outputs[", i, "]");
      OutputSpec o;
      o.name = get_string(outputs[i], "name", opath);
      o.value = get_string(outputs[i], "value", opath);
      std::string memory = get_string(outputs[i], "memory", opath);
      if (memory == "alias")
        o.memory = OutputMemory::Alias;
      else if (memory == "planned")
        o.memory = OutputMemory::Planned;
      else if (memory == "unplanned")
        o.memory = OutputMemory::Unplanned;
      else
        fail("program spec: ", opath, ".memory '", memory, "' is not alias, planned or unplanned");
      m.outputs.push_back(std::move(o));
    }
    const json& nodes = get_array(methods[mi], "nodes", mpath);
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::string npath = cat(mpath, " nodes[", i, "]");
      NodeSpec n;
      n.op = get_string(nodes[i], "op", npath);
      n.inputs = strings_from_json(member(nodes[i], "inputs", npath), npath + ".inputs");
      n.outputs = strings_from_json(member(nodes[i], "outputs", npath), npath + ".outputs");
      if (nodes[i].contains("attrs")) {
        n.attrs = nodes[i]["attrs"];
        if (!n.attrs.is_object()) fail("program spec: ", npath, ".attrs is not an object");
      }
      m.nodes.push_back(std::move(n));
    }
    spec.methods.push_back(std::move(m));
  }
  if (fv.get<int64_t>() == kConsecutiveGroupsFormatVersion && spec.has_quantized_weights())
    fail("program spec: format_version ", fv.dump(), " stores quantized weights one group after another, ",
         "a layout this hfstatic no longer reads (quantized programs are format_version ", kQuantizedFormatVersion,
         "): export the checkpoint again");
  if (fv.get<int64_t>() < kQuantizedFormatVersion && spec.has_quantized_weights())
    fail("program spec: format_version ", fv.dump(), " cannot hold quantized weights (a node has attribute '",
         kWeightDtypeAttr, "'); quantized programs are format_version ", kQuantizedFormatVersion);
  return spec;
}

}  // namespace hfstatic
