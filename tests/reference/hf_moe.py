"""Mixture-of-experts families of the NumPy reference (hf_reference.py).

``mixtral``, ``qwen2_moe``, ``qwen3_moe`` and ``olmoe`` are the dense decoder of
hf_reference.Model with the MLP of some layers replaced by a sparse block, plus a few
attention differences. This module holds what is particular to them; hf_reference.Model
calls it through small hooks (``MoeSpec``: configure, take_layer, before_heads, forward).

What Hugging Face transformers computes (modeling_<family>.py, the SparseMoeBlock /
TopKRouter and Experts classes; the checkpoint layout is the per-expert one that the hub
and ``save_pretrained`` hold):

* router: logits = x @ gate^T (``...block_sparse_moe.gate.weight`` for mixtral,
  ``...mlp.gate.weight`` for the others, [num_experts, hidden], no bias); softmax over
  the experts in float32; top-k of the probabilities; then, for mixtral always and for the
  others when ``norm_topk_prob`` is true, the k weights are divided by their sum; the
  weights are cast back to the hidden dtype. Here everything is float64, in that order.
* experts: expert j is a SiLU-gated MLP, down(act(gate(x)) * up(x)): mixtral
  ``experts.j.w1`` (gate), ``w3`` (up), ``w2`` (down) of size ``intermediate_size``; the
  others ``experts.j.{gate,up,down}_proj`` of size ``moe_intermediate_size`` (qwen) or
  ``intermediate_size`` (olmoe). The block output is the sum over the k chosen experts of
  weight * expert(x), accumulated expert by expert in ascending index order.
* qwen2_moe adds a shared expert (``mlp.shared_expert.{gate,up,down}_proj``, size
  ``shared_expert_intermediate_size``) gated per token by
  sigmoid(x @ ``mlp.shared_expert_gate.weight``^T) ([1, hidden]): out = routed + gate * shared.
* qwen2_moe / qwen3_moe layer l is sparse iff l not in ``mlp_only_layers`` and
  ``num_experts`` > 0 and (l + 1) % ``decoder_sparse_step`` == 0; otherwise it holds a
  dense ``mlp.{gate,up,down}_proj`` of size ``intermediate_size``. Mixtral and olmoe
  layers are all sparse.
* attention: mixtral is mistral's (no biases; a non-null ``sliding_window`` applies to
  every layer); qwen2_moe is qwen2's (q/k/v biases, ``qkv_bias``, default true); qwen3_moe
  is qwen3's (per-head q/k RMSNorm before rope, ``attention_bias``); olmoe applies q_norm
  over the whole q projection ([heads * head_dim]) and k_norm over the whole k projection
  ([kv_heads * head_dim]) before splitting into heads, then, when ``clip_qkv`` is set,
  clamps q, k and v to [-clip_qkv, clip_qkv], then rope; its biases follow
  ``attention_bias`` (q, k, v and o). ``use_sliding_window`` of the qwen MoE families is
  refused (transformers versions disagree on which layers it affects).

Ties: torch.topk does not specify which of equal values it returns (its documentation says
tied indices may vary; pytorch/pytorch#27542 and #88184 show CPU results that are not the
lowest index). This reference defines the rule: among equal routing probabilities the lower
expert index ranks first (a stable sort of -p). Router logits are computed one token at a
time as an elementwise product summed along the hidden axis, so two identical router rows
give bitwise identical logits and therefore a tie.

Router ``naive`` (CLI --moe-router naive) takes the top-k probabilities without the
family's renormalisation: a deliberately wrong router for parity tests. For families that
do not renormalise it is the family router.

Quantization (hf_reference --quantize) keeps the router weights in float, as hfstatic's
exporter does; experts, the shared expert and shared_expert_gate are quantized.
"""

import numpy as np

from hf_rope import UnsupportedError

MOE_MODEL_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "olmoe")
ROUTER_SUFFIXES = (".block_sparse_moe.gate.weight", ".mlp.gate.weight")
ROUTERS = ("family", "naive")


def is_router_weight(name):
    """The MoE router matrices, which quantization leaves in float."""
    return name.endswith(ROUTER_SUFFIXES)


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def router_logits(h, gate):
    """[T, n_experts]; identical gate rows give bitwise identical columns (see the module doc)."""
    return np.stack([(gate * row).sum(axis=1) for row in h])


