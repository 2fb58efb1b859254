// The programs the row-level IOManager tests run: every tiny family preset exported with float32
// and float16 caches (repeated state), int8 and int4 weights; and the tokens they feed.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "export/exporter.h"
#include "export/make_checkpoint.h"
#include "format/program.h"
#include "test_support.h"

namespace hfstatic::test {

struct Variant {
  const char* name;
  DType cache;
  std::optional<WeightQuant> quant;
  bool repeat_state;
};
inline const Variant kVariants[] = {{"float32-cache", DType::F32, std::nullopt, false},
                                    {"float16-cache-repeat", DType::F16, std::nullopt, true},
                                    {"int8", DType::F16, WeightQuant{DType::I8, 32}, false},
                                    {"int4", DType::F32, WeightQuant{DType::I4, 32}, false}};

inline std::vector<std::string> tiny_presets() {
  std::vector<std::string> out;
  for (const auto& p : checkpoint_presets())
    if (p.name.rfind("tiny", 0) == 0 && p.name != "tiny-wide") out.push_back(p.name);
  return out;
}

// n token ids in [1, 250], different for each seed.
inline std::vector<int64_t> tokens(int64_t n, int64_t seed) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back((seed * 31 + i * 7) % 250 + 1);
  return out;
}

// `preset` exported as `v` with these prefill and context lengths, into dir.
inline std::shared_ptr<const Program> export_variant(const TempDir& dir, const std::string& preset, const Variant& v,
                                                     int64_t prefill_len, int64_t max_context) {
  ExportOptions o;
  o.graph.prefill_len = prefill_len;
  o.graph.max_context = max_context;
  o.graph.cache_dtype = v.cache;
  o.graph.repeat_state = v.repeat_state;
  o.quant = v.quant;
  const std::string path = dir.file(preset + "-" + v.name + ".hfs");
  export_program(cached_checkpoint(preset, 3), path, o);
  return Program::load(path);
}

}  // namespace hfstatic::test
