// Program loader and hf_static contract validation on arbitrary bytes: Program::load_memory,
// hf_static_v1_violations (and v2), Method::load of every method and, for a program that passes all of
// them, IOManagerRegistry::load and one one-token step. Only hfstatic::Error may escape the
// library; anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "executor/method.h"
#include "format/program.h"
#include "io/hf_static_io_manager.h"
#include "io/io_manager.h"
#include "util/error.h"

using namespace hfstatic;

namespace {

// Programs whose buffers would not fit the fuzzer's memory limit are valid but not run.
constexpr uint64_t kMaxRunBytes = 256ull << 20;

uint64_t metadata_int(const nlohmann::json& m, const char* key) {
  auto it = m.find(key);
  if (it == m.end() || !it->is_number_integer() || it->get<int64_t>() < 0) return 0;
  return it->get<uint64_t>();
}

}  // namespace

// tests/regressions builds this file into a GoogleTest under another name.
#ifndef HFSTATIC_FUZZ_ENTRY
#define HFSTATIC_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

extern "C" int HFSTATIC_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  // A private copy, so that reads past the input's end are caught exactly at its last byte.
  std::unique_ptr<uint8_t[]> bytes(new uint8_t[size ? size : 1]);
  if (size) std::memcpy(bytes.get(), data, size);
  try {
    auto program = Program::load_memory(bytes.get(), size, "fuzz.hfs");
    (void)program->weight_bytes();
    (void)program->embedded_file("tokenizer.json");
    std::vector<std::string> violations = hf_static_v1_violations(*program);
    (void)hf_static_v2_violations(*program);  // the version 2 check must not crash either
    bool methods_ok = true;
    uint64_t run_bytes = 0;
    for (const auto& m : program->spec().methods) {
      try {
        auto method = Method::load(program, m.name);
        run_bytes += method->arena_bytes();
      } catch (const Error&) {
        methods_ok = false;
      }
    }
    if (!violations.empty() || !methods_ok) return 0;
    const auto& meta = program->metadata();
    // k and v per layer, at most 4 bytes an element.
    __uint128_t state = __uint128_t(metadata_int(meta, "n_layers")) * 2 * metadata_int(meta, "n_kv_heads") *
                        metadata_int(meta, "head_dim") * metadata_int(meta, "max_context") * 4;
    if (state + run_bytes > kMaxRunBytes) return 0;
    auto io = IOManagerRegistry::instance().load(program);
    const ModelInfo& info = io->model();
    std::vector<int64_t> prompt = {info.bos_id >= 0 ? info.bos_id : 0};
    Status st = io->feed(0, prompt);
    if (st.ok()) {
      auto logits = io->logits();
      volatile float sink = 0;
      for (float f : logits) sink = sink + f;
      (void)sink;
    }
  } catch (const Error&) {}
  return 0;
}
