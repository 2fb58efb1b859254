#include "export/graph_builder.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "contract/hf_static_contract.h"
#include "export/rope_config.h"
#include "util/error.h"

namespace hfstatic {

using nlohmann::json;

std::vector<std::string> mutation_orders() { return {"input", "reverse", "by-kind", "rotate"}; }

namespace {

// Indices 0..3L-1 of the state inputs (k0, v0, c0, k1, ...) in the order the program reports them.
std::vector<size_t> mutation_permutation(const std::string& order, int64_t layers) {
  using hf_static::StateRole;
  const size_t n = hf_static::state_count(layers);
  std::vector<size_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = i;
  if (order == "input") return p;
  if (order == "reverse") {
    std::reverse(p.begin(), p.end());
  } else if (order == "by-kind") {  // all counters, then all values, then all keys
    p.clear();
    for (StateRole role : {StateRole::Counter, StateRole::ValueCache, StateRole::KeyCache})
      for (int64_t l = 0; l < layers; ++l) p.push_back(hf_static::state_slot(l, role));
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

  void input(const std::string& name, DType dtype, Shape shape) {
    m_.inputs.push_back({name, dtype, std::move(shape)});
  }
  // Declares a float32 activation [1, rows, width] and returns its name.
  std::string value(const std::string& name, int64_t width) {
    m_.values.push_back({name, DType::F32, {1, rows_, width}});
    return name;
  }
  void node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
            json attrs = json::object()) {
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

// The inputs a layer's nodes read, by name.
struct LayerInputs {
  std::string positions, mask, mask_for_cache, k_cache, v_cache, counter;
  const json* rope;  // the layer's rope attributes
};

// Granite's multipliers (1 elsewhere: no node).
std::string scaled(MethodBuilder& b, const std::string& x, double factor, const std::string& out, int64_t width) {
  return factor == 1 ? x : b.op("scale", {x}, out, width, {{"factor", factor}});
}

// The op of act(gate) * up for the config's hidden activation.
const char* gated_activation_op(const HfConfig& c) {
  if (c.hidden_act == "gelu_pytorch_tanh") return "gelu_tanh_mul";
  return c.hidden_act == "gelu" ? "gelu_mul" : "silu_mul";
}

// A gated MLP down(act(gate x) * up x) of width F; weights: gate, up, down. Returns its output.
std::string build_mlp(MethodBuilder& b, const HfConfig& c, const std::string& x, const std::array<std::string, 3>& w,
                      int64_t F, const std::string& out) {
  std::string g = b.op("linear", {x, w[0]}, out + "gate", F);
  std::string u = b.op("linear", {x, w[1]}, out + "up", F);
  std::string act = b.op(gated_activation_op(c), {g, u}, out + "act", F);
  return b.op("linear", {act, w[2]}, out + "down", c.hidden_size);
}

// Layer l's mixture of experts over x: one moe node (router, top-k, the chosen experts), plus
// the shared expert scaled by the sigmoid of its gate where the family has one.
std::string build_experts(MethodBuilder& b, const HfConfig& c, int64_t l, const std::string& x) {
  const MoeConfig& moe = *c.moe;
  const MoeLayerNames names = moe_layer_names(moe, l);
  const std::string v = cat("l", l, ".");
  std::vector<std::string> inputs = {x, names.router};
  for (const auto& expert : names.experts) inputs.insert(inputs.end(), expert.begin(), expert.end());
  std::string out = b.op("moe", inputs, v + "experts", c.hidden_size,
                         {{"n_experts", moe.experts}, {"top_k", moe.top_k}, {"normalize", moe.normalize_top_k}});
  if (moe.shared_expert_size == 0) return out;
  const std::string shared = build_mlp(b, c, x, names.shared, moe.shared_expert_size, v + "shared_");
  const std::string gate = b.op("linear", {x, names.shared_gate}, v + "shared_expert_gate", 1);
  const std::string gated = b.op("sigmoid_scale", {shared, gate}, v + "shared_gated", c.hidden_size);
  return b.op("add", {out, gated}, v + "moe", c.hidden_size);
}

// One decoder layer from residual stream h; returns the new residual stream.
std::string build_layer(MethodBuilder& b, const HfConfig& c, int64_t l, const std::string& h0, const LayerInputs& in) {
  const int64_t H = c.num_key_value_heads, D = c.head_dim;
  const int64_t E = c.hidden_size, Q = c.num_attention_heads * D, KV = H * D, F = c.intermediate_size;
  const std::string p = cat("model.layers.", l, ".");
  const std::string v = cat("l", l, ".");
  const json eps = {{"eps", c.rms_norm_eps}};
  auto proj = [&](const std::string& which, const std::string& x, int64_t width, bool bias) {
    std::vector<std::string> inputs = {x, p + "self_attn." + which + ".weight"};
    if (bias) inputs.push_back(p + "self_attn." + which + ".bias");
    return b.op("linear", inputs, v + which, width);
  };
  auto norm = [&](const std::string& x, const std::string& weight, const std::string& out) {
    return b.op("rms_norm", {x, p + weight + ".weight"}, v + out, E, eps);
  };
  std::string x = norm(h0, "input_layernorm", "attn_norm");
  std::string q = proj("q_proj", x, Q, c.attention_bias);
  std::string k = proj("k_proj", x, KV, c.attention_bias);
  std::string val = proj("v_proj", x, KV, c.attention_bias);
  if (c.qk_norm) {
    const char* norm_op = c.qk_norm_whole ? "rms_norm" : "head_rms_norm";
    q = b.op(norm_op, {q, p + "self_attn.q_norm.weight"}, v + "q_norm", Q, eps);
    k = b.op(norm_op, {k, p + "self_attn.k_norm.weight"}, v + "k_norm", KV, eps);
  }
  if (c.rope_layers.empty() || c.rope_layers[size_t(l)]) {
    q = b.op("rope", {q, in.positions}, v + "q_rope", Q, *in.rope);
    k = b.op("rope", {k, in.positions}, v + "k_rope", KV, *in.rope);
  }
  b.node("cache_write", {k, val, in.k_cache, in.v_cache, in.counter, in.mask_for_cache}, {});
  json attention = {{"n_heads", c.num_attention_heads}};
  if (c.query_pre_attn_scalar) attention["scale"] = 1.0 / std::sqrt(*c.query_pre_attn_scalar);
  if (c.attention_multiplier) attention["scale"] = *c.attention_multiplier;
  if (c.attn_logit_softcapping) attention["softcap"] = *c.attn_logit_softcapping;
  std::string a = b.op("attention", {q, in.k_cache, in.v_cache, in.mask}, v + "attn", Q, attention);
  std::string out = scaled(b, proj("o_proj", a, E, c.o_proj_bias), c.residual_multiplier, v + "o_scaled", E);
  if (c.sandwich_norms) out = norm(out, "post_attention_layernorm", "attn_post_norm");
  std::string h = b.op("add", {h0, out}, v + "attn_residual", E);
  x = norm(h, c.sandwich_norms ? "pre_feedforward_layernorm" : "post_attention_layernorm", "mlp_norm");
  std::string d =
      c.moe && c.moe->layers[size_t(l)]
          ? build_experts(b, c, l, x)
          : build_mlp(b, c, x, {p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight"}, F,
                      v);
  if (c.sandwich_norms) d = norm(d, "post_feedforward_layernorm", "mlp_post_norm");
  d = scaled(b, d, c.residual_multiplier, v + "down_scaled", E);
  return b.op("add", {h, d}, v + "mlp_residual", E);
}

MethodSpec build_method(const hf_static::Metadata& meta, bool prefill, const HfConfig& c, const GraphOptions& o) {
  using namespace hf_static;
  const std::string& name = prefill ? meta.prefill_method : meta.decode_method;
  const int64_t rows = method_rows(meta, prefill);
  MethodBuilder b(name, rows);
  const int64_t L = c.num_hidden_layers, E = c.hidden_size;
  const std::vector<ValueLayout> inputs = method_inputs(meta, rows);
  for (const ValueLayout& in : inputs) b.input(in.name, in.dtype, in.shape);
  std::vector<std::string> state;  // by slot
  for (size_t slot = 0; slot < state_count(L); ++slot) state.push_back(inputs[state_input(meta, slot)].name);

  std::string h = b.op("embedding", {inputs[kTokensInput].name, "model.embed_tokens.weight"}, "embed", E);
  if (c.embedding_scale) {
    // Hugging Face casts the scale to the weights' dtype before multiplying.
    float factor = float(*c.embedding_scale);
    if (o.weights_dtype == DType::F16 || o.weights_dtype == DType::BF16) {
      uint16_t narrow = 0;
      convert_floats(&factor, DType::F32, &narrow, o.weights_dtype, 1);
      convert_floats(&narrow, o.weights_dtype, &factor, DType::F32, 1);
    }
    h = b.op("scale", {h}, "embed_scaled", E, {{"factor", factor}});
  }
  h = scaled(b, h, c.embedding_multiplier, "embed_scaled", E);
  // Local layers of a family with a local base (gemma3's rope_local_base_freq) rotate with that
  // base and no scaling.
  const json rope = rope_attributes(c, o.max_context);
  json local_rope = rope;
  if (c.rope_local_theta) {
    HfConfig local = c;
    local.rope_theta = *c.rope_local_theta;
    local.rope_scaling.reset();
    local_rope = rope_attributes(local, o.max_context);
  }
  for (int64_t l = 0; l < L; ++l) {
    const bool local = meta.has_local_mask() && meta.layer_kinds[size_t(l)] == LayerKind::Local;
    const bool local_base = c.rope_local_theta && c.sliding_layers[size_t(l)];
    LayerInputs in{inputs[kPositionsInput].name,
                   inputs[local ? kLocalMaskInput : kMaskInput].name,
                   inputs[kMaskInput].name,
                   state[state_slot(l, StateRole::KeyCache)],
                   state[state_slot(l, StateRole::ValueCache)],
                   state[state_slot(l, StateRole::Counter)],
                   local_base ? &local_rope : &rope};
    h = build_layer(b, c, l, h, in);
  }
  std::string hn = b.op("rms_norm", {h, "model.norm.weight"}, "final_norm", E, {{"eps", c.rms_norm_eps}});
  // logits / logits_scaling, as (h / logits_scaling) lm_head^T: the lm_head keeps its row slicing.
  hn = scaled(b, hn, 1 / c.logits_scaling, "final_norm_scaled", E);
  const std::string head = c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  // The final soft-cap after the lm_head: both run on the wanted rows only (a row-wise op after
  // the lm_head keeps it sliceable).
  if (c.final_logit_softcapping) {
    const std::string raw = b.op("linear", {hn, head}, "logits_uncapped", c.vocab_size);
    b.op("softcap", {raw}, "logits", c.vocab_size, {{"cap", *c.final_logit_softcapping}});
  } else {
    b.op("linear", {hn, head}, "logits", c.vocab_size);
  }

  MethodSpec& m = b.spec();
  m.outputs.resize(output_count(L, o.repeat_state));
  const std::vector<size_t> order = mutation_permutation(o.mutation_order, L);
  for (size_t i = 0; i < order.size(); ++i)
    m.outputs[i] = {state[order[i]] + "_updated", state[order[i]], OutputMemory::Alias};
  m.outputs[logits_output(L)] = {"logits", "logits", OutputMemory::Planned};
  if (o.repeat_state) {
    for (size_t slot = 0; slot < state.size(); ++slot) {
      const ValueLayout& in = inputs[state_input(meta, slot)];
      const std::string out = state[slot] + "_out";
      m.values.push_back({out, in.dtype, in.shape});
      m.nodes.push_back({"copy", {state[slot]}, {out}, json::object()});
      m.outputs[repeated_state_output(L, slot)] = {out, out, OutputMemory::Unplanned};
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

  hf_static::Metadata meta;
  meta.n_layers = c.num_hidden_layers;
  meta.n_kv_heads = c.num_key_value_heads;
  meta.head_dim = c.head_dim;
  meta.max_context = o.max_context;
  meta.prefill_len = o.prefill_len;
  meta.vocab_size = c.vocab_size;
  meta.cache_dtype = o.cache_dtype;
  meta.bos_id = c.bos_token_id ? *c.bos_token_id : -1;
  meta.eos_ids = c.eos_token_ids;
  meta.prefill_method = "prefill";
  meta.decode_method = "decode";
  // A sliding layer whose window covers the whole context is a global one.
  if (c.sliding_window && *c.sliding_window < o.max_context) {
    for (bool sliding : c.sliding_layers)
      meta.layer_kinds.push_back(sliding ? hf_static::LayerKind::Local : hf_static::LayerKind::Global);
    if (std::find(meta.layer_kinds.begin(), meta.layer_kinds.end(), hf_static::LayerKind::Local) !=
        meta.layer_kinds.end()) {
      meta.version = hf_static::kVersion2;
      meta.sliding_window = *c.sliding_window;
    } else {
      meta.layer_kinds.clear();
    }
  }

  BuiltProgram out;
  ProgramSpec& spec = out.spec;
  namespace keys = hf_static::keys;
  spec.metadata = hf_static::metadata_json(meta);
  spec.metadata[keys::model_type] = c.model_type;
  spec.metadata[keys::n_heads] = c.num_attention_heads;
  spec.metadata[keys::hidden_size] = c.hidden_size;
  spec.metadata[keys::mutation_order] = o.mutation_order;
  spec.metadata[keys::repeat_state] = o.repeat_state;
  spec.methods.push_back(build_method(meta, /*prefill=*/true, c, o));
  spec.methods.push_back(build_method(meta, /*prefill=*/false, c, o));

  out.weights = program_weights(c);
  return out;
}

}  // namespace hfstatic
