#include "test_support.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "format/safetensors.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace hfstatic::test {

namespace fs = std::filesystem;

namespace {
std::string scratch_root() {
  std::string root = std::string(HFSTATIC_BINARY_DIR) + "/test-scratch";
  fs::create_directories(root);
  return root;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}
}  // namespace

TempDir::TempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  path_ = cat(scratch_root(), "/", tag, ".", ::getpid(), ".", counter++);
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string cached_checkpoint(const std::string& preset, uint64_t seed, uint64_t shard_mib) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  // Cached per process: parallel test processes each make their own copy.
  std::string dir = cat(scratch_root(), "/ckpt-", preset, "-", seed, "-", shard_mib, ".", ::getpid());
  if (!file_exists(dir + "/config.json")) {
    MakeCheckpointOptions o;
    o.preset = preset;
    o.seed = seed;
    o.shard_bytes = shard_mib << 20;
    make_checkpoint(dir, o);
    static std::vector<std::string> made;
    made.push_back(dir);
    static struct Cleanup {
      ~Cleanup() {
        for (const auto& d : made) {
          std::error_code ec;
          fs::remove_all(d, ec);
        }
      }
    } cleanup;
  }
  return dir;
}

std::string export_to(const std::string& checkpoint, const std::string& path, const GraphOptions& options,
                      std::optional<DType> weights_dtype) {
  ExportOptions o;
  o.graph = options;
  o.weights_dtype = weights_dtype;
  export_program(checkpoint, path, o);
  return path;
}

CommandResult run_cli(const std::vector<std::string>& args, const std::string& stdin_text) {
  TempDir dir("cli");
  std::string in = dir.file("stdin"), out = dir.file("stdout"), err = dir.file("stderr");
  {
    std::ofstream f(in, std::ios::binary);
    f << stdin_text;
  }
  std::string cmd = shell_quote(HFSTATIC_CLI);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " <" + shell_quote(in) + " >" + shell_quote(out) + " 2>" + shell_quote(err);
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = read_text_file(out);
  r.err = read_text_file(err);
  return r;
}

nlohmann::json reference(const std::string& checkpoint, const std::vector<int64_t>& tokens, int steps,
                         const std::string& cache_dtype, const std::vector<std::string>& extra) {
  TempDir dir("ref");
  std::string list;
  for (size_t i = 0; i < tokens.size(); ++i) list += (i ? "," : "") + std::to_string(tokens[i]);
  std::string out = dir.file("ref.json");
  std::string cmd = cat(shell_quote(HFSTATIC_PYTHON), " ",
                        shell_quote(std::string(HFSTATIC_SOURCE_DIR) + "/tests/reference/hf_reference.py"), " ",
                        shell_quote(checkpoint), " --tokens ", list, " --steps ", steps, " --cache-dtype ", cache_dtype,
                        " --out ", shell_quote(out));
  for (const auto& flag : extra) cmd += " " + shell_quote(flag);
  cmd += " 2>" + shell_quote(dir.file("err"));
  int status = std::system(cmd.c_str());
  if (status != 0) fail("reference failed (", status, "): ", read_text_file(dir.file("err")));
  return nlohmann::json::parse(read_text_file(out));
}

double relative_error(const std::vector<float>& a, const std::vector<double>& b) {
  double scale = 1e-12, worst = 0;
  for (double v : b) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  if (a.size() != b.size()) return INFINITY;
  return worst / scale;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string CheckpointTest::checkpoint(const std::string& preset) {
  std::string dst = dir.file(cat("ckpt", count_++));
  std::filesystem::copy(cached_checkpoint(preset, 4), dst, std::filesystem::copy_options::recursive);
  return dst;
}

void CheckpointTest::edit_config(const std::string& ckpt, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json c = nlohmann::json::parse(read_text_file(ckpt + "/config.json"));
  edit(c);
  write_file(ckpt + "/config.json", c.dump(2));
}

std::vector<TensorBytes> read_tensors(const std::string& path) {
  MappedFile file = MappedFile::open(path);
  SafetensorsView view = SafetensorsView::parse(file.data(), file.size(), path);
  std::vector<TensorBytes> out;
  for (const auto& t : view.tensors()) {
    const uint8_t* d = view.tensor_data(t);
    out.push_back({t.name, t.dtype, t.shape, std::vector<uint8_t>(d, d + t.size)});
  }
  return out;
}

std::vector<float> f32_values(const TensorBytes& t) {
  EXPECT_EQ(t.dtype, DType::F32) << t.name;
  std::vector<float> v(t.bytes.size() / sizeof(float));
  std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(float));
  return v;
}

void rewrite_tensors(const std::string& ckpt, const std::function<std::vector<TensorBytes>(TensorBytes)>& edit) {
  const std::string path = ckpt + "/model.safetensors";
  SafetensorsWriter out;
  out.set_metadata("format", "pt");
  for (TensorBytes& t : read_tensors(path))
    for (TensorBytes& e : edit(std::move(t))) out.add_bytes(e.name, e.dtype, e.shape, std::move(e.bytes));
  out.write(path);
}

}  // namespace hfstatic::test
