#include "export/graph_builder.h"

#include <algorithm>
#include <set>

#include "util/error.h"

namespace hfstatic {

using nlohmann::json;

std::vector<std::string> mutation_orders() { return {"input", "reverse", "by-kind", "rotate"}; }

namespace {

// Indices 0..3L-1 of the state inputs (k0, v0, c0, k1, ...) in the order the program reports them.
std::vector<size_t> mutation_permutation(const std::string& order, int64_t layers) {
  const size_t n = size_t(3 * layers);
  std::vector<size_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = i;
  if (order == "input") return p;
  if (order == "reverse") {
    std::reverse(p.begin(), p.end());
  } else if (order == "by-kind") {  // all counters, then all values, then all keys
    p.clear();
    for (size_t kind : {2, 1, 0})
      for (int64_t l = 0; l < layers; ++l) p.push_back(size_t(3 * l) + kind);
  } else if (order == "rotate") {
    std::rotate(p.begin(), p.begin() + 1, p.end());
  } else {
    std::string names;
    for (const auto& o : mutation_orders()) names += (names.empty() ? "" : ", ") + o;
    fail("--mutation-order '", order, "' is not known (known: ", names, ")");
  }
  return p;
}

class MethodBuilder {
 public:
  MethodBuilder(std::string name, int64_t rows) { m_.name = std::move(name), rows_ = rows; }

  void input(const std::string& name, DType dtype, Shape shape) { m_.inputs.push_back({name, dtype, std::move(shape)}); }
  // Declares a float32 activation [1, rows, width] and returns its name.
  std::string value(const std::string& name, int64_t width) {
    m_.values.push_back({name, DType::F32, {1, rows_, width}});
    return name;
  }
  void node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs, json attrs = json::object()) {
    m_.nodes.push_back({op, std::move(inputs), std::move(outputs), std::move(attrs)});
  }
  std::string op(const std::string& op, std::vector<std::string> inputs, const std::string& out, int64_t width,
                 json attrs = json::object()) {
    node(op, std::move(inputs), {value(out, width)}, std::move(attrs));
    return out;
  }
  MethodSpec& spec() { return m_; }

 private:
  MethodSpec m_;
  int64_t rows_ = 0;
};

MethodSpec build_method(const std::string& name, int64_t rows, const HfConfig& c, const GraphOptions& o) {
  MethodBuilder b(name, rows);
  const int64_t L = c.num_hidden_layers, H = c.num_key_value_heads, D = c.head_dim, C = o.max_context;
  const int64_t E = c.hidden_size, Q = c.num_attention_heads * D, KV = H * D, F = c.intermediate_size;
  b.input("tokens", DType::I64, {1, rows});
  b.input("positions", DType::I64, {1, rows});
  b.input("mask", DType::F32, {1, 1, rows, C});
  std::vector<std::string> state;
  for (int64_t l = 0; l < L; ++l) {
    for (const char* kind : {"k_cache", "v_cache", "counter"}) state.push_back(cat(kind, "_", l));
    b.input(state[state.size() - 3], o.cache_dtype, {1, H, C, D});
    b.input(state[state.size() - 2], o.cache_dtype, {1, H, C, D});
    b.input(state[state.size() - 1], DType::I64, {1});
  }

  json rope_attrs = {{"head_dim", D}, {"theta", c.rope_theta}};
  if (c.rope_scaling) {
    const RopeScaling& s = *c.rope_scaling;
    rope_attrs["scaling"] = {{"type", s.type}, {"factor", s.factor}, {"low_freq_factor", s.low_freq_factor},
                             {"high_freq_factor", s.high_freq_factor},
                             {"original_max_position_embeddings", s.original_max_position_embeddings}};
  }
  const json eps = {{"eps", c.rms_norm_eps}};

  std::string h = b.op("embedding", {"tokens", "model.embed_tokens.weight"}, "embed", E);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = cat("model.layers.", l, ".");
    const std::string v = cat("l", l, ".");
    auto proj = [&](const std::string& which, const std::string& x, int64_t width, bool bias) {
      std::vector<std::string> in = {x, p + "self_attn." + which + ".weight"};
      if (bias) in.push_back(p + "self_attn." + which + ".bias");
      return b.op("linear", in, v + which, width);
    };
    std::string x = b.op("rms_norm", {h, p + "input_layernorm.weight"}, v + "attn_norm", E, eps);
    std::string q = proj("q_proj", x, Q, c.attention_bias);
    std::string k = proj("k_proj", x, KV, c.attention_bias);
    std::string val = proj("v_proj", x, KV, c.attention_bias);
    if (c.qk_norm) {
      q = b.op("head_rms_norm", {q, p + "self_attn.q_norm.weight"}, v + "q_norm", Q, eps);
      k = b.op("head_rms_norm", {k, p + "self_attn.k_norm.weight"}, v + "k_norm", KV, eps);
    }
    q = b.op("rope", {q, "positions"}, v + "q_rope", Q, rope_attrs);
    k = b.op("rope", {k, "positions"}, v + "k_rope", KV, rope_attrs);
    const std::string kc = cat("k_cache_", l), vc = cat("v_cache_", l), ctr = cat("counter_", l);
    b.node("cache_write", {k, val, kc, vc, ctr, "mask"}, {});
    std::string a = b.op("attention", {q, kc, vc, "mask"}, v + "attn", Q, {{"n_heads", c.num_attention_heads}});
    std::string out = proj("o_proj", a, E, c.o_proj_bias);
    h = b.op("add", {h, out}, v + "attn_residual", E);
    x = b.op("rms_norm", {h, p + "post_attention_layernorm.weight"}, v + "mlp_norm", E, eps);
    std::string g = b.op("linear", {x, p + "mlp.gate_proj.weight"}, v + "gate", F);
    std::string u = b.op("linear", {x, p + "mlp.up_proj.weight"}, v + "up", F);
    std::string act = b.op("silu_mul", {g, u}, v + "act", F);
    std::string d = b.op("linear", {act, p + "mlp.down_proj.weight"}, v + "down", E);
    h = b.op("add", {h, d}, v + "mlp_residual", E);
  }
  std::string hn = b.op("rms_norm", {h, "model.norm.weight"}, "final_norm", E, eps);
  const std::string head = c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  b.op("linear", {hn, head}, "logits", c.vocab_size);

