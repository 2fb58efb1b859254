#include "io/hf_static_io_manager.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hfstatic {

using namespace hf_static;

namespace {

ModelInfo model_info(const Metadata& m) {
  ModelInfo info;
  info.n_layers = m.n_layers;
  info.n_kv_heads = m.n_kv_heads;
  info.head_dim = m.head_dim;
  info.max_context = m.max_context;
  info.prefill_len = m.prefill_len;
  info.vocab_size = m.vocab_size;
  info.cache_dtype = m.cache_dtype;
  info.bos_id = m.bos_id;
  info.eos_ids = m.eos_ids;
  info.prefill_method = m.prefill_method;
  info.decode_method = m.decode_method;
  return info;
}

}  // namespace

std::vector<std::string> HfStaticIOManager::validate(const Program& program) const {
  return hf_static_violations(program, version_);
}

void HfStaticIOManager::load(std::shared_ptr<const Program> program, BufferAllocator& allocator,
                             const RuntimeOptions& runtime) {
  std::vector<std::string> violations = validate(*program);
  if (!violations.empty()) throw ContractError(program->path(), violations, version_);
  std::vector<std::string> metadata_problems;  // empty unless validate() was relaxed
  auto metadata = read_metadata(*program, metadata_problems, version_);
  if (!metadata) throw ContractError(program->path(), metadata_problems, version_);
  info_ = model_info(*metadata);
  metadata_ = *metadata;
  program_ = program;

  // One set of state for both methods; every size is checked before anything is allocated.
  const auto inputs = method_inputs(*metadata, 1);
  std::vector<uint64_t> state_bytes;
  for (size_t slot = 0; slot < hf_static::state_count(info_.n_layers); ++slot) {
    const ValueLayout& input = inputs[state_input(*metadata, slot)];
    state_bytes.push_back(uint64_t(*shape_numel(input.shape)) * dtype_size(input.dtype));
  }
  for (StepKind kind : {StepKind::Prefill, StepKind::Decode}) {
    MethodState& ms = method(kind);
    ms.rows = method_rows(*metadata, kind == StepKind::Prefill);
    ms.method = Method::load(program, kind == StepKind::Prefill ? info_.prefill_method : info_.decode_method, runtime);
    ms.active_rows = runtime.active_rows && ms.method->rows() == ms.rows;
  }
  check_buffer_bytes(*program, state_bytes, runtime);
  try {
    state_.clear();
    for (uint64_t bytes : state_bytes) state_.emplace_back(allocator, size_t(bytes));
    for (StepKind kind : {StepKind::Prefill, StepKind::Decode}) {
      MethodState& ms = method(kind);
      ms.execution = std::make_unique<Execution>(ms.method, allocator);
      ms.tokens = Buffer(allocator, size_t(ms.rows) * sizeof(int64_t));
      ms.positions = Buffer(allocator, size_t(ms.rows) * sizeof(int64_t));
      ms.mask = Buffer(allocator, size_t(ms.rows * info_.max_context) * sizeof(float));
      if (metadata_.has_local_mask())
        ms.local_mask = Buffer(allocator, size_t(ms.rows * info_.max_context) * sizeof(float));
    }
  } catch (const Error& e) {
    fail(program->path(), ": the caches and buffers cannot be allocated: ", e.what());
  }
  reset();
}

// The caches, masks and arenas a program asks for are not in its file: a file of a few KB could
// ask for gigabytes. Unless the caller allows more, they may take 4x the weights + 512 MiB.
void HfStaticIOManager::check_buffer_bytes(const Program& program, const std::vector<uint64_t>& state_bytes,
                                           const RuntimeOptions& runtime) const {
  const double mib = 1 << 20;
  const uint64_t masks = metadata_.has_local_mask() ? 2 : 1;
  uint64_t caches = 0, total = 0;
  for (uint64_t b : state_bytes) caches += b;
  total = caches;
  for (StepKind kind : {StepKind::Prefill, StepKind::Decode}) {
    const MethodState& ms = method(kind);
    total += ms.method->arena_bytes() +
             uint64_t(ms.rows) * (2 * sizeof(int64_t) + masks * uint64_t(info_.max_context) * sizeof(float));
  }
  const uint64_t limit =
      runtime.max_buffer_bytes ? runtime.max_buffer_bytes : 4 * program.weight_bytes() + (uint64_t(512) << 20);
  if (total > limit)
    fail(program.path(), ": running it needs ", total / mib, " MiB of caches and buffers (caches ", caches / mib,
         " MiB for max_context ", info_.max_context, ", ", info_.n_layers, " layers), more than the ", limit / mib,
         runtime.max_buffer_bytes ? " MiB allowed" : " MiB allowed by default (4x its weights + 512 MiB)",
         "; raise the limit with --max-buffer-mib");
}

