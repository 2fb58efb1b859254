// Shared helpers of the test suites: temporary folders, checkpoints and programs built with
// the library itself, the NumPy reference, and running the hfstatic tool.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "export/exporter.h"
#include "export/make_checkpoint.h"
#include "util/error.h"

namespace hfstatic::test {

// A fresh folder under the build tree, removed with its contents at destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A checkpoint folder for a preset and seed, made once per test binary and cached on disk.
std::string cached_checkpoint(const std::string& preset, uint64_t seed = 1, uint64_t shard_mib = 0);

// Exports a checkpoint with the given options into dir/name and returns the path.
std::string export_to(const std::string& checkpoint, const std::string& path, const GraphOptions& options,
                      std::optional<DType> weights_dtype = std::nullopt);

// Runs tests/reference/hf_reference.py on a checkpoint (with `extra` flags, e.g. --quantize
// int4); returns its JSON output.
nlohmann::json reference(const std::string& checkpoint, const std::vector<int64_t>& tokens, int steps,
                         const std::string& cache_dtype = "float32", const std::vector<std::string>& extra = {});

struct CommandResult {
  int exit_code;
  std::string out, err;
};
// Runs the hfstatic tool with arguments (each shell-quoted) and optional stdin text.
CommandResult run_cli(const std::vector<std::string>& args, const std::string& stdin_text = "");

// The hfstatic::Error message of f(); records a failure when f succeeds or throws anything else.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-hfstatic exception: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error was thrown";
  return "";
}

// Max |a - b| / max(|b|_inf, tiny) over two vectors.
double relative_error(const std::vector<float>& a, const std::vector<double>& b);

// The names in a folder, sorted.
std::vector<std::string> list_dir(const std::string& dir);
void write_file(const std::string& path, const std::string& text);

// One tensor of a safetensors file, its bytes copied out.
struct TensorBytes {
  std::string name;
  DType dtype;
  Shape shape;
  std::vector<uint8_t> bytes;
};
// The tensors of a .safetensors file, in the file's order.
std::vector<TensorBytes> read_tensors(const std::string& path);
// The values of a float32 tensor.
std::vector<float> f32_values(const TensorBytes& t);
// Rewrites ckpt/model.safetensors with each tensor replaced by what `edit` returns: none drops
// it, several write it under each of their names (metadata "format": "pt").
void rewrite_tensors(const std::string& ckpt, const std::function<std::vector<TensorBytes>(TensorBytes)>& edit);

// Tests that break one thing in a checkpoint: private, editable copies of cached presets.
class CheckpointTest : public testing::Test {
 public:
  // Rewrites ckpt/config.json through `edit`.
  static void edit_config(const std::string& ckpt, const std::function<void(nlohmann::json&)>& edit);

 protected:
  explicit CheckpointTest(const std::string& tag) : dir(tag) {}
  TempDir dir;
  int count_ = 0;

  std::string checkpoint(const std::string& preset = "tiny");
};

}  // namespace hfstatic::test
