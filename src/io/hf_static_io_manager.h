// The hf_static IOManager, versions 1 and 2 (normative text: docs/hf_static-v1.md, docs/hf_static-v2.md).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "contract/hf_static_contract.h"
#include "executor/method.h"
#include "io/io_manager.h"

namespace hfstatic {

class HfStaticIOManager : public IOManager {
 public:
  // Drives programs of the given contract version (hf_static::kVersion or kVersion2).
  explicit HfStaticIOManager(int64_t version = hf_static::kVersion) : version_(version) {}

  void load(std::shared_ptr<const Program> program, BufferAllocator& allocator,
            const RuntimeOptions& runtime = {}) override;
  const ModelInfo& model() const override { return info_; }
  void reset() override;
  std::vector<Step> plan(int64_t start_pos, size_t n_tokens) const override;
  std::span<const float> logits() const override;
  // Through the prefill method on its active rows with the decode step's kernels, where a padded
  // prefill fits.
  int64_t verify_capacity(int64_t start_pos) const override;
  Status verify(int64_t start_pos, std::span<const int64_t> tokens, ThreadPool* pool = nullptr) override;
  // A step computes the logits of its last real row only (the other rows of the logits output
  // keep stale values) unless set_all_logits(true) (from the next step on) or it is verify()'s.
  void set_all_logits(bool all) override { all_logits_ = all; }
  std::span<const float> row_logits(int64_t row) const override;

  // Introspection for tests and tools.
  const Execution& execution(StepKind kind) const { return *method(kind).execution; }
  void* state_buffer(size_t index) const { return state_[index].data(); }  // k0, v0, c0, k1, ...
  size_t state_buffer_bytes(size_t index) const { return state_[index].size(); }
  size_t state_count() const { return state_.size(); }

 protected:
  void prepare(StepKind kind, int64_t start_pos, std::span<const int64_t> tokens) override;
  void bind() override;
  Status run(ThreadPool* pool) override;
  Execution* decode_execution() override { return decode_.execution.get(); }
  void decode_ran(const Status& s) override { ran_ = s.ok(); }

  // The four duties of the contract, each a hook so that tests can show what breaks without it.
  virtual std::vector<std::string> validate(const Program& program) const;
  virtual void write_counters(int64_t start_pos);
  virtual void bind_state_outputs(Execution& exec);
  virtual bool prefill_fits(int64_t start_pos) const;
  struct MethodState;
  // Version 2: the local mask of a step of n real rows at start_pos (what local layers see).
  virtual void write_local_mask(MethodState& ms, int64_t start_pos, int64_t n);
  void check_buffer_bytes(const Program& program, const std::vector<uint64_t>& state_bytes,
                          const RuntimeOptions& runtime) const;

  struct MethodState {
    std::shared_ptr<const Method> method;
    std::unique_ptr<Execution> execution;
    int64_t rows = 0;          // T
    bool active_rows = false;  // a step runs on its real rows only (RuntimeOptions::active_rows)
    Buffer tokens, positions, mask;
    Buffer local_mask;  // version 2 only
  };
  MethodState& method(StepKind kind) { return kind == StepKind::Prefill ? prefill_ : decode_; }
  const MethodState& method(StepKind kind) const { return kind == StepKind::Prefill ? prefill_ : decode_; }

  const int64_t version_;
  std::shared_ptr<const Program> program_;
  ModelInfo info_;
  hf_static::Metadata metadata_;
  MethodState prefill_, decode_;
  std::vector<Buffer> state_;
  std::optional<StepKind> prepared_;
  int64_t prepared_rows_ = 0;  // real rows of the prepared step
  bool ran_ = false;
  bool all_logits_ = false;
  bool verifying_ = false;  // the prepared step is verify()'s
  bool rows_kept_ = false;  // the prepared step computes the logits of every real row
};

}  // namespace hfstatic