void HfStaticIOManager::reset() {
  // The caches keep stale values, but counters are rewritten and masks rebuilt before every
  // step, so nothing from before the reset can be read.
  for (int64_t l = 0; l < info_.n_layers; ++l) *state_[state_slot(l, StateRole::Counter)].as<int64_t>() = 0;
  for (StepKind kind : {StepKind::Prefill, StepKind::Decode}) {
    MethodState& ms = method(kind);
    std::fill_n(ms.mask.as<float>(), ms.rows * info_.max_context, -std::numeric_limits<float>::infinity());
    if (metadata_.has_local_mask())
      std::fill_n(ms.local_mask.as<float>(), ms.rows * info_.max_context, -std::numeric_limits<float>::infinity());
  }
  prepared_.reset();
  ran_ = false;
}

bool HfStaticIOManager::prefill_fits(int64_t start_pos) const {
  return start_pos + info_.prefill_len <= info_.max_context;
}

std::vector<Step> HfStaticIOManager::plan(int64_t start_pos, size_t n_tokens) const {
  const int64_t n = int64_t(n_tokens), C = info_.max_context;
  if (start_pos < 0) fail("start_pos ", start_pos, " is negative");
  if (n_tokens == 0) fail("nothing to feed: the prompt is empty");
  if (start_pos > C || n > C - start_pos)
    fail("prompt does not fit: start_pos ", start_pos, " + ", n, " tokens > max_context ", C);
  std::vector<Step> steps;
  int64_t pos = start_pos;
  size_t i = 0;
  while (i < n_tokens) {
    if (prefill_fits(pos)) {
      size_t count = std::min<size_t>(n_tokens - i, size_t(info_.prefill_len));
      steps.push_back({StepKind::Prefill, pos, i, count});
      i += count;
      pos += int64_t(count);
    } else {
      steps.push_back({StepKind::Decode, pos, i, 1});
      ++i;
      ++pos;
    }
  }
  return steps;
}

void HfStaticIOManager::write_counters(int64_t start_pos) {
  for (int64_t l = 0; l < info_.n_layers; ++l) *state_[state_slot(l, StateRole::Counter)].as<int64_t>() = start_pos;
}

void HfStaticIOManager::prepare(StepKind kind, int64_t start_pos, std::span<const int64_t> tokens) {
  MethodState& ms = method(kind);
  const int64_t n = int64_t(tokens.size()), T = ms.rows, C = info_.max_context;
  if (n < 1 || n > T) fail(step_kind_name(kind), " step takes 1 to ", T, " tokens, got ", n);
  if (start_pos < 0 || start_pos + n > C)
    fail(step_kind_name(kind), " step at start_pos ", start_pos, " with ", n, " tokens does not fit max_context ", C);
  if (kind == StepKind::Prefill && !prefill_fits(start_pos))
    fail("prefill step at start_pos ", start_pos,
         " does not fit: a padded prefill call needs start_pos + prefill_len (", info_.prefill_len, ") <= max_context ",
         C);
  for (int64_t t : tokens)
    if (t < 0 || t >= info_.vocab_size) fail("token id ", t, " is outside the vocabulary [0, ", info_.vocab_size, ")");
  int64_t* tok = ms.tokens.as<int64_t>();
  int64_t* pos = ms.positions.as<int64_t>();
  float* mask = ms.mask.as<float>();
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < T; ++i) {
    const bool real = i < n;
    tok[i] = real ? tokens[size_t(i)] : 0;
    pos[i] = real ? start_pos + i : 0;
    float* row = mask + i * C;
    const int64_t visible = real ? start_pos + i + 1 : 0;
    std::fill_n(row, visible, 0.0f);
    std::fill_n(row + visible, C - visible, neg_inf);
  }
  if (metadata_.has_local_mask()) write_local_mask(ms, start_pos, n);
  write_counters(start_pos);
  if (ms.active_rows) ms.execution->set_active_rows(n);
  ms.execution->set_kernel_rows(verifying_ ? 1 : 0);
  const size_t logits = logits_output(info_.n_layers);
  if (all_logits_ || verifying_)
    ms.execution->set_output_rows(logits, 0, verifying_ ? n : T);
  else
    ms.execution->set_output_rows(logits, n - 1, n);
  rows_kept_ = all_logits_ || verifying_;
  prepared_ = kind;
  prepared_rows_ = n;
  ran_ = false;
}

