#include "io/hf_static_io_manager.h"

#include <cmath>
#include <limits>
#include <set>

namespace hfstatic {

using nlohmann::json;

namespace {

std::string join_lines(const std::string& origin, const std::vector<std::string>& v) {
  std::string out = cat(origin, ": program violates hf_static v1 (", v.size(), v.size() == 1 ? " problem)" : " problems)");
  for (const auto& s : v) out += "\n  " + s;
  return out;
}

// Reads metadata keys, recording a violation for each one missing, mistyped or out of range.
struct MetadataReader {
  const json& m;
  std::vector<std::string>& violations;

  std::optional<int64_t> integer(const char* key, int64_t min, int64_t max, const std::string& range = "") {
    auto it = m.find(key);
    if (it == m.end()) {
      violations.push_back(cat("metadata key '", key, "': missing"));
      return std::nullopt;
    }
    if (!it->is_number_integer()) {
      violations.push_back(cat("metadata key '", key, "': expected an integer, got ", it->dump()));
      return std::nullopt;
    }
    int64_t v = it->get<int64_t>();
    if (v < min || v > max) {
      violations.push_back(cat("metadata key '", key, "': ", v, " is outside ", range.empty() ? cat("[", min, ", ", max, "]") : range));
      return std::nullopt;
    }
    return v;
  }

  std::optional<std::string> string(const char* key) {
    auto it = m.find(key);
    if (it == m.end()) {
      violations.push_back(cat("metadata key '", key, "': missing"));
      return std::nullopt;
    }
    if (!it->is_string()) {
      violations.push_back(cat("metadata key '", key, "': expected a string, got ", it->dump()));
      return std::nullopt;
    }
    return it->get<std::string>();
  }
};

struct ExpectedValue {
  std::string role;
  DType dtype;
  Shape shape;
};

std::string describe(DType t, const Shape& s) { return cat(dtype_name(t), " ", shape_str(s)); }

// Reads a ModelInfo from metadata, recording violations; nullopt if unusable.
std::optional<ModelInfo> read_model_info(const Program& program, std::vector<std::string>& violations) {
  const json& m = program.metadata();
  MetadataReader r{m, violations};
  const size_t before = violations.size();

  // Features version 1 excludes.
  bool quantized_cache = false;
  if (auto it = m.find("cache_dtype"); it != m.end() && it->is_string()) {
    std::string t = it->get<std::string>();
    quantized_cache = t.rfind("int", 0) == 0 || t.rfind("uint", 0) == 0 || t.rfind("q", 0) == 0 || t.rfind("fp8", 0) == 0;
    if (quantized_cache)
      violations.push_back(cat("metadata key 'cache_dtype': '", t, "' is a quantized cache; quantized caches are excluded by hf_static v1"));
  }
  if (auto it = m.find("attention_layout"); it != m.end() && !(it->is_string() && it->get<std::string>() == "grouped"))
    violations.push_back(cat("metadata key 'attention_layout': ", it->dump(),
                             " is excluded by hf_static v1 (split single-head layouts are not supported; only \"grouped\")"));
  if (auto it = m.find("cache_mode"); it != m.end() && !(it->is_string() && it->get<std::string>() == "full"))
    violations.push_back(cat("metadata key 'cache_mode': ", it->dump(),
                             " is excluded by hf_static v1 (full-length sliding-window caches are not supported; only \"full\")"));
  if (auto it = m.find("batch_size"); it != m.end() && !(it->is_number_integer() && it->get<int64_t>() == 1))
    violations.push_back(cat("metadata key 'batch_size': ", it->dump(), " is excluded by hf_static v1 (batch size must be 1)"));

  ModelInfo info;
  auto layers = r.integer("n_layers", 1, 4096);
  auto kv_heads = r.integer("n_kv_heads", 1, 4096);
  auto head_dim = r.integer("head_dim", 1, 65536);
  auto context = r.integer("max_context", 2, int64_t(1) << 24);
  auto prefill = context ? r.integer("prefill_len", 1, *context, cat("[1, max_context = ", *context, "]"))
                         : r.integer("prefill_len", 1, int64_t(1) << 24);
  auto vocab = r.integer("vocab_size", 1, (int64_t(1) << 31) - 1);
  auto cache = r.string("cache_dtype");
  if (cache && *cache != "float32" && *cache != "float16" && !quantized_cache)
    violations.push_back(cat("metadata key 'cache_dtype': '", *cache, "' is not float32 or float16"));
  auto bos = vocab ? r.integer("bos_id", -1, *vocab - 1, cat("[-1, vocab_size = ", *vocab, ")")) : r.integer("bos_id", -1, INT64_MAX);
  if (auto it = m.find("eos_ids"); it == m.end()) {
    violations.push_back("metadata key 'eos_ids': missing");
  } else if (!it->is_array()) {
    violations.push_back(cat("metadata key 'eos_ids': expected an array of token ids, got ", it->dump()));
  } else {
    for (const auto& e : *it) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || (vocab && e.get<int64_t>() >= *vocab))
        violations.push_back(cat("metadata key 'eos_ids': ", e.dump(), " is not a token id in [0, vocab_size)"));
      else
        info.eos_ids.push_back(e.get<int64_t>());
    }
  }
  auto prefill_name = r.string("prefill_method");
  auto decode_name = r.string("decode_method");
  for (auto* name : {&prefill_name, &decode_name})
    if (*name && !program.spec().find_method(**name))
      violations.push_back(cat("metadata key '", name == &prefill_name ? "prefill_method" : "decode_method", "': the program has no method '",
                               **name, "'"));
  if (prefill_name && decode_name && *prefill_name == *decode_name)
    violations.push_back("metadata keys 'prefill_method' and 'decode_method' name the same method");
  if (violations.size() != before) return std::nullopt;
  info.n_layers = *layers;
  info.n_kv_heads = *kv_heads;
  info.head_dim = *head_dim;
  info.max_context = *context;
  info.prefill_len = *prefill;
  info.vocab_size = *vocab;
  info.cache_dtype = *dtype_from_name(*cache);
  info.bos_id = *bos;
  info.prefill_method = *prefill_name;
  info.decode_method = *decode_name;
  return info;
}

