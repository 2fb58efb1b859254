// The program spec: what the `hfstatic.program` metadata entry of a program file holds.
// Structure only (types, names, dtypes); graph semantics are checked by the executor and the
// I/O contract by the io module.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/dtype.h"

namespace hfstatic {

inline constexpr const char* kProgramMetadataKey = "hfstatic.program";
inline constexpr const char* kEmbeddedFilePrefix = "hfstatic.file.";
inline constexpr const char* kProgramFormatName = "hfstatic-program";
// The newest format version this code reads and writes. Version 3 holds quantized weights
// (WeightQuant) with each row's groups interleaved in blocks (util/quant_layout.h); version 2
// held them one group after another and is refused. A program without quantized weights is
// written as version 1, which older readers take.
inline constexpr int kProgramFormatVersion = 3;
inline constexpr int kQuantizedFormatVersion = 3;
// A quantized program of this version has a layout the kernels no longer read.
inline constexpr int kConsecutiveGroupsFormatVersion = 2;

struct ValueSpec {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
};

// Where an output's memory comes from.
enum class OutputMemory {
  Alias,      // the output reports an input buffer the method updated in place (state)
  Planned,    // the executor owns the memory
  Unplanned,  // the caller must bind a buffer before running
};
const char* output_memory_name(OutputMemory m);

struct OutputSpec {
  std::string name;   // the output's own name
  std::string value;  // the graph value it exposes (an input for Alias outputs)
  OutputMemory memory = OutputMemory::Planned;
};

struct NodeSpec {
  std::string op;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  nlohmann::json attrs = nlohmann::json::object();
};

// A quantized weight operand of a `linear` or `embedding` node, from the node's attributes
// "weight_dtype" ("int8" or "int4") and "group_size"; the weight's float16 scales follow it
// among the node's inputs (docs/program-format.md).
struct WeightQuant {
  DType dtype = DType::I8;  // I8 or I4
  int64_t group = 0;        // consecutive input features sharing one scale
};
inline constexpr const char* kWeightDtypeAttr = "weight_dtype";
inline constexpr const char* kGroupSizeAttr = "group_size";
// The group sizes the kernels implement, the only ones a program may hold.
inline constexpr int64_t kQuantGroupSizes[] = {32, 64, 128};
bool is_quant_group_size(int64_t group);
// "32, 64 or 128"
std::string quant_group_sizes_text();
// The attributes of a node with a quantized weight.
nlohmann::json weight_quant_attrs(const WeightQuant& q);
// nullopt when the attributes name no weight_dtype (float weights); throws Error naming the
// attribute when they are malformed (unknown dtype, group size missing or not one of
// kQuantGroupSizes).
std::optional<WeightQuant> weight_quant_from_attrs(const nlohmann::json& attrs);
// Shape of the stored tensor holding a quantized [rows, cols] matrix (int4: two values a byte).
Shape quantized_storage_shape(const WeightQuant& q, const Shape& logical);
DType quantized_storage_dtype(const WeightQuant& q);  // I8, or U8 for packed int4

// The quantized weight operands of a node, each with its quantization and its scales: input 1
// and its scales (input 2), or for a moe node every expert weight and its scales from input 2 on
// (its router, input 1, stays float). None for a node without quantization attributes, or with
// malformed ones or too few inputs (which the executor reports).
struct QuantizedOperand {
  std::string weight, scales;
  WeightQuant quant;
};
std::vector<QuantizedOperand> quantized_operands(const NodeSpec& node);

struct MethodSpec {
  std::string name;
  std::vector<ValueSpec> inputs;
  std::vector<OutputSpec> outputs;
  std::vector<ValueSpec> values;  // intermediates and node-produced outputs
  std::vector<NodeSpec> nodes;

  // An input or a declared value with this name, or nullptr.
  const ValueSpec* find_value(const std::string& name) const;
  // dtype and shape of output i (resolved through its value), or nullptr if unresolved.
  const ValueSpec* output_value(size_t i) const;
};

struct ProgramSpec {
  nlohmann::json metadata = nlohmann::json::object();  // the model/contract metadata object
  std::vector<MethodSpec> methods;
  int format_version = 1;  // as read; to_json writes the version the content needs

  const MethodSpec* find_method(const std::string& name) const;
  // Whether a node holds a quantized weight: such a program is format version 2.
  bool has_quantized_weights() const;
  nlohmann::json to_json() const;
  // Structural parse; throws Error naming the JSON path of the first problem.
  static ProgramSpec from_json(const nlohmann::json& j);
};

}  // namespace hfstatic
