// A loaded program file: memory-mapped, validated, immutable, and safe to share across threads.
#pragma once
#include <memory>
#include <string>

#include "format/program_spec.h"
#include "format/safetensors.h"
#include "util/mapped_file.h"

namespace hfstatic {

struct WeightRef {
  const TensorInfo* info = nullptr;
  const uint8_t* data = nullptr;
};

class Program {
 public:
  // Maps `path`, validates the container and the program spec's structure; throws Error.
  static std::shared_ptr<const Program> load(const std::string& path, PagePolicy policy = PagePolicy::HugePages);
  // The same checks over bytes that outlive the program (e.g. a program linked into the binary).
  static std::shared_ptr<const Program> load_memory(const uint8_t* data, size_t size, const std::string& name);

  const std::string& path() const { return file_.path(); }
  uint64_t file_size() const { return file_.size(); }
  const uint8_t* file_data() const { return file_.data(); }
  const ProgramSpec& spec() const { return spec_; }
  const nlohmann::json& metadata() const { return spec_.metadata; }
  const SafetensorsView& container() const { return view_; }
  // A weight tensor (any tensor that is not an embedded file); info == nullptr if absent.
  WeightRef weight(const std::string& name) const;
  // Bytes of an embedded file such as "tokenizer.json"; empty if the program has none.
  std::string embedded_file(const std::string& name) const;
  uint64_t weight_bytes() const;

 private:
  static std::shared_ptr<const Program> load_mapped(MappedFile file);
  MappedFile file_;
  SafetensorsView view_;
  ProgramSpec spec_;
};

// Bytes of a file embedded in the program at `program_path` (empty if absent).
std::string program_embedded_file(const std::string& program_path, const std::string& name);

// Assembles a program file: spec, weights, embedded files. Written atomically.
class ProgramWriter {
 public:
  explicit ProgramWriter(ProgramSpec spec) : spec_(std::move(spec)) {}
  ProgramSpec& spec() { return spec_; }
  void add_weight(const std::string& name, DType dtype, const Shape& shape, SafetensorsWriter::Producer producer);
  void add_weight_bytes(const std::string& name, DType dtype, const Shape& shape, std::vector<uint8_t> bytes);
  void add_file(const std::string& name, const std::string& bytes);
  void write(const std::string& path, const std::function<void(uint64_t, uint64_t)>& progress = {});

 private:
  ProgramSpec spec_;
  SafetensorsWriter writer_;
};

}  // namespace hfstatic