std::vector<ExpectedValue> expected_inputs(const ModelInfo& info, int64_t rows) {
  const Shape cache{1, info.n_kv_heads, info.max_context, info.head_dim};
  std::vector<ExpectedValue> v = {{"tokens", DType::I64, {1, rows}},
                                  {"positions", DType::I64, {1, rows}},
                                  {"mask", DType::F32, {1, 1, rows, info.max_context}}};
  for (int64_t l = 0; l < info.n_layers; ++l) {
    v.push_back({cat("k_cache of layer ", l), info.cache_dtype, cache});
    v.push_back({cat("v_cache of layer ", l), info.cache_dtype, cache});
    v.push_back({cat("counter of layer ", l), DType::I64, {1}});
  }
  return v;
}

// The input a repeated-state output copies: the source of the `copy` node producing it, or "".
std::string repeated_source(const MethodSpec& m, const std::string& value) {
  for (const auto& node : m.nodes)
    if (node.outputs.size() == 1 && node.outputs[0] == value)
      return node.op == "copy" && node.inputs.size() == 1 ? node.inputs[0] : std::string();
  return {};
}

void validate_method(const MethodSpec& m, const ModelInfo& info, int64_t rows, std::vector<std::string>& out) {
  const std::string where = cat("method '", m.name, "'");
  const auto inputs = expected_inputs(info, rows);
  const size_t n_state = size_t(3 * info.n_layers);
  if (m.inputs.size() != inputs.size()) {
    out.push_back(cat(where, ": expected ", inputs.size(), " inputs (tokens, positions, mask, then k_cache, v_cache, counter for ",
                      info.n_layers, " layers), got ", m.inputs.size()));
  }
  for (size_t i = 0; i < std::min(inputs.size(), m.inputs.size()); ++i) {
    const ExpectedValue& e = inputs[i];
    const ValueSpec& got = m.inputs[i];
    if (got.dtype != e.dtype || got.shape != e.shape)
      out.push_back(cat(where, " input ", i, " (", e.role, "): expected ", describe(e.dtype, e.shape), ", got ",
                        describe(got.dtype, got.shape)));
  }

  const size_t logits_index = n_state;
  const size_t plain = n_state + 1, repeated = 2 * n_state + 1;
  if (m.outputs.size() != plain && m.outputs.size() != repeated) {
    out.push_back(cat(where, ": expected ", plain, " outputs (", n_state, " state updates, logits) or ", repeated,
                      " (with the state repeated after logits), got ", m.outputs.size()));
    return;
  }
  // Mutation prefix: each state input reported exactly once, in any order.
  std::set<size_t> reported;
  for (size_t i = 0; i < n_state; ++i) {
    const OutputSpec& o = m.outputs[i];
    size_t input = SIZE_MAX;
    for (size_t k = 3; k < m.inputs.size(); ++k)
      if (m.inputs[k].name == o.value) input = k;
    if (o.memory != OutputMemory::Alias || input == SIZE_MAX) {
      out.push_back(cat(where, " output ", i, " (state update): must report a state input in place (alias), got ",
                        output_memory_name(o.memory), " value '", o.value, "'"));
    } else if (!reported.insert(input).second) {
      out.push_back(cat(where, " output ", i, " (state update): reports input ", input, " '", o.value, "' a second time"));
    }
  }
  const ValueSpec* logits = m.output_value(logits_index);
  const Shape logits_shape{1, rows, info.vocab_size};
  if (!logits || logits->dtype != DType::F32 || logits->shape != logits_shape)
    out.push_back(cat(where, " output ", logits_index, " (logits): expected ", describe(DType::F32, logits_shape), ", got ",
                      logits ? describe(logits->dtype, logits->shape) : "an unresolved value"));
  else if (m.outputs[logits_index].memory != OutputMemory::Planned)
    out.push_back(cat(where, " output ", logits_index, " (logits): must be planned, got ", output_memory_name(m.outputs[logits_index].memory)));
  if (m.outputs.size() == repeated) {
    for (size_t j = 0; j < n_state; ++j) {
      const size_t idx = logits_index + 1 + j;
      const ExpectedValue& e = inputs[3 + j];
      const ValueSpec* v = m.output_value(idx);
      if (!v || v->dtype != e.dtype || v->shape != e.shape)
        out.push_back(cat(where, " output ", idx, " (repeated ", e.role, "): expected ", describe(e.dtype, e.shape), ", got ",
                          v ? describe(v->dtype, v->shape) : "an unresolved value"));
      else if (m.outputs[idx].memory != OutputMemory::Unplanned)
        out.push_back(cat(where, " output ", idx, " (repeated ", e.role, "): must be unplanned (bound to the state buffer), got ",
                          output_memory_name(m.outputs[idx].memory)));
      else if (3 + j >= m.inputs.size())
        continue;  // the input count is already reported
      else if (std::string source = repeated_source(m, m.outputs[idx].value); source != m.inputs[3 + j].name)
        out.push_back(cat(where, " output ", idx, " (repeated ", e.role, "): must repeat input ", 3 + j, " '", m.inputs[3 + j].name,
                          "', but it repeats ", source.empty() ? "no state input" : "'" + source + "'"));
    }
  }
}

}  // namespace