// Real row i at position p = start_pos + i sees positions max(0, p - window + 1) .. p; padding
// rows see nothing.
void HfStaticIOManager::write_local_mask(MethodState& ms, int64_t start_pos, int64_t n) {
  const int64_t C = info_.max_context, window = metadata_.sliding_window;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < ms.rows; ++i) {
    float* row = ms.local_mask.as<float>() + i * C;
    const int64_t end = i < n ? start_pos + i + 1 : 0, begin = std::max<int64_t>(0, end - window);
    std::fill_n(row, C, neg_inf);
    std::fill(row + begin, row + end, 0.0f);
  }
}

void HfStaticIOManager::bind_state_outputs(Execution& exec) {
  if (exec.method().num_outputs() != output_count(info_.n_layers, /*repeated_state=*/true)) return;
  for (size_t slot = 0; slot < state_.size(); ++slot)
    exec.bind_output(repeated_state_output(info_.n_layers, slot), state_[slot].data());
}

void HfStaticIOManager::bind() {
  if (!prepared_) fail("bind() before prepare()");
  MethodState& ms = method(*prepared_);
  Execution& exec = *ms.execution;
  exec.bind_input(kTokensInput, ms.tokens.data());
  exec.bind_input(kPositionsInput, ms.positions.data());
  exec.bind_input(kMaskInput, ms.mask.data());
  if (metadata_.has_local_mask()) exec.bind_input(kLocalMaskInput, ms.local_mask.data());
  for (size_t slot = 0; slot < state_.size(); ++slot)
    exec.bind_input(state_input(metadata_, slot), state_[slot].data());
  bind_state_outputs(exec);
}

Status HfStaticIOManager::run(ThreadPool* pool) {
  if (!prepared_) return Status::error("run() before prepare()");
  Status s = method(*prepared_).execution->run(pool);
  ran_ = s.ok();
  return s;
}

int64_t HfStaticIOManager::verify_capacity(int64_t start_pos) const {
  return prefill_.active_rows && start_pos >= 0 && prefill_fits(start_pos) ? prefill_.rows : 0;
}

Status HfStaticIOManager::verify(int64_t start_pos, std::span<const int64_t> tokens, ThreadPool* pool) {
  if (int64_t(tokens.size()) > verify_capacity(start_pos))
    fail("verify: ", tokens.size(), " tokens at start_pos ", start_pos, " is more than the ",
         verify_capacity(start_pos), " it can take there");
  verifying_ = true;
  try {
    Status s = step(StepKind::Prefill, start_pos, tokens, pool);
    verifying_ = false;
    return s;
  } catch (...) {
    verifying_ = false;
    throw;
  }
}

std::span<const float> HfStaticIOManager::row_logits(int64_t row) const {
  if (!prepared_ || !ran_ || row < 0 || row >= prepared_rows_)
    fail("no logits of row ", row, ": the last step ran ", ran_ ? prepared_rows_ : 0, " rows");
  if (!rows_kept_ && row != prepared_rows_ - 1)
    fail("no logits of row ", row, ": the last step kept its last row's only (set_all_logits(true) keeps them all)");
  const Execution& exec = *method(*prepared_).execution;
  const float* all = static_cast<const float*>(exec.output_data(logits_output(info_.n_layers)));
  return {all + row * info_.vocab_size, size_t(info_.vocab_size)};
}

std::span<const float> HfStaticIOManager::logits() const {
  if (!prepared_ || !ran_) fail("no logits: no step has run since the last reset or prepare");
  const Execution& exec = *method(*prepared_).execution;
  const float* all = static_cast<const float*>(exec.output_data(logits_output(info_.n_layers)));
  return {all + (prepared_rows_ - 1) * info_.vocab_size, size_t(info_.vocab_size)};
}

}  // namespace hfstatic
