// The Hugging Face checkpoint reader the exporter uses. The input is up to three parts split by
// kDelimiter (fuzz_common.h): config.json, a safetensors shard, model.safetensors.index.json.
// Each part goes to its parser directly (HfConfig::parse, expected_tensors, build_program,
// SafetensorsView::parse with and without the alignment programs need); then the parts are
// written as a checkpoint folder and opened with HfCheckpoint::open, reading every tensor.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "export/checkpoint.h"
#include "export/graph_builder.h"
#include "export/hf_config.h"
#include "format/safetensors.h"
#include "fuzz_common.h"
#include "util/error.h"

using namespace hfstatic;

namespace {

const std::string& folder() {
  static const std::string dir = [] {
    std::string d =
        std::filesystem::temp_directory_path().string() + "/hfstatic-fuzz-checkpoint." + std::to_string(::getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace

// tests/regressions builds this file into a GoogleTest under another name.
#ifndef HFSTATIC_FUZZ_ENTRY
#define HFSTATIC_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

extern "C" int HFSTATIC_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  auto parts = fuzz::split_parts(data, size, 3);
  std::string config_text(parts[0]);
  std::string shard(parts.size() > 1 ? parts[1] : std::string_view());
  std::string index_text(parts.size() > 2 ? parts[2] : std::string_view());

  bool config_ok = false;
  nlohmann::json config_json = nlohmann::json::parse(config_text, nullptr, /*allow_exceptions=*/false);
  if (!config_json.is_discarded()) {
    try {
      HfConfig config = HfConfig::parse(config_json, "config.json");
      config_ok = true;
      auto expected = expected_tensors(config);
      GraphOptions options;
      options.max_context = 8;
      options.prefill_len = 4;
      (void)build_program(config, options);
    } catch (const Error&) {}
  }

  for (bool aligned : {false, true}) {
    try {
      SafetensorsOptions options;
      options.require_alignment = aligned;
      auto view =
          SafetensorsView::parse(reinterpret_cast<const uint8_t*>(shard.data()), shard.size(), "shard", options);
      for (const auto& t : view.tensors()) (void)view.find(t.name);
    } catch (const Error&) {}
  }

  if (!config_ok) return 0;
  const std::string& dir = folder();
  std::filesystem::remove(dir + "/model.safetensors");
  std::filesystem::remove(dir + "/model.safetensors.index.json");
  std::filesystem::remove(dir + "/model-00001-of-00001.safetensors");
  write_file(dir + "/config.json", config_text);
  if (parts.size() > 2) {
    write_file(dir + "/model.safetensors.index.json", index_text);
    write_file(dir + "/model-00001-of-00001.safetensors", shard);
  } else {
    write_file(dir + "/model.safetensors", shard);
  }
  try {
    HfCheckpoint c = HfCheckpoint::open(dir);
    for (const auto& name : c.tensor_names()) {
      const TensorInfo& t = c.info(name);
      if (t.size > (16u << 20)) continue;
      std::vector<float> out(t.size / dtype_size(t.dtype) + 1);
      c.read(name, DType::F32, out.data());
    }
  } catch (const Error&) {}
  return 0;
}
