#include "contract/hf_static_contract.h"

#include <algorithm>
#include <set>

namespace hfstatic {

using nlohmann::json;

namespace hf_static {
namespace {

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
      violations.push_back(
          cat("metadata key '", key, "': ", v, " is outside ", range.empty() ? cat("[", min, ", ", max, "]") : range));
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

std::string describe(DType t, const Shape& s) { return cat(dtype_name(t), " ", shape_str(s)); }

// Features both versions exclude; returns whether the cache is quantized (reported here already).
bool check_excluded_features(const json& m, int64_t version, std::vector<std::string>& violations) {
  const std::string by = cat(" excluded by hf_static v", version);
  bool quantized_cache = false;
  if (auto it = m.find(keys::cache_dtype); it != m.end() && it->is_string()) {
    std::string t = it->get<std::string>();
    quantized_cache =
        t.rfind("int", 0) == 0 || t.rfind("uint", 0) == 0 || t.rfind("q", 0) == 0 || t.rfind("fp8", 0) == 0;
    if (quantized_cache)
      violations.push_back(
          cat("metadata key '", keys::cache_dtype, "': '", t, "' is a quantized cache; quantized caches are", by));
  }
  if (auto it = m.find(keys::attention_layout);
      it != m.end() && !(it->is_string() && it->get<std::string>() == "grouped"))
    violations.push_back(cat("metadata key '", keys::attention_layout, "': ", it->dump(), " is", by,
                             " (split single-head layouts are not supported; only \"grouped\")"));
  if (auto it = m.find(keys::cache_mode); it != m.end() && !(it->is_string() && it->get<std::string>() == "full"))
    violations.push_back(cat("metadata key '", keys::cache_mode, "': ", it->dump(), " is", by,
                             " (full-length sliding-window caches are not supported; only \"full\")"));
  if (auto it = m.find(keys::batch_size); it != m.end() && !(it->is_number_integer() && it->get<int64_t>() == 1))
    violations.push_back(
        cat("metadata key '", keys::batch_size, "': ", it->dump(), " is", by, " (batch size must be 1)"));
  return quantized_cache;
}

std::vector<int64_t> read_eos_ids(const json& m, std::optional<int64_t> vocab, std::vector<std::string>& violations) {
  std::vector<int64_t> ids;
  auto it = m.find(keys::eos_ids);
  if (it == m.end()) {
    violations.push_back(cat("metadata key '", keys::eos_ids, "': missing"));
  } else if (!it->is_array()) {
    violations.push_back(cat("metadata key '", keys::eos_ids, "': expected an array of token ids, got ", it->dump()));
  } else {
    for (const auto& e : *it) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || (vocab && e.get<int64_t>() >= *vocab))
        violations.push_back(
            cat("metadata key '", keys::eos_ids, "': ", e.dump(), " is not a token id in [0, vocab_size)"));
      else
        ids.push_back(e.get<int64_t>());
    }
  }
  return ids;
}

// Version 2's layer_types and sliding_window (max_context, when known, bounds the window);
// version 1 refuses them.
void read_local_layers(const json& m, int64_t version, std::optional<int64_t> layers, std::optional<int64_t> context,
                       Metadata& info, std::vector<std::string>& violations) {
  if (version < kVersion2) {
    for (const char* key : {keys::layer_types, keys::sliding_window})
      if (m.contains(key))
        violations.push_back(cat("metadata key '", key, "': sliding-window layers are excluded by hf_static v1 (",
                                 "they need version 2)"));
    return;
  }
  MetadataReader r{m, violations};
  auto window = context
                    ? r.integer(keys::sliding_window, 1, *context - 1, cat("[1, max_context - 1 = ", *context - 1, "]"))
                    : r.integer(keys::sliding_window, 1, int64_t(1) << 24);
  if (window) info.sliding_window = *window;
  auto it = m.find(keys::layer_types);
  if (it == m.end()) {
    violations.push_back(cat("metadata key '", keys::layer_types, "': missing"));
    return;
  }
  if (!it->is_array() || (layers && it->size() != size_t(*layers))) {
    violations.push_back(cat("metadata key '", keys::layer_types, "': expected an array of ",
                             layers ? cat("n_layers = ", *layers, " ") : std::string(),
                             "entries \"global\" or \"local\", got ", it->dump()));
    return;
  }
  const size_t before = violations.size();
  for (size_t l = 0; l < it->size(); ++l) {
    const json& e = (*it)[l];
    if (e.is_string() && e.get<std::string>() == "global")
      info.layer_kinds.push_back(LayerKind::Global);
    else if (e.is_string() && e.get<std::string>() == "local")
      info.layer_kinds.push_back(LayerKind::Local);
    else
      violations.push_back(
          cat("metadata key '", keys::layer_types, "': entry ", l, " is ", e.dump(), ", not \"global\" or \"local\""));
  }
  if (violations.size() == before &&
      std::find(info.layer_kinds.begin(), info.layer_kinds.end(), LayerKind::Local) == info.layer_kinds.end())
    violations.push_back(cat("metadata key '", keys::layer_types, "': no layer is \"local\"; a program without ",
                             "local layers is hf_static v1"));
}

// The input a repeated-state output copies: the source of the `copy` node producing it, or "".
std::string repeated_source(const MethodSpec& m, const std::string& value) {
  for (const auto& node : m.nodes)
    if (node.outputs.size() == 1 && node.outputs[0] == value)
      return node.op == "copy" && node.inputs.size() == 1 ? node.inputs[0] : std::string();
  return {};
}

void check_inputs(const MethodSpec& m, const std::vector<ValueLayout>& inputs, const Metadata& info,
                  std::vector<std::string>& out) {
  const std::string where = cat("method '", m.name, "'");
  if (m.inputs.size() != inputs.size()) {
    out.push_back(cat(where, ": expected ", inputs.size(), " inputs (tokens, positions, mask, ",
                      info.has_local_mask() ? "local_mask, " : "", "then k_cache, v_cache, counter for ", info.n_layers,
                      " layers), got ", m.inputs.size()));
  }
  for (size_t i = 0; i < std::min(inputs.size(), m.inputs.size()); ++i) {
    const ValueLayout& e = inputs[i];
    const ValueSpec& got = m.inputs[i];
    if (got.dtype != e.dtype || got.shape != e.shape)
      out.push_back(cat(where, " input ", i, " (", e.role, "): expected ", describe(e.dtype, e.shape), ", got ",
                        describe(got.dtype, got.shape)));
  }
}

// Mutation prefix: each state input reported exactly once, in any order.
void check_mutation_prefix(const MethodSpec& m, const Metadata& info, std::vector<std::string>& out) {
  const std::string where = cat("method '", m.name, "'");
  std::set<size_t> reported;
  for (size_t i = 0; i < state_count(info.n_layers); ++i) {
    const OutputSpec& o = m.outputs[i];
    size_t input = SIZE_MAX;
    for (size_t k = first_state_input(info); k < m.inputs.size(); ++k)
      if (m.inputs[k].name == o.value) input = k;
    if (o.memory != OutputMemory::Alias || input == SIZE_MAX) {
      out.push_back(cat(where, " output ", i, " (state update): must report a state input in place (alias), got ",
                        output_memory_name(o.memory), " value '", o.value, "'"));
    } else if (!reported.insert(input).second) {
      out.push_back(
          cat(where, " output ", i, " (state update): reports input ", input, " '", o.value, "' a second time"));
    }
  }
}

void check_repeated_state(const MethodSpec& m, const std::vector<ValueLayout>& inputs, const Metadata& info,
                          std::vector<std::string>& out) {
  const std::string where = cat("method '", m.name, "'");
  for (size_t slot = 0; slot < state_count(info.n_layers); ++slot) {
    const size_t idx = repeated_state_output(info.n_layers, slot), input = state_input(info, slot);
    const ValueLayout& e = inputs[input];
    const ValueSpec* v = m.output_value(idx);
    if (!v || v->dtype != e.dtype || v->shape != e.shape)
      out.push_back(cat(where, " output ", idx, " (repeated ", e.role, "): expected ", describe(e.dtype, e.shape),
                        ", got ", v ? describe(v->dtype, v->shape) : "an unresolved value"));
    else if (m.outputs[idx].memory != OutputMemory::Unplanned)
      out.push_back(cat(where, " output ", idx, " (repeated ", e.role,
                        "): must be unplanned (bound to the state buffer), got ",
                        output_memory_name(m.outputs[idx].memory)));
    else if (input >= m.inputs.size())
      continue;  // the input count is already reported
    else if (std::string source = repeated_source(m, m.outputs[idx].value); source != m.inputs[input].name)
      out.push_back(cat(where, " output ", idx, " (repeated ", e.role, "): must repeat input ", input, " '",
                        m.inputs[input].name, "', but it repeats ",
                        source.empty() ? "no state input" : "'" + source + "'"));
  }
}

// Version 2: every attention node over a layer's key cache reads the mask of the layer's kind.
void check_layer_masks(const MethodSpec& m, const Metadata& info, std::vector<std::string>& out) {
  if (m.inputs.size() <= state_input(info, state_count(info.n_layers) - 1)) return;  // already reported
  for (const NodeSpec& node : m.nodes) {
    if (node.op != "attention" || node.inputs.size() < 4) continue;
    for (int64_t l = 0; l < info.n_layers; ++l) {
      if (node.inputs[1] != m.inputs[state_input(info, state_slot(l, StateRole::KeyCache))].name) continue;
      const LayerKind kind = info.layer_kinds[size_t(l)];
      const size_t want = kind == LayerKind::Local ? kLocalMaskInput : kMaskInput;
      if (node.inputs[3] != m.inputs[want].name)
        out.push_back(cat("method '", m.name, "' layer ", l, " (", layer_kind_name(kind), "): attention reads '",
                          node.inputs[3], "' as its mask, expected input ", want, " '", m.inputs[want].name, "'"));
    }
  }
}

void check_method(const MethodSpec& m, const Metadata& info, int64_t rows, std::vector<std::string>& out) {
  const std::string where = cat("method '", m.name, "'");
  const auto inputs = method_inputs(info, rows);
  check_inputs(m, inputs, info, out);
  if (info.has_local_mask()) check_layer_masks(m, info, out);

  const size_t n_state = state_count(info.n_layers), logits_index = logits_output(info.n_layers);
  const size_t plain = output_count(info.n_layers, false), repeated = output_count(info.n_layers, true);
  if (m.outputs.size() != plain && m.outputs.size() != repeated) {
    out.push_back(cat(where, ": expected ", plain, " outputs (", n_state, " state updates, logits) or ", repeated,
                      " (with the state repeated after logits), got ", m.outputs.size()));
    return;
  }
  check_mutation_prefix(m, info, out);
  const ValueSpec* logits = m.output_value(logits_index);
  const Shape shape = logits_shape(info, rows);
  if (!logits || logits->dtype != DType::F32 || logits->shape != shape)
    out.push_back(cat(where, " output ", logits_index, " (logits): expected ", describe(DType::F32, shape), ", got ",
                      logits ? describe(logits->dtype, logits->shape) : "an unresolved value"));
  else if (m.outputs[logits_index].memory != OutputMemory::Planned)
    out.push_back(cat(where, " output ", logits_index, " (logits): must be planned, got ",
                      output_memory_name(m.outputs[logits_index].memory)));
  if (m.outputs.size() == repeated) check_repeated_state(m, inputs, info, out);
}

}  // namespace

