// Quantized programs, broken one structured edit at a time: real int8 / int4 exports (groups of
// 32, 64 and 128, rows of whole blocks of groups and tails) whose group_size and weight_dtype
// attributes, scale shapes, scale and weight bytes and tensor placement the input chooses. Each
// edited file is placed against an inaccessible page, so a tensor moved to the end of the file
// faults on any read past it; then loaded, validated and run for a prefill and a decode step
// as fuzz_program does. Only hfstatic::Error may escape the library.
//
// Input: byte 0 picks the base program; then records of 4 bytes (op, a, b, c), at most 16.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "executor/method.h"
#include "export/exporter.h"
#include "export/make_checkpoint.h"
#include "format/program.h"
#include "guarded_memory.h"
#include "io/hf_static_io_manager.h"
#include "io/io_manager.h"
#include "program_file_edit.h"
#include "util/error.h"
#include "util/mapped_file.h"

using namespace hfstatic;
using nlohmann::json;

namespace {

struct Base {
  const char* preset;
  DType dtype;
  int64_t group;
};
// Groups of 128 do not divide tiny-wide's 576 MLP features (the exporter refuses them); the
// edits below still set 128 on these programs' nodes.
constexpr Base kBases[] = {{"tiny-wide", DType::I8, 32},
                           {"tiny-wide", DType::I4, 32},
                           {"tiny-wide", DType::I8, 64},
                           {"tiny-wide", DType::I4, 64},
                           {"tiny", DType::I4, 32}};
constexpr size_t kBaseCount = sizeof(kBases) / sizeof(kBases[0]);

// The exported bytes of base i, made once per process in a temporary folder.
const std::string& base_program(size_t i) {
  static std::string programs[kBaseCount];
  static const struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string templ = (std::filesystem::temp_directory_path() / "hfstatic-fuzz-quant-XXXXXX").string();
      if (!mkdtemp(templ.data())) std::abort();
      path = templ;
    }
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } temp;
  const std::filesystem::path& dir = temp.path;
  if (programs[i].empty()) {
    const Base& b = kBases[i];
    const std::string ckpt = (dir / b.preset).string();
    if (!std::filesystem::exists(ckpt)) {
      MakeCheckpointOptions mc;
      mc.preset = b.preset;
      mc.seed = 1;
      make_checkpoint(ckpt, mc);
    }
    ExportOptions o;
    o.graph.prefill_len = 4;
    o.graph.max_context = 8;
    o.quant = WeightQuant{b.dtype, b.group};
    const std::string path = (dir / ("q" + std::to_string(i) + ".hfs")).string();
    export_program(ckpt, path, o);
    programs[i] = read_text_file(path);
    std::filesystem::remove(path);
  }
  return programs[i];
}

// Every node (method, index) with a quantization attribute.
std::vector<json*> quantized_nodes(json& spec) {
  std::vector<json*> out;
  for (json& m : spec["methods"])
    for (json& n : m["nodes"])
      if (n.contains("attrs") && n["attrs"].contains("weight_dtype")) out.push_back(&n);
  return out;
}

const json kGroupSizes[] = {0, -32, 16, 32, 48, 64, 96, 128, 160, 192, 256, 512, 576, int64_t(1) << 31, "32", nullptr};
const json kWeightDtypes[] = {"int8", "int4", "int2", "float16", 4, nullptr};
const uint16_t kHalfPatterns[] = {0x7c00, 0xfc00, 0x7e00, 0x7bff, 0x0000, 0x0001, 0x3c00};

