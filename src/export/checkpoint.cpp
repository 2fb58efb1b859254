#include "export/checkpoint.h"

#include <cstring>
#include <set>

#include "util/error.h"
#include "util/json_failure.h"
#include "util/json_limits.h"

namespace hfstatic {

using nlohmann::json;

namespace {
json read_json(const std::string& path) {
  std::string text = read_text_file(path);
  std::string why;
  json j = parse_json_limited(text, path, kMaxJsonDepth, &why);
  if (j.is_discarded()) {
    if (std::string number = json_number_error(text, path); !number.empty()) throw Error(number);
    fail(path, ": not valid JSON ", why);
  }
  return j;
}
}  // namespace

HfCheckpoint HfCheckpoint::open(const std::string& dir) {
  HfCheckpoint c;
  c.dir_ = dir;
  const std::string config_path = dir + "/config.json";
  if (!file_exists(config_path)) fail(dir, ": no config.json (is this a Hugging Face checkpoint folder?)");
  c.raw_config_ = read_json(config_path);
  c.config_ = HfConfig::parse(c.raw_config_, config_path);
  // generation_config.json overrides the end-of-sequence ids (Llama 3 lists several there).
  if (file_exists(dir + "/generation_config.json")) {
    json g = read_json(dir + "/generation_config.json");
    if (g.is_object() && g.contains("eos_token_id")) {
      json merged = c.raw_config_;
      merged["eos_token_id"] = g["eos_token_id"];
      c.config_.eos_token_ids = HfConfig::parse(merged, dir + "/generation_config.json").eos_token_ids;
    }
  }

  std::vector<std::string> files;
  const std::string index_path = dir + "/model.safetensors.index.json";
  if (file_exists(dir + "/model.safetensors")) {
    files.push_back("model.safetensors");
  } else if (file_exists(index_path)) {
    json index = read_json(index_path);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      fail(index_path, ": has no 'weight_map' object");
    std::set<std::string> unique;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it.value().is_string()) fail(index_path, ": weight_map['", it.key(), "'] is not a file name");
      std::string f = it.value().get<std::string>();
      if (f.find('/') != std::string::npos || f == ".." || f.empty())
        fail(index_path, ": weight_map['", it.key(), "'] = '", f, "' is not a plain file name");
      if (unique.insert(f).second) files.push_back(f);
    }
  } else {
    fail(dir, ": neither model.safetensors nor model.safetensors.index.json is present");
  }
  for (const auto& f : files) {
    auto shard = std::make_unique<Shard>();
    shard->file = MappedFile::open(dir + "/" + f);
    shard->view = SafetensorsView::parse(shard->file.data(), shard->file.size(), dir + "/" + f);
    for (const auto& t : shard->view.tensors()) {
      if (c.tensors_.count(t.name)) fail(dir, "/", f, ": tensor '", t.name, "' also appears in another shard");
      c.tensors_[t.name] = {shard.get(), &t};
    }
    c.shards_.push_back(std::move(shard));
  }
  // A multimodal checkpoint: the first layout whose embedding it holds (else the first, which
  // the missing tensor's error then names).
  if (const std::optional<TextModelLayout>& text = c.config_.family->text_model)
    for (const auto& [prefix, lm_head] : text->layouts)
      if (c.tensors_.count(prefix + "embed_tokens.weight")) {
        c.config_.model_prefix = prefix;
        c.config_.lm_head_name = lm_head;
        break;
      }
  return c;
}

const TensorInfo& HfCheckpoint::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(dir_, ": checkpoint has no tensor '", name, "'");
  return *it->second.second;
}

void HfCheckpoint::read(const std::string& name, DType dtype, void* dst) const {
  const TensorInfo& t = info(name);
  read_rows(name, 0, t.shape.empty() ? 1 : t.shape[0], dtype, dst);
}

void HfCheckpoint::read_rows(const std::string& name, int64_t first_row, int64_t rows, DType dtype, void* dst) const {
  const TensorInfo& t = info(name);
  const Shard* shard = tensors_.at(name).first;
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
    fail(dir_, ": tensor '", name, "' has dtype ", dtype_name(t.dtype),
         "; only float32, float16 and bfloat16 weights are supported");
  const int64_t total_rows = t.shape.empty() ? 1 : t.shape[0];
  if (first_row < 0 || rows < 0 || first_row + rows > total_rows)
    fail(dir_, ": tensor '", name, "' has no rows [", first_row, ", ", first_row + rows, ")");
  const size_t row_bytes = total_rows == 0 ? 0 : t.size / size_t(total_rows);
  const uint8_t* src = shard->view.tensor_data(t) + size_t(first_row) * row_bytes;
  const size_t bytes = size_t(rows) * row_bytes;
  if (t.dtype == dtype) {  // the mapped rows as they are
    if (bytes) std::memcpy(dst, src, bytes);
    return;
  }
  // Checkpoint data need not be aligned: copy it out before converting.
  std::vector<uint8_t> raw(bytes);
  if (bytes) std::memcpy(raw.data(), src, bytes);
  convert_floats(raw.data(), t.dtype, dst, dtype, bytes / dtype_size(t.dtype));
}

std::vector<std::string> HfCheckpoint::tensor_names() const {
  std::vector<std::string> names;
  for (const auto& [n, _] : tensors_) names.push_back(n);
  return names;
}

std::string HfCheckpoint::side_file(const std::string& name) const {
  std::string path = dir_ + "/" + name;
  return file_exists(path) ? read_text_file(path) : std::string();
}

}  // namespace hfstatic