const char* layer_kind_name(LayerKind kind) { return kind == LayerKind::Local ? "local" : "global"; }

std::optional<Metadata> read_metadata(const Program& program, std::vector<std::string>& violations, int64_t version) {
  const json& m = program.metadata();
  MetadataReader r{m, violations};
  const size_t before = violations.size();
  const bool quantized_cache = check_excluded_features(m, version, violations);

  Metadata info;
  info.version = version;
  auto layers = r.integer(keys::n_layers, 1, 4096);
  auto kv_heads = r.integer(keys::n_kv_heads, 1, 4096);
  auto head_dim = r.integer(keys::head_dim, 1, 65536);
  auto context = r.integer(keys::max_context, 2, int64_t(1) << 24);
  auto prefill = context ? r.integer(keys::prefill_len, 1, *context, cat("[1, max_context = ", *context, "]"))
                         : r.integer(keys::prefill_len, 1, int64_t(1) << 24);
  auto vocab = r.integer(keys::vocab_size, 1, (int64_t(1) << 31) - 1);
  auto cache = r.string(keys::cache_dtype);
  if (cache && *cache != "float32" && *cache != "float16" && !quantized_cache)
    violations.push_back(cat("metadata key '", keys::cache_dtype, "': '", *cache, "' is not float32 or float16"));
  auto bos = vocab ? r.integer(keys::bos_id, -1, *vocab - 1, cat("[-1, vocab_size = ", *vocab, ")"))
                   : r.integer(keys::bos_id, -1, INT64_MAX);
  info.eos_ids = read_eos_ids(m, vocab, violations);
  auto prefill_name = r.string(keys::prefill_method);
  auto decode_name = r.string(keys::decode_method);
  for (auto* name : {&prefill_name, &decode_name})
    if (*name && !program.spec().find_method(**name))
      violations.push_back(cat("metadata key '", name == &prefill_name ? keys::prefill_method : keys::decode_method,
                               "': the program has no method '", **name, "'"));
  if (prefill_name && decode_name && *prefill_name == *decode_name)
    violations.push_back(
        cat("metadata keys '", keys::prefill_method, "' and '", keys::decode_method, "' name the same method"));
  read_local_layers(m, version, layers, context, info, violations);
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

json metadata_json(const Metadata& m) {
  json eos = json::array();
  for (int64_t id : m.eos_ids) eos.push_back(id);
  json out = {
      {keys::io_contract, kContract},
      {keys::version, m.version},
      {keys::n_layers, m.n_layers},
      {keys::n_kv_heads, m.n_kv_heads},
      {keys::head_dim, m.head_dim},
      {keys::max_context, m.max_context},
      {keys::prefill_len, m.prefill_len},
      {keys::vocab_size, m.vocab_size},
      {keys::cache_dtype, dtype_name(m.cache_dtype)},
      {keys::bos_id, m.bos_id},
      {keys::eos_ids, eos},
      {keys::prefill_method, m.prefill_method},
      {keys::decode_method, m.decode_method},
  };
  if (m.has_local_mask()) {
    json kinds = json::array();
    for (LayerKind kind : m.layer_kinds) kinds.push_back(layer_kind_name(kind));
    out[keys::layer_types] = kinds;
    out[keys::sliding_window] = m.sliding_window;
  }
  return out;
}

std::string summary(const Metadata& m) {
  std::string layers = cat(m.n_layers, " layers");
  if (m.has_local_mask())
    layers += cat(" (", std::count(m.layer_kinds.begin(), m.layer_kinds.end(), LayerKind::Local),
                  " local, sliding_window ", m.sliding_window, ")");
  return cat(layers, ", max_context ", m.max_context, ", prefill_len ", m.prefill_len, ", ", dtype_name(m.cache_dtype),
             " cache");
}

std::vector<ValueLayout> method_inputs(const Metadata& info, int64_t rows) {
  const Shape cache{1, info.n_kv_heads, info.max_context, info.head_dim};
  std::vector<ValueLayout> v = {{"tokens", "tokens", DType::I64, {1, rows}},
                                {"positions", "positions", DType::I64, {1, rows}},
                                {"mask", "mask", DType::F32, {1, 1, rows, info.max_context}}};
  if (info.has_local_mask()) v.push_back({"local_mask", "local_mask", DType::F32, {1, 1, rows, info.max_context}});
  for (int64_t l = 0; l < info.n_layers; ++l) {
    v.push_back({cat("k_cache_", l), cat("k_cache of layer ", l), info.cache_dtype, cache});
    v.push_back({cat("v_cache_", l), cat("v_cache of layer ", l), info.cache_dtype, cache});
    v.push_back({cat("counter_", l), cat("counter of layer ", l), DType::I64, {1}});
  }
  return v;
}

Shape logits_shape(const Metadata& info, int64_t rows) { return {1, rows, info.vocab_size}; }

}  // namespace hf_static