void apply(fuzz::ProgramFile& file, uint8_t op, uint8_t a, uint8_t b, uint8_t c) {
  std::vector<json*> nodes = quantized_nodes(file.spec());
  const std::vector<std::string> names = file.tensor_names();
  if (nodes.empty() || names.empty()) return;
  json& node = *nodes[a % nodes.size()];
  const std::string weight = node["inputs"].size() > 1 ? node["inputs"][1].get<std::string>() : names[0];
  const std::string scales = node["inputs"].size() > 2 ? node["inputs"][2].get<std::string>() : names[0];
  // Attributes change on every node reading the weight, as an exporter would write them.
  auto set_attr = [&](const char* key, const json& value) {
    for (json* n : nodes)
      if ((*n)["inputs"].size() > 1 && (*n)["inputs"][1] == weight) (*n)["attrs"][key] = value;
  };
  switch (op % 6) {
    case 0: set_attr("group_size", kGroupSizes[b % std::size(kGroupSizes)]); break;
    case 1: set_attr("weight_dtype", kWeightDtypes[b % std::size(kWeightDtypes)]); break;
    case 2: {  // the scales reshaped (their bytes cut or zero-extended to match)
      json& entry = file.tensor(scales);
      json shape = entry["shape"];
      if (shape.size() != 2) return;
      const int64_t rows = shape[0], cols = shape[1];
      const int64_t choices[][2] = {{rows, cols * 2}, {rows, cols / 2}, {rows, 1},        {rows - 1, cols},
                                    {1, cols},        {rows + 1, cols}, {rows, cols + 1}, {0, cols}};
      const auto& pick = choices[b % std::size(choices)];
      entry["shape"] = {pick[0], pick[1]};
      std::string bytes(file.tensor_bytes(scales));
      bytes.resize(size_t(std::max<int64_t>(0, pick[0] * pick[1])) * 2, '\0');
      file.place_last(scales, std::move(bytes), c & 1);
      break;
    }
    case 3: file.move_to_page_end(names[(size_t(b) << 8 | c) % names.size()]); break;
    case 4: {  // one scale set to inf, nan, the largest half, a subnormal...
      std::string bytes(file.tensor_bytes(scales));
      if (bytes.size() < 2) return;
      const size_t at = (size_t(b) << 8 | c) % (bytes.size() / 2) * 2;
      const uint16_t v = kHalfPatterns[(b ^ c) % std::size(kHalfPatterns)];
      bytes[at] = char(v & 0xff), bytes[at + 1] = char(v >> 8);
      file.place_last(scales, std::move(bytes), true);
      break;
    }
    case 5: {  // one weight byte set (every int8 and nibble value included)
      std::string bytes(file.tensor_bytes(weight));
      if (bytes.empty()) return;
      bytes[(size_t(b) << 8 | a) % bytes.size()] = char(c);
      file.place_last(weight, std::move(bytes), true);
      break;
    }
  }
}

}  // namespace

// tests/regressions builds this file into a GoogleTest under another name.
#ifndef HFSTATIC_FUZZ_ENTRY
#define HFSTATIC_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

extern "C" int HFSTATIC_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  fuzz::ProgramFile file(base_program(data[0] % kBaseCount));
  for (size_t i = 1; i + 4 <= size && i < 1 + 16 * 4; i += 4)
    apply(file, data[i], data[i + 1], data[i + 2], data[i + 3]);
  // Whole 8-byte words, so the file's end against the guard page leaves its start aligned.
  std::string bytes = file.bytes();
  bytes.resize((bytes.size() + 7) / 8 * 8, '\0');
  test::GuardedBuffer memory(bytes.data(), bytes.size(), test::Guard::After);
  try {
    auto program = Program::load_memory(memory.as<const uint8_t>(), memory.size(), "fuzz.hfs");
    if (!hf_static_v1_violations(*program).empty()) return 0;
    auto io = IOManagerRegistry::instance().load(program);
    // A padded prefill, then a decode step (at the last position no prefill fits).
    const std::vector<int64_t> prompt = {1, 2, 3}, next = {4};
    if (io->feed(0, prompt).ok() && io->feed(io->model().max_context - 1, next).ok()) {
      volatile float sink = 0;
      for (float f : io->logits()) sink = sink + f;
      (void)sink;
    }
  } catch (const Error&) {}
  return 0;
}
