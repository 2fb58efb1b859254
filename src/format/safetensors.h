// Safetensors container: validated read-only view over bytes, and a streaming writer.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "util/dtype.h"

namespace hfstatic {

struct TensorInfo {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t offset = 0;  // from the start of the data area
  uint64_t size = 0;    // bytes
};

struct SafetensorsOptions {
  // Program files need every tensor aligned to its element size (weights are used in place);
  // Hugging Face checkpoints are read with copies and need not be.
  bool require_alignment = false;
  uint64_t max_header_size = 100u << 20;
};

class SafetensorsView {
 public:
  // Validates the whole header against `size` before returning; throws Error naming `origin`,
  // the field and the problem. `data` must outlive the view.
  static SafetensorsView parse(const uint8_t* data, size_t size, const std::string& origin,
                               const SafetensorsOptions& options = {});

  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(const std::string& name) const;
  const uint8_t* tensor_data(const TensorInfo& t) const { return data_start_ + t.offset; }
  uint64_t header_size() const { return header_size_; }
  uint64_t data_size() const { return data_size_; }

 private:
  const uint8_t* data_start_ = nullptr;
  uint64_t header_size_ = 0;
  uint64_t data_size_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
};

// Writes tensors whose bytes are produced on demand, so a multi-GiB export never holds more
// than one tensor in memory. Tensors are laid out by decreasing element size so that each is
// aligned to its element size without holes; the data area starts at a 64-byte boundary.
class SafetensorsWriter {
 public:
  using Producer = std::function<void(uint8_t* dst)>;  // fills exactly the tensor's bytes
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  void add(const std::string& name, DType dtype, const Shape& shape, Producer producer);
  void add_bytes(const std::string& name, DType dtype, const Shape& shape, std::vector<uint8_t> bytes);
  // progress(done_bytes, total_bytes) is called after each tensor.
  void write(const std::string& path, const std::function<void(uint64_t, uint64_t)>& progress = {}) const;

 private:
  struct Pending {
    TensorInfo info;
    Producer producer;
  };
  std::map<std::string, std::string> metadata_;
  std::vector<Pending> pending_;
};

}  // namespace hfstatic