  MethodSpec& m = b.spec();
  for (size_t i : mutation_permutation(o.mutation_order, L))
    m.outputs.push_back({state[i] + "_updated", state[i], OutputMemory::Alias});
  m.outputs.push_back({"logits", "logits", OutputMemory::Planned});
  if (o.repeat_state) {
    for (size_t i = 0; i < state.size(); ++i) {
      const ValueSpec& in = m.inputs[3 + i];
      const std::string out = state[i] + "_out";
      m.values.push_back({out, in.dtype, in.shape});
      m.nodes.push_back({"copy", {state[i]}, {out}, json::object()});
      m.outputs.push_back({out, out, OutputMemory::Unplanned});
    }
  }
  return m;
}

}  // namespace

BuiltProgram build_program(const HfConfig& c, const GraphOptions& o) {
  if (o.max_context < 2) fail("--max-context ", o.max_context, " is below the minimum of 2");
  if (o.max_context > c.max_position_embeddings)
    fail("--max-context ", o.max_context, " exceeds the model's max_position_embeddings ", c.max_position_embeddings);
  if (o.prefill_len < 1 || o.prefill_len > o.max_context)
    fail("--prefill-len ", o.prefill_len, " is outside [1, max_context = ", o.max_context, "]");
  if (o.cache_dtype != DType::F32 && o.cache_dtype != DType::F16)
    fail("--cache-dtype ", dtype_name(o.cache_dtype), " is not supported (float32, float16)");
  if (c.sliding_window && *c.sliding_window < o.max_context)
    fail("config field 'sliding_window' = ", *c.sliding_window, " is smaller than max_context ", o.max_context,
         "; sliding-window attention is not supported (export with --max-context ", *c.sliding_window, " or less)");

  BuiltProgram out;
  ProgramSpec& spec = out.spec;
  json eos = json::array();
  for (int64_t id : c.eos_token_ids) eos.push_back(id);
  spec.metadata = {
      {"io_contract", "hf_static"},
      {"version", 1},
      {"n_layers", c.num_hidden_layers},
      {"n_kv_heads", c.num_key_value_heads},
      {"head_dim", c.head_dim},
      {"max_context", o.max_context},
      {"prefill_len", o.prefill_len},
      {"vocab_size", c.vocab_size},
      {"cache_dtype", dtype_name(o.cache_dtype)},
      {"bos_id", c.bos_token_id ? *c.bos_token_id : -1},
      {"eos_ids", eos},
      {"prefill_method", "prefill"},
      {"decode_method", "decode"},
      {"model_type", c.model_type},
      {"n_heads", c.num_attention_heads},
      {"hidden_size", c.hidden_size},
      {"mutation_order", o.mutation_order},
      {"repeat_state", o.repeat_state},
  };
  spec.methods.push_back(build_method("prefill", o.prefill_len, c, o));
  spec.methods.push_back(build_method("decode", 1, c, o));

  out.weights = expected_tensors(c);
  return out;
}

}  // namespace hfstatic
