// A deliberately naive hf_static IOManager for the contract tests: it keeps the real loader's
// structure but drops the duties the contract exists for, one hook at a time, so the tests can
// show that each duty is needed (the naive one fails where the real one passes).
#pragma once
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/hf_static_io_manager.h"

namespace hfstatic::contract {

struct NaiveDefects {
  // validate(): byte sizes only. Each input and output is compared with the byte size the
  // contract expects (the opaque mutation prefix as one total), never its dtype or shape.
  bool byte_size_validation = true;
  // write_counters() does nothing, and reset() rewinds the position and masks but leaves the
  // counters where the last step left them: the runner's position and the program's counters
  // drift apart, which is the bug the contract's "runner writes every counter" rule fixes.
  bool stale_counters = true;
  // bind_state_outputs() binds nothing: the repeated state after logits stays unbound.
  bool unbound_state_outputs = true;
  // prefill_fits() is always true: no tail routing, prefill calls may run past max_context.
  bool no_tail_routing = true;
  // write_local_mask() copies the mask into the local mask (version 2): local layers see every
  // earlier position, as a runner that knows one mask only would let them.
  bool no_local_mask = false;

  static NaiveDefects only_byte_size_validation() { return {true, false, false, false}; }
  static NaiveDefects only_stale_counters() { return {false, true, false, false}; }
  static NaiveDefects only_unbound_state_outputs() { return {false, false, true, false}; }
  static NaiveDefects only_no_tail_routing() { return {false, false, false, true}; }
  static NaiveDefects only_no_local_mask() { return {false, false, false, false, true}; }
};

class NaiveIOManager : public HfStaticIOManager {
 public:
  explicit NaiveIOManager(NaiveDefects defects = {}, int64_t version = hf_static::kVersion)
      : HfStaticIOManager(version), defects_(defects) {}

  // What this loader's validation reports for a program (empty: it would load it).
  std::vector<std::string> contract_violations(const Program& program) const { return validate(program); }
  int64_t counter(size_t layer) const { return *static_cast<const int64_t*>(state_buffer(3 * layer + 2)); }

  void reset() override {
    if (!defects_.stale_counters || state_count() == 0) return HfStaticIOManager::reset();
    std::vector<int64_t> kept;
    for (size_t l = 0; l < state_count() / 3; ++l) kept.push_back(counter(l));
    HfStaticIOManager::reset();
    for (size_t l = 0; l < kept.size(); ++l) *static_cast<int64_t*>(state_buffer(3 * l + 2)) = kept[l];
  }

 protected:
  std::vector<std::string> validate(const Program& program) const override {
    if (!defects_.byte_size_validation) return HfStaticIOManager::validate(program);
    // Metadata is read the same way as the real loader does; only the signatures differ.
    std::vector<std::string> out;
    for (const auto& v : hf_static_v1_violations(program))
      if (v.rfind("metadata key", 0) == 0) out.push_back(v);
    if (!out.empty()) return out;
    const nlohmann::json& m = program.metadata();
    auto i64 = [&](const char* k) { return m[k].get<int64_t>(); };
    const int64_t L = i64("n_layers"), H = i64("n_kv_heads"), D = i64("head_dim"), C = i64("max_context"),
                  T = i64("prefill_len"), V = i64("vocab_size");
    const uint64_t cache_bytes =
        uint64_t(H * C * D) * dtype_size(*dtype_from_name(m["cache_dtype"].get<std::string>()));
    std::vector<uint64_t> state;
    for (int64_t l = 0; l < L; ++l) state.insert(state.end(), {cache_bytes, cache_bytes, 8});
    auto bytes = [](const ValueSpec* v) {
      return v ? uint64_t(*shape_numel(v->shape)) * dtype_size(v->dtype) : uint64_t(0);
    };
    for (const auto& [key, rows] : {std::pair<std::string, int64_t>{"prefill_method", T}, {"decode_method", 1}}) {
      const MethodSpec& ms = *program.spec().find_method(m[key].get<std::string>());
      std::vector<uint64_t> inputs = {uint64_t(rows) * 8, uint64_t(rows) * 8, uint64_t(rows * C) * 4};
      inputs.insert(inputs.end(), state.begin(), state.end());
      if (ms.inputs.size() != inputs.size()) out.push_back(cat("method '", ms.name, "': wrong number of inputs"));
      for (size_t i = 0; i < std::min(inputs.size(), ms.inputs.size()); ++i)
        if (bytes(&ms.inputs[i]) != inputs[i])
          out.push_back(
              cat("method '", ms.name, "' input ", i, ": expected ", inputs[i], " bytes, got ", bytes(&ms.inputs[i])));
      const size_t n = state.size();
      if (ms.outputs.size() != n + 1 && ms.outputs.size() != 2 * n + 1) {
        out.push_back(cat("method '", ms.name, "': wrong number of outputs"));
        continue;
      }
      uint64_t prefix = 0, want_prefix = 0;
      for (size_t i = 0; i < n; ++i) prefix += bytes(ms.output_value(i)), want_prefix += state[i];
      if (prefix != want_prefix) out.push_back(cat("method '", ms.name, "': state updates of ", prefix, " bytes"));
      if (bytes(ms.output_value(n)) != uint64_t(rows * V) * 4)
        out.push_back(cat("method '", ms.name, "': logits of the wrong size"));
      for (size_t j = 0; ms.outputs.size() == 2 * n + 1 && j < n; ++j)
        if (bytes(ms.output_value(n + 1 + j)) != state[j])
          out.push_back(cat("method '", ms.name, "' output ", n + 1 + j, ": wrong size"));
    }
    return out;
  }
  void write_counters(int64_t start_pos) override {
    if (!defects_.stale_counters) HfStaticIOManager::write_counters(start_pos);
  }
  void bind_state_outputs(Execution& exec) override {
    if (!defects_.unbound_state_outputs) HfStaticIOManager::bind_state_outputs(exec);
  }
  void write_local_mask(MethodState& ms, int64_t start_pos, int64_t n) override {
    if (!defects_.no_local_mask) return HfStaticIOManager::write_local_mask(ms, start_pos, n);
    std::copy_n(ms.mask.as<float>(), ms.rows * model().max_context, ms.local_mask.as<float>());
  }
  bool prefill_fits(int64_t start_pos) const override {
    return defects_.no_tail_routing || HfStaticIOManager::prefill_fits(start_pos);
  }

 private:
  NaiveDefects defects_;
};

}  // namespace hfstatic::contract