namespace {
std::string join_lines(const std::string& origin, const std::vector<std::string>& v, int64_t version) {
  std::string out = cat(origin, ": program violates hf_static v", version, " (", v.size(),
                        v.size() == 1 ? " problem)" : " problems)");
  for (const auto& s : v) out += "\n  " + s;
  return out;
}
}  // namespace

ContractError::ContractError(const std::string& origin, std::vector<std::string> violations, int64_t version)
    : Error(join_lines(origin, violations, version)), violations_(std::move(violations)) {}

std::vector<std::string> hf_static_v1_violations(const Program& program) {
  return hf_static_violations(program, hf_static::kVersion);
}

std::vector<std::string> hf_static_v2_violations(const Program& program) {
  return hf_static_violations(program, hf_static::kVersion2);
}

std::vector<std::string> hf_static_violations(const Program& program, int64_t version) {
  using namespace hf_static;
  std::vector<std::string> v;
  const json& m = program.metadata();
  auto contract = m.find(keys::io_contract);
  if (contract == m.end() || !contract->is_string() || contract->get<std::string>() != kContract)
    v.push_back(cat("metadata key '", keys::io_contract, "': expected \"", kContract, "\", got ",
                    contract == m.end() ? "nothing" : contract->dump()));
  auto found = m.find(keys::version);
  if (found == m.end() || !found->is_number_integer() || found->get<int64_t>() != version)
    v.push_back(cat("metadata key '", keys::version, "': expected ", version, ", got ",
                    found == m.end() ? "nothing" : found->dump()));
  auto info = read_metadata(program, v, version);
  if (!info) return v;
  check_method(*program.spec().find_method(info->prefill_method), *info, method_rows(*info, true), v);
  check_method(*program.spec().find_method(info->decode_method), *info, method_rows(*info, false), v);
  return v;
}

}  // namespace hfstatic