ContractError::ContractError(const std::string& origin, std::vector<std::string> violations)
    : Error(join_lines(origin, violations)), violations_(std::move(violations)) {}

std::vector<std::string> hf_static_v1_violations(const Program& program) {
  std::vector<std::string> v;
  const json& m = program.metadata();
  auto contract = m.find("io_contract");
  if (contract == m.end() || !contract->is_string() || contract->get<std::string>() != "hf_static")
    v.push_back(cat("metadata key 'io_contract': expected \"hf_static\", got ", contract == m.end() ? "nothing" : contract->dump()));
  auto version = m.find("version");
  if (version == m.end() || !version->is_number_integer() || version->get<int64_t>() != 1)
    v.push_back(cat("metadata key 'version': expected 1, got ", version == m.end() ? "nothing" : version->dump()));
  auto info = read_model_info(program, v);
  if (!info) return v;
  validate_method(*program.spec().find_method(info->prefill_method), *info, info->prefill_len, v);
  validate_method(*program.spec().find_method(info->decode_method), *info, 1, v);
  return v;
}

std::vector<std::string> HfStaticIOManager::validate(const Program& program) const { return hf_static_v1_violations(program); }

void HfStaticIOManager::load(std::shared_ptr<const Program> program, BufferAllocator& allocator, const RuntimeOptions& runtime) {
  std::vector<std::string> violations = validate(*program);
  if (!violations.empty()) throw ContractError(program->path(), violations);
  std::vector<std::string> metadata_problems;  // empty unless validate() was relaxed
  auto info = read_model_info(*program, metadata_problems);
  if (!info) throw ContractError(program->path(), metadata_problems);
  info_ = *info;
  program_ = program;

  // One set of state for both methods.
  const auto inputs = expected_inputs(info_, 1);
  state_.clear();
  for (size_t i = 3; i < inputs.size(); ++i) {
    size_t bytes = size_t(*shape_numel(inputs[i].shape)) * dtype_size(inputs[i].dtype);
    state_.emplace_back(allocator, bytes);
  }
  for (StepKind kind : {StepKind::Prefill, StepKind::Decode}) {
    MethodState& ms = method(kind);
    ms.rows = kind == StepKind::Prefill ? info_.prefill_len : 1;
    ms.method = Method::load(program, kind == StepKind::Prefill ? info_.prefill_method : info_.decode_method, runtime);
    ms.execution = std::make_unique<Execution>(ms.method, allocator);
    ms.tokens = Buffer(allocator, size_t(ms.rows) * sizeof(int64_t));
    ms.positions = Buffer(allocator, size_t(ms.rows) * sizeof(int64_t));
    ms.mask = Buffer(allocator, size_t(ms.rows * info_.max_context) * sizeof(float));
  }
  reset();
}

