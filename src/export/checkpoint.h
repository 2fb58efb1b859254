// A Hugging Face checkpoint folder as save_pretrained writes it.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "export/hf_config.h"
#include "format/safetensors.h"
#include "util/mapped_file.h"

namespace hfstatic {

class HfCheckpoint {
 public:
  // Reads config.json and maps every safetensors file (single or sharded with its index).
  static HfCheckpoint open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const HfConfig& config() const { return config_; }
  const nlohmann::json& raw_config() const { return raw_config_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // Info of a tensor; throws Error naming the tensor and the folder if absent.
  const TensorInfo& info(const std::string& name) const;
  // Converts the tensor into `dst` as `dtype` (floating types only).
  void read(const std::string& name, DType dtype, void* dst) const;
  // Converts rows [first_row, first_row + rows) of the tensor (by its first dimension) into `dst`.
  void read_rows(const std::string& name, int64_t first_row, int64_t rows, DType dtype, void* dst) const;
  std::vector<std::string> tensor_names() const;
  // Contents of an optional side file (tokenizer.json, ...), empty if absent.
  std::string side_file(const std::string& name) const;

 private:
  struct Shard {
    MappedFile file;
    SafetensorsView view;
  };
  std::string dir_;
  nlohmann::json raw_config_;
  HfConfig config_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::map<std::string, std::pair<const Shard*, const TensorInfo*>> tensors_;
};

}  // namespace hfstatic
