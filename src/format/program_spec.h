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
inline constexpr int kProgramFormatVersion = 1;

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

  const MethodSpec* find_method(const std::string& name) const;
  nlohmann::json to_json() const;
  // Structural parse; throws Error naming the JSON path of the first problem.
  static ProgramSpec from_json(const nlohmann::json& j);
};

}  // namespace hfstatic