void HfStaticIOManager::reset() {
  // The caches keep stale values, but counters are rewritten and masks rebuilt before every
  // step, so nothing from before the reset can be read.
  for (size_t l = 0; l < size_t(info_.n_layers); ++l) *state_[3 * l + 2].as<int64_t>() = 0;
  for (StepKind kind : {StepKind::Prefill, StepKind::Decode}) {
    MethodState& ms = method(kind);
    std::fill_n(ms.mask.as<float>(), ms.rows * info_.max_context, -std::numeric_limits<float>::infinity());
  }
  prepared_.reset();
  ran_ = false;
}

bool HfStaticIOManager::prefill_fits(int64_t start_pos) const { return start_pos + info_.prefill_len <= info_.max_context; }

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
  for (size_t l = 0; l < size_t(info_.n_layers); ++l) *state_[3 * l + 2].as<int64_t>() = start_pos;
}

void HfStaticIOManager::prepare(StepKind kind, int64_t start_pos, std::span<const int64_t> tokens) {
  MethodState& ms = method(kind);
  const int64_t n = int64_t(tokens.size()), T = ms.rows, C = info_.max_context;
  if (n < 1 || n > T) fail(step_kind_name(kind), " step takes 1 to ", T, " tokens, got ", n);
  if (start_pos < 0 || start_pos + n > C)
    fail(step_kind_name(kind), " step at start_pos ", start_pos, " with ", n, " tokens does not fit max_context ", C);
  if (kind == StepKind::Prefill && !prefill_fits(start_pos))
    fail("prefill step at start_pos ", start_pos, " does not fit: a padded prefill call needs start_pos + prefill_len (",
         info_.prefill_len, ") <= max_context ", C);
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
  write_counters(start_pos);
  const size_t logits = state_.size();
  if (all_logits_) ms.execution->set_output_rows(logits, 0, T);
  else ms.execution->set_output_rows(logits, n - 1, n);
  prepared_ = kind;
  prepared_rows_ = n;
  ran_ = false;
}

void HfStaticIOManager::bind_state_outputs(Execution& exec) {
  const size_t n_state = state_.size();
  if (exec.method().num_outputs() != 2 * n_state + 1) return;
  for (size_t j = 0; j < n_state; ++j) exec.bind_output(n_state + 1 + j, state_[j].data());
}

void HfStaticIOManager::bind() {
  if (!prepared_) fail("bind() before prepare()");
  MethodState& ms = method(*prepared_);
  Execution& exec = *ms.execution;
  exec.bind_input(0, ms.tokens.data());
  exec.bind_input(1, ms.positions.data());
  exec.bind_input(2, ms.mask.data());
  for (size_t j = 0; j < state_.size(); ++j) exec.bind_input(3 + j, state_[j].data());
  bind_state_outputs(exec);
}

Status HfStaticIOManager::run(ThreadPool* pool) {
  if (!prepared_) return Status::error("run() before prepare()");
  Status s = method(*prepared_).execution->run(pool);
  ran_ = s.ok();
  return s;
}

std::span<const float> HfStaticIOManager::logits() const {
  if (!prepared_ || !ran_) fail("no logits: no step has run since the last reset or prepare");
  const Execution& exec = *method(*prepared_).execution;
  const float* all = static_cast<const float*>(exec.output_data(state_.size()));
  return {all + (prepared_rows_ - 1) * info_.vocab_size, size_t(info_.vocab_size)};
}

void register_hf_static_io_manager(IOManagerRegistry& registry) {
  registry.add("hf_static", 1, [] { return std::make_unique<HfStaticIOManager>(); });
}

}  // namespace hfstatic