def route(logits, top_k, renormalise):
    """Softmax over the experts, top-k (ties: lower index first), optional renormalisation.
    Returns (indices [T, k], weights [T, k])."""
    z = logits - logits.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p = p / p.sum(axis=-1, keepdims=True)
    idx = np.argsort(-p, axis=-1, kind="stable")[:, :top_k]
    w = np.take_along_axis(p, idx, axis=-1)
    if renormalise:
        w = w / w.sum(axis=-1, keepdims=True)
    return idx, w


def sparse_layers(config, n_layers):
    """Per layer: whether it holds the sparse block (Hugging Face's rule for the family)."""
    mt = config.get("model_type")
    if mt in ("mixtral", "olmoe"):
        return [True] * n_layers
    default_n = 60 if mt == "qwen2_moe" else 128
    n_experts = int(config.get("num_experts", config.get("num_local_experts", default_n)))
    step = int(config.get("decoder_sparse_step", 1))
    if step <= 0:
        raise UnsupportedError("decoder_sparse_step %d must be positive" % step)
    only = set(int(i) for i in (config.get("mlp_only_layers") or []))
    return [i not in only and n_experts > 0 and (i + 1) % step == 0 for i in range(n_layers)]


class MoeSpec:
    """A MoE family's configuration, and the hooks hf_reference.Model calls."""

    def __init__(self, config, n_layers, router="family"):
        mt = config.get("model_type")
        if mt not in MOE_MODEL_TYPES:
            raise UnsupportedError("%r is not a mixture-of-experts family" % (mt,))
        if router not in ROUTERS:
            raise UnsupportedError("unknown MoE router %r (use %s)" % (router, " or ".join(ROUTERS)))
        self.family = mt
        self.router = router
        qwen = mt in ("qwen2_moe", "qwen3_moe")
        if mt == "mixtral":
            self.n_experts = int(config.get("num_local_experts", config.get("num_experts", 8)))
            default_k, size_key, default_size = 2, "intermediate_size", 14336
        elif mt == "olmoe":
            self.n_experts = int(config.get("num_experts", config.get("num_local_experts", 64)))
            default_k, size_key, default_size = 8, "intermediate_size", 2048
        else:  # transformers' defaults: qwen2_moe 60 experts, top 4, size 1408; qwen3_moe 128, 8, 768
            default_n = 60 if mt == "qwen2_moe" else 128
            self.n_experts = int(config.get("num_experts", config.get("num_local_experts", default_n)))
            default_k, default_size = (4, 1408) if mt == "qwen2_moe" else (8, 768)
            size_key = "moe_intermediate_size"
        self.top_k = int(config.get("num_experts_per_tok", default_k))
        size = config.get(size_key)
        self.expert_size = int(size) if size is not None else default_size
        self.family_renorm = True if mt == "mixtral" else bool(config.get("norm_topk_prob", False))
        self.renormalise = self.family_renorm and router == "family"
        self.sparse = sparse_layers(config, n_layers)
        if any(self.sparse) and not 1 <= self.top_k <= self.n_experts:
            raise UnsupportedError("num_experts_per_tok %d outside [1, %d]" % (self.top_k, self.n_experts))
        self.prefix = "block_sparse_moe." if mt == "mixtral" else "mlp."
        self.expert_names = ("w1", "w3", "w2") if mt == "mixtral" else ("gate_proj", "up_proj", "down_proj")
        self.shared_size = None
        if mt == "qwen2_moe":
            s = config.get("shared_expert_intermediate_size", 5632)
            self.shared_size = int(s) if s else None  # 0 / null: no shared expert
        if qwen and config.get("use_sliding_window", False):
            raise UnsupportedError("use_sliding_window is not supported for %s" % mt)
        self.sliding_window = None
        if mt == "mixtral" and config.get("sliding_window") is not None:
            self.sliding_window = int(config["sliding_window"])
        clip = config.get("clip_qkv") if mt == "olmoe" else None
        self.clip_qkv = float(clip) if clip is not None else None
        self.eps = float(config.get("rms_norm_eps", 1e-5 if mt in ("mixtral", "olmoe") else 1e-6))
        theta = config.get("rope_theta")
        self.rope_theta = float(theta) if theta is not None else (1e6 if mt == "mixtral" else 10000.0)

    # -- hooks ---------------------------------------------------------------

    def configure(self, model):
        """Sets the family's attention options on a hf_reference.Model being built."""
        mt = self.family
        if mt == "qwen2_moe":
            model.qkv_bias, model.o_bias = bool(model.config.get("qkv_bias", True)), False
        elif mt == "mixtral":
            model.qkv_bias, model.o_bias = False, False
        else:  # qwen3_moe, olmoe: attention_bias on q, k, v and o
            bias = bool(model.config.get("attention_bias", False))
            model.qkv_bias, model.o_bias = bias, bias
        model.mlp_bias = False
        model.qk_norm = mt == "qwen3_moe"  # per head; olmoe's whole-projection norms: before_heads
        model.eps = self.eps
        model.rope_theta = self.rope_theta
        model.sliding = [self.sliding_window is not None] * model.n_layers
        model.sliding_window = self.sliding_window
        model.full_window = None
        if mt == "olmoe" and model.head_dim * model.n_heads != model.hidden:
            raise UnsupportedError("olmoe needs head_dim * num_attention_heads == hidden_size (%d * %d != %d)"
                                   % (model.head_dim, model.n_heads, model.hidden))

    def take_layer(self, take, p, i, hidden, q_rows, k_rows):
        """Layer i's MoE-specific tensors: {"moe": ...} for a sparse layer (none of the dense
        MLP's), olmoe's whole-projection norms. `take(name, shape)` checks and returns one."""
        out = {}
        if self.family == "olmoe":
            out["q_norm_full"] = take(p + "self_attn.q_norm.weight", (q_rows,))
            out["k_norm_full"] = take(p + "self_attn.k_norm.weight", (k_rows,))
        if not self.sparse[i]:
            return out
        E, F, n = hidden, self.expert_size, self.n_experts
        g, u, d = self.expert_names
        base = p + self.prefix
        block = {
            "router": take(base + "gate.weight", (n, E)),
            "gate": np.stack([take(base + "experts.%d.%s.weight" % (j, g), (F, E)) for j in range(n)]),
            "up": np.stack([take(base + "experts.%d.%s.weight" % (j, u), (F, E)) for j in range(n)]),
            "down": np.stack([take(base + "experts.%d.%s.weight" % (j, d), (E, F)) for j in range(n)]),
        }
        if self.shared_size is not None:
            S = self.shared_size
            block["shared_gate"] = take(base + "shared_expert.gate_proj.weight", (S, E))
            block["shared_up"] = take(base + "shared_expert.up_proj.weight", (S, E))
            block["shared_down"] = take(base + "shared_expert.down_proj.weight", (E, S))
            block["shared_expert_gate"] = take(base + "shared_expert_gate.weight", (1, E))
        out["moe"] = block
        return out

    def before_heads(self, L, q, k, v):
        """q, k, v [T, rows] after projection and bias, before the split into heads."""
        if "q_norm_full" in L:
            q = _rms_norm(q, L["q_norm_full"], self.eps)
            k = _rms_norm(k, L["k_norm_full"], self.eps)
        if self.clip_qkv is not None:
            c = self.clip_qkv
            q, k, v = np.clip(q, -c, c), np.clip(k, -c, c), np.clip(v, -c, c)
        return q, k, v

    def forward(self, block, h, act=_silu):
        """The sparse block on h [T, hidden]."""
        idx, w = route(router_logits(h, block["router"]), self.top_k, self.renormalise)
        out = np.zeros_like(h)
        for j in range(self.n_experts):  # ascending, as transformers accumulates
            rows, slot = np.nonzero(idx == j)
            if rows.size == 0:
                continue
            x = h[rows]
            y = (act(x @ block["gate"][j].T) * (x @ block["up"][j].T)) @ block["down"][j].T
            out[rows] += y * w[rows, slot][:, None]
        if "shared_gate" in block:
            shared = (act(h @ block["shared_gate"].T) * (h @ block["shared_up"].T)) @ block["shared_down"].T
            out = out + _sigmoid(h @ block["shared_expert_gate"].T) * shared
        return out
