#!/usr/bin/python3
"""NumPy reference forward pass for Hugging Face decoder-only checkpoints.

Reads a checkpoint folder laid out the way ``save_pretrained`` writes it
(``config.json`` plus ``model.safetensors`` or sharded safetensors with
``model.safetensors.index.json``) and evaluates the Hugging Face forward pass
for the ``llama``, ``mistral``, ``qwen2``, ``qwen3``, ``phi3``, ``smollm3``,
``granite``, ``gemma3_text``, ``gemma2`` and ``gemma3`` (hf_gemma.py) architectures and the
mixture-of-experts ``mixtral``, ``qwen2_moe``, ``qwen3_moe`` and ``olmoe`` (hf_moe.py) in float64, over the full
sequence with a causal mask (sliding layers: a causal mask limited to the window; no KV
cache).

Usage:
    hf_reference.py CHECKPOINT_DIR --tokens 1,2,3 [--steps N]
                    [--cache-dtype float32|float16]
                    [--perplexity-tokens FILE]
                    [--quantize int8|int4 [--group-size 32|64|128]]
                    [--moe-router family|naive] [--max-context N] --out OUT.json

--quantize evaluates the weights an hfstatic program quantized that way holds: every
2-D weight (linear and embedding matrices) quantized and dequantized by the rules of
docs/program-format.md, in float32 as the exporter computes them; MoE router weights
(``...mlp.gate.weight``, ``...block_sparse_moe.gate.weight``) stay float.
--max-context N computes rope as a program of N positions does: longrope takes long_factor
for every position when N exceeds original_max_position_embeddings.
--moe-router naive routes MoE layers without the family's top-k renormalisation (a
deliberately wrong router, for parity tests); family (the default) is Hugging Face's.

Only the Python standard library and NumPy are used.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np

from hf_rope import UnsupportedError, apply_rope, rope_cos_sin, rope_inv_freq, rope_parameters, rotate_half  # noqa: F401
import hf_gemma
import hf_moe

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "phi3", "smollm3", "granite", "gemma3_text")
SUPPORTED_MODEL_TYPES += hf_moe.MOE_MODEL_TYPES  # mixtral, qwen2_moe, qwen3_moe, olmoe
SUPPORTED_MODEL_TYPES += hf_gemma.GEMMA_MODEL_TYPES  # gemma2, gemma3 (its language model)




# ---------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------

def decode_bf16(raw):
    """bfloat16 bit patterns (uint16 array) -> float32 array."""
    return (np.asarray(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)


def _decode_tensor(name, dtype, shape, buf):
    count = 1
    for s in shape:
        count *= int(s)
    if dtype == "F32":
        arr = np.frombuffer(buf, dtype="<f4", count=count)
    elif dtype == "F16":
        arr = np.frombuffer(buf, dtype="<f2", count=count)
    elif dtype == "BF16":
        arr = decode_bf16(np.frombuffer(buf, dtype="<u2", count=count))
    elif dtype == "F64":
        arr = np.frombuffer(buf, dtype="<f8", count=count)
    else:
        raise UnsupportedError("tensor %s has unsupported dtype %s" % (name, dtype))
    return arr.reshape([int(s) for s in shape])


_ITEM_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}


def read_safetensors(path, names=None):
    """Parse a .safetensors file. Returns {name: float64 ndarray}.

    If ``names`` is given, only those tensors are decoded.
    """
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise UnsupportedError("%s: file too short for a safetensors header" % path)
    (header_len,) = struct.unpack("<Q", blob[:8])
    if 8 + header_len > len(blob):
        raise UnsupportedError("%s: header length %d exceeds file size" % (path, header_len))
    header = json.loads(blob[8:8 + header_len].decode("utf-8"))
    data_start = 8 + header_len
    data_len = len(blob) - data_start
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if names is not None and name not in names:
            continue
        dtype = info["dtype"]
        shape = info["shape"]
        begin, end = info["data_offsets"]
        if not (0 <= begin <= end <= data_len):
            raise UnsupportedError("%s: tensor %s has bad data_offsets %r" % (path, name, info["data_offsets"]))
        if dtype not in _ITEM_SIZE:
            raise UnsupportedError("%s: tensor %s has unsupported dtype %s" % (path, name, dtype))
        expected = _ITEM_SIZE[dtype]
        for s in shape:
            expected *= int(s)
        if end - begin != expected:
            raise UnsupportedError("%s: tensor %s byte size %d does not match shape %r dtype %s"
                                 % (path, name, end - begin, shape, dtype))
        buf = blob[data_start + begin:data_start + end]
        out[name] = _decode_tensor(name, dtype, shape, buf).astype(np.float64)
    return out


def load_checkpoint(ckpt_dir):
    """Returns (config dict, {tensor name: float64 ndarray})."""
    cfg_path = os.path.join(ckpt_dir, "config.json")
    if not os.path.isfile(cfg_path):
        raise UnsupportedError("%s: no config.json" % ckpt_dir)
    with open(cfg_path, "r", encoding="utf-8") as f:
        config = json.load(f)
    index_path = os.path.join(ckpt_dir, "model.safetensors.index.json")
    single_path = os.path.join(ckpt_dir, "model.safetensors")
    weights = {}
    if os.path.isfile(index_path):
        with open(index_path, "r", encoding="utf-8") as f:
            index = json.load(f)
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise UnsupportedError("%s: missing or empty weight_map" % index_path)
        by_file = {}
        for name, fname in weight_map.items():
            by_file.setdefault(fname, set()).add(name)
        for fname in sorted(by_file):
            wanted = by_file[fname]
            got = read_safetensors(os.path.join(ckpt_dir, fname), names=wanted)
            missing = wanted - set(got)
            if missing:
                raise UnsupportedError("%s: tensors listed in weight_map are missing: %s"
                                     % (fname, ", ".join(sorted(missing))))
            weights.update(got)
    elif os.path.isfile(single_path):
        weights = read_safetensors(single_path)
    else:
        raise UnsupportedError("%s: neither model.safetensors nor model.safetensors.index.json" % ckpt_dir)
    return config, weights


def quantize_dequantize(w, dtype, group):
    """w [rows, cols] as hfstatic stores it quantized: per group of `group` input features,
    scale = float16(max|x| / qmax), q = clip(rint(x / scale), -qmax, qmax) (0 where the scale
    is 0), all in float32; returns q * scale as float64."""
    qmax = np.float32(127 if dtype == "int8" else 7)
    rows, cols = w.shape
    if cols % group != 0:
        raise UnsupportedError("a %d-wide weight does not split into groups of %d" % (cols, group))
    x = w.astype(np.float32).reshape(rows, cols // group, group)
    amax = np.abs(x).max(axis=2, keepdims=True)
    with np.errstate(over="ignore"):
        scale = (amax / qmax).astype(np.float16).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(scale == 0, np.float32(0), np.clip(np.rint(x / scale), -qmax, qmax))
    return (q.astype(np.float32) * scale).reshape(rows, cols).astype(np.float64)


def quantize_weights(weights, dtype, group):
    """Every 2-D weight but the MoE routers (hfstatic's exporter keeps those float)."""
    return {name: quantize_dequantize(w, dtype, group) if w.ndim == 2 and not hf_moe.is_router_weight(name) else w
            for name, w in weights.items()}


# ---------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------

def rms_norm(x, weight, eps):
    var = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(var + eps) * weight


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    """GELU with the tanh approximation (HF's gelu_pytorch_tanh)."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def round_to_float(x, dtype):
    """A scalar rounded to a weight dtype, as torch's .to(dtype) does (round to nearest even)."""
    f = np.float32(x)
    if dtype == "float16":
        return float(np.float16(f))
    if dtype == "bfloat16":
        bits = int(np.array([f], dtype=np.float32).view(np.uint32)[0])
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])
    return float(f)


def sliding_layers(config, n_layers):
    """Per layer: whether it uses the sliding window, by Hugging Face's rule for the family."""
    mt = config.get("model_type")
    sw = config.get("sliding_window")
    if mt in ("qwen2", "qwen3", "smollm3") and not config.get("use_sliding_window", False):
        sw = None
    if mt == "gemma2":
        return hf_gemma.gemma2_sliding_layers(config, n_layers)
    if sw is None or mt not in ("mistral", "phi3", "qwen2", "qwen3", "smollm3", "gemma3_text"):
        return [False] * n_layers
    types = config.get("layer_types")
    if mt in ("qwen2", "qwen3", "smollm3", "gemma3_text") and types is not None:
        return [t == "sliding_attention" for t in types]
    if mt in ("mistral", "phi3"):
        return [True] * n_layers
    if mt == "smollm3":  # the layers without rope (no_rope_layers 0)
        return [not rope for rope in smollm3_rope_layers(config)]
    if mt == "gemma3_text":
        pattern = config.get("sliding_window_pattern", config.get("_sliding_window_pattern", 6))
        return [(i + 1) % int(pattern) != 0 for i in range(n_layers)]
    first = int(config.get("max_window_layers", 28))
    return [i >= first for i in range(n_layers)]


def round_to_dtype(x, cache_dtype):
    if cache_dtype == "float32":
        return x
    if cache_dtype == "float16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16).astype(np.float64)
    raise UnsupportedError("unsupported cache dtype %r" % (cache_dtype,))


def smollm3_rope_layers(config):
    """smollm3: per layer, whether it uses rope (no_rope_layers[i] = 1)."""
    nrl = config.get("no_rope_layers")
    if nrl is None:
        interval = int(config.get("no_rope_layer_interval", 4))
        nrl = [int((i + 1) % interval != 0) for i in range(int(config["num_hidden_layers"]))]
    return [bool(v) for v in nrl]


class Model:
    def __init__(self, config, weights, moe_router="family", context=None):
        """context: the length of the program compared with this model (hfstatic's max_context),
        when rope depends on it: longrope takes long_factor for every position once it exceeds
        original_max_position_embeddings. None: each sequence's own length (Hugging Face)."""
        config, weights = hf_gemma.language_model(config, weights)  # gemma3: its text model
        self.config = config
        self.context = context
        mt = config.get("model_type")
        if mt not in SUPPORTED_MODEL_TYPES:
            raise UnsupportedError("unsupported model_type %r (supported: %s)"
                                 % (mt, ", ".join(SUPPORTED_MODEL_TYPES)))
        self.model_type = mt
        self.gemma = mt in ("gemma3_text", "gemma2")
        act = config.get("hidden_activation", "gelu_pytorch_tanh") if self.gemma else config.get("hidden_act", "silu")
        if act not in ("silu", "gelu_pytorch_tanh", "gelu"):
            raise UnsupportedError("unsupported hidden activation %r" % (act,))
        self.act = {"silu": silu, "gelu_pytorch_tanh": gelu_tanh, "gelu": hf_gemma.gelu}[act]
        self.attn_softcap, self.final_softcap = hf_gemma.softcaps(config)

        def need(key):
            if config.get(key) is None:
                raise UnsupportedError("config.json lacks %s" % key)
            return config[key]

        self.hidden = int(need("hidden_size"))
        self.n_layers = int(need("num_hidden_layers"))
        self.n_heads = int(need("num_attention_heads"))
        kvh = config.get("num_key_value_heads")
        self.n_kv = int(kvh) if kvh is not None else self.n_heads
        if self.n_heads % self.n_kv != 0:
            raise UnsupportedError("num_attention_heads %d not divisible by num_key_value_heads %d"
                                 % (self.n_heads, self.n_kv))
        hd = config.get("head_dim")
        self.head_dim = int(hd) if hd is not None else self.hidden // self.n_heads
        if self.head_dim % 2 != 0:
            raise UnsupportedError("head_dim %d is odd" % self.head_dim)
        self.eps = float(config.get("rms_norm_eps", 1e-6))
        theta = config.get("rope_theta")
        self.rope_theta = float(theta) if theta is not None else 10000.0
        prf = config.get("partial_rotary_factor")
        self.rotary_dim = int(self.head_dim * float(prf)) if prf is not None else self.head_dim
        if self.rotary_dim < 2 or self.rotary_dim % 2 != 0:
            raise UnsupportedError("partial_rotary_factor gives %d rotary dimensions" % self.rotary_dim)
        self.rope_scaling = config.get("rope_scaling")
        rope_parameters(self.rotary_dim, self.rope_theta, self.rope_scaling, config)  # fail early
        self.use_rope = smollm3_rope_layers(config) if mt == "smollm3" else None
        # granite
        g = mt == "granite"
        self.embedding_multiplier = float(config.get("embedding_multiplier", 1.0)) if g else 1.0
        self.residual_multiplier = float(config.get("residual_multiplier", 1.0)) if g else 1.0
        self.logits_scaling = float(config.get("logits_scaling", 1.0)) if g else 1.0
        self.attention_scale = float(config.get("attention_multiplier", 1.0)) if g else None

        self.sliding = sliding_layers(config, self.n_layers)
        self.sliding_window = int(config["sliding_window"]) if any(self.sliding) else None
        self.local_rope = None
        self.norm_offset = 0.0
        self.scale = 1.0 / math.sqrt(self.head_dim)
        if self.attention_scale is not None:
            self.scale = self.attention_scale
        self.embed_scale = self.embedding_multiplier
        if self.gemma:
            # Norms scale by 1 + w; local layers rotate with their own base and no scaling.
            self.norm_offset = 1.0
            self.local_rope = float(config.get("rope_local_base_freq", 10000.0)) if mt == "gemma3_text" else None
            self.scale = float(config.get("query_pre_attn_scalar", 256)) ** -0.5
            self.embed_scale = round_to_float(math.sqrt(self.hidden), config.get("torch_dtype", "float32"))

        attn_bias = bool(config.get("attention_bias", False))
        if mt == "qwen2":
            self.qkv_bias, self.o_bias = True, False
        else:
            self.qkv_bias, self.o_bias = attn_bias, attn_bias
        self.mlp_bias = bool(config.get("mlp_bias", False)) if mt in ("llama", "smollm3", "granite") else False
        self.qk_norm = mt in ("qwen3", "gemma3_text")
        self.moe = None
        if mt in hf_moe.MOE_MODEL_TYPES:  # sets the family's biases, norms, windows
            self.moe = hf_moe.MoeSpec(config, self.n_layers, moe_router)
            self.moe.configure(self)

        def take(name, shape):
            if name not in weights:
                raise UnsupportedError("checkpoint lacks tensor %s" % name)
            w = weights[name]
            if tuple(w.shape) != tuple(shape):
                raise UnsupportedError("tensor %s has shape %r, expected %r"
                                     % (name, tuple(w.shape), tuple(shape)))
            return w

        H, D, KV, E = self.n_heads, self.head_dim, self.n_kv, self.hidden
        embed = weights.get("model.embed_tokens.weight")
        if embed is None or embed.ndim != 2 or embed.shape[1] != E:
            raise UnsupportedError("model.embed_tokens.weight missing or not [vocab, %d]" % E)
        self.vocab = embed.shape[0]
        self.embed = embed
        inter = config.get("intermediate_size")
        if mt == "phi3":
            weights = self._split_fused(weights, inter)
        self.layers = []
        for i in range(self.n_layers):
            p = "model.layers.%d." % i
            if inter is None:
                inter = weights[p + "mlp.gate_proj.weight"].shape[0]
            I = int(inter)
            L = {
                "in_norm": take(p + "input_layernorm.weight", (E,)),
                "post_norm": take(p + "post_attention_layernorm.weight", (E,)),
                "q": take(p + "self_attn.q_proj.weight", (H * D, E)),
                "k": take(p + "self_attn.k_proj.weight", (KV * D, E)),
                "v": take(p + "self_attn.v_proj.weight", (KV * D, E)),
                "o": take(p + "self_attn.o_proj.weight", (E, H * D)),
            }
            if self.moe is not None:
                L.update(self.moe.take_layer(take, p, i, E, H * D, KV * D))
            if "moe" not in L:
                L["gate"] = take(p + "mlp.gate_proj.weight", (I, E))
                L["up"] = take(p + "mlp.up_proj.weight", (I, E))
                L["down"] = take(p + "mlp.down_proj.weight", (E, I))
            if self.gemma:
                L["pre_ff_norm"] = take(p + "pre_feedforward_layernorm.weight", (E,))
                L["post_ff_norm"] = take(p + "post_feedforward_layernorm.weight", (E,))
            if self.qkv_bias:
                L["q_b"] = take(p + "self_attn.q_proj.bias", (H * D,))
                L["k_b"] = take(p + "self_attn.k_proj.bias", (KV * D,))
                L["v_b"] = take(p + "self_attn.v_proj.bias", (KV * D,))
            if self.o_bias:
                L["o_b"] = take(p + "self_attn.o_proj.bias", (E,))
            if self.mlp_bias:
                L["gate_b"] = take(p + "mlp.gate_proj.bias", (I,))
                L["up_b"] = take(p + "mlp.up_proj.bias", (I,))
                L["down_b"] = take(p + "mlp.down_proj.bias", (E,))
            if self.qk_norm:
                L["q_norm"] = take(p + "self_attn.q_norm.weight", (D,))
                L["k_norm"] = take(p + "self_attn.k_norm.weight", (D,))
            self.layers.append(L)
        self.final_norm = take("model.norm.weight", (E,))
        self.tied = bool(config.get("tie_word_embeddings", self.gemma))
        if self.tied:
            self.lm_head = self.embed
        elif "lm_head.weight" in weights:
            self.lm_head = take("lm_head.weight", (self.vocab, E))
        else:
            raise UnsupportedError("lm_head.weight missing and tie_word_embeddings is false")

    def _split_fused(self, weights, inter):
        """phi3's qkv_proj rows are q, k, v and gate_up_proj rows gate, up (HF's chunk order)."""
        H, D, KV = self.n_heads, self.head_dim, self.n_kv
        out = dict(weights)
        for i in range(self.n_layers):
            p = "model.layers.%d." % i
            for fused, parts in (("self_attn.qkv_proj", (("self_attn.q_proj", H * D), ("self_attn.k_proj", KV * D),
                                                          ("self_attn.v_proj", KV * D))),
                                 ("mlp.gate_up_proj", (("mlp.gate_proj", int(inter)), ("mlp.up_proj", int(inter))))):
                name = p + fused + ".weight"
                if name not in weights:
                    raise UnsupportedError("checkpoint lacks tensor %s" % name)
                w = weights[name]
                total = sum(n for _, n in parts)
                if w.ndim != 2 or w.shape[0] != total:
                    raise UnsupportedError("tensor %s has shape %r, expected [%d, hidden]" % (name, w.shape, total))
                row = 0
                for part, n in parts:
                    out[p + part + ".weight"] = w[row:row + n]
                    row += n
        return out

    # -- forward -------------------------------------------------------------

    def _norm(self, x, weight):
        return rms_norm(x, weight + self.norm_offset, self.eps)

    def _attention(self, L, h, cos, sin, cache_dtype, window, use_rope=True):
        T = h.shape[0]
        H, KV, D = self.n_heads, self.n_kv, self.head_dim
        q = h @ L["q"].T
        k = h @ L["k"].T
        v = h @ L["v"].T
        if self.qkv_bias:
            q = q + L["q_b"]
            k = k + L["k_b"]
            v = v + L["v_b"]
        if self.moe is not None:  # olmoe: norms over the whole projections, clip_qkv
            q, k, v = self.moe.before_heads(L, q, k, v)
        q = q.reshape(T, H, D).transpose(1, 0, 2)    # [H, T, D]
        k = k.reshape(T, KV, D).transpose(1, 0, 2)   # [KV, T, D]
        v = v.reshape(T, KV, D).transpose(1, 0, 2)
        if self.qk_norm:
            q = self._norm(q, L["q_norm"])
            k = self._norm(k, L["k_norm"])
        if use_rope:
            q = apply_rope(q, cos, sin)
            k = apply_rope(k, cos, sin)
        k = round_to_dtype(k, cache_dtype)
        v = round_to_dtype(v, cache_dtype)
        rep = H // KV
        if rep > 1:
            k = np.repeat(k, rep, axis=0)  # query head j uses kv head j // rep
            v = np.repeat(v, rep, axis=0)
        scores = hf_gemma.softcap((q @ k.transpose(0, 2, 1)) * self.scale, self.attn_softcap)   # [H, T, T]
        # Row i sees columns j <= i; in a sliding layer only those with j > i - window.
        rows, cols = np.arange(T)[:, None], np.arange(T)[None, :]
        hidden = cols > rows
        if window is not None:
            hidden = np.logical_or(hidden, cols <= rows - window)
        scores = np.where(hidden[None, :, :], -np.inf, scores)
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs = probs / probs.sum(axis=-1, keepdims=True)
        out = (probs @ v).transpose(1, 0, 2).reshape(T, H * D)
        out = out @ L["o"].T
        if self.o_bias:
            out = out + L["o_b"]
        return out

    def _mlp(self, L, h):
        if "moe" in L:
            return self.moe.forward(L["moe"], h, self.act)
        g = h @ L["gate"].T
        u = h @ L["up"].T
        if self.mlp_bias:
            g = g + L["gate_b"]
            u = u + L["up_b"]
        out = (self.act(g) * u) @ L["down"].T
        if self.mlp_bias:
            out = out + L["down_b"]
        return out

    def hidden_states(self, tokens, cache_dtype="float32"):
        """Final-normed hidden states [T, hidden] for the whole sequence."""
        tokens = [int(t) for t in tokens]
        T = len(tokens)
        if T == 0:
            raise UnsupportedError("empty token sequence")
        for t in tokens:
            if t < 0 or t >= self.vocab:
                raise UnsupportedError("token id %d out of range [0, %d)" % (t, self.vocab))
        # Rope as for a sequence of the program's context when one is given (see __init__).
        inv_freq, attention_factor = rope_parameters(self.rotary_dim, self.rope_theta, self.rope_scaling,
                                                     self.config, seq_len=max(T, self.context or 0))
        global_rope = rope_cos_sin(np.arange(T), inv_freq, attention_factor)
        local_rope = global_rope
        if self.local_rope is not None:
            local_rope = rope_cos_sin(np.arange(T), rope_parameters(self.rotary_dim, self.local_rope)[0])
        x = self.embed[np.asarray(tokens, dtype=np.int64)] * self.embed_scale
        for i, (L, sliding) in enumerate(zip(self.layers, self.sliding)):
            cos, sin = local_rope if sliding else global_rope
            window = self.sliding_window if sliding else None
            use_rope = self.use_rope is None or self.use_rope[i]
            h = self._norm(x, L["in_norm"])
            a = self._attention(L, h, cos, sin, cache_dtype, window, use_rope)
            if self.gemma:
                x = x + self._norm(a, L["post_norm"])
                x = x + self._norm(self._mlp(L, self._norm(x, L["pre_ff_norm"])), L["post_ff_norm"])
            else:
                x = x + a * self.residual_multiplier
                x = x + self._mlp(L, self._norm(x, L["post_norm"])) * self.residual_multiplier
        return self._norm(x, self.final_norm)

    def logits(self, tokens, cache_dtype="float32", last_only=False):
        h = self.hidden_states(tokens, cache_dtype)
        if last_only:
            h = h[-1:]
        return hf_gemma.softcap((h @ self.lm_head.T) / self.logits_scaling, self.final_softcap)


def log_softmax(logits):
    m = logits.max(axis=-1, keepdims=True)
    z = logits - m
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def greedy(model, tokens, steps, cache_dtype="float32"):
    """Greedy decoding; returns (chosen tokens, logits rows that chose them)."""
    seq = list(tokens)
    chosen, rows = [], []
    for _ in range(steps):
        row = model.logits(seq, cache_dtype, last_only=True)[0]
        nxt = int(np.argmax(row))
        chosen.append(nxt)
        rows.append(row)
        seq.append(nxt)
    return chosen, rows


def perplexity(model, tokens, cache_dtype="float32"):
    tokens = [int(t) for t in tokens]
    if len(tokens) < 2:
        raise UnsupportedError("perplexity needs at least 2 tokens")
    lp = log_softmax(model.logits(tokens[:-1], cache_dtype))
    targets = np.asarray(tokens[1:], dtype=np.int64)
    for t in targets:
        if t < 0 or t >= model.vocab:
            raise UnsupportedError("token id %d out of range [0, %d)" % (t, model.vocab))
    nll = -lp[np.arange(len(targets)), targets]
    nll_mean = float(nll.mean())
    return {"nll_mean": nll_mean, "perplexity": float(math.exp(nll_mean)), "count": int(len(targets))}


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------

def parse_token_list(text):
    out = []
    for part in text.replace(",", " ").split():
        try:
            out.append(int(part))
        except ValueError:
            raise UnsupportedError("bad token id %r" % part)
    return out


def run(argv=None):
    ap = argparse.ArgumentParser(description="NumPy reference forward pass for HF "
                                 "llama/mistral/qwen2/qwen3/phi3/smollm3/granite/gemma3_text and "
                                 "mixtral/qwen2_moe/qwen3_moe/olmoe checkpoints")
    ap.add_argument("checkpoint", help="checkpoint folder (config.json + safetensors)")
    ap.add_argument("--tokens", required=True, help="comma-separated prompt token ids")
    ap.add_argument("--steps", type=int, default=0, help="greedy decoding steps (default 0)")
    ap.add_argument("--cache-dtype", choices=("float32", "float16"), default="float32",
                    help="precision K/V are rounded to before attention (default float32: no rounding)")
    ap.add_argument("--perplexity-tokens", help="file of whitespace-separated token ids")
    ap.add_argument("--quantize", choices=("int8", "int4"),
                    help="quantize-dequantize the 2-D weights as hfstatic's int8/int4 programs hold them")
    ap.add_argument("--group-size", type=int, default=32, choices=(32, 64, 128),
                    help="input features per quantization scale (default 32)")
    ap.add_argument("--max-context", type=int, default=None,
                    help="the compared program's context: longrope then takes long_factor for every position "
                         "when it exceeds original_max_position_embeddings (default: each sequence's length)")
    ap.add_argument("--moe-router", choices=hf_moe.ROUTERS, default="family",
                    help="MoE routing: family (Hugging Face's, default) or naive (top-k softmax weights "
                         "without the family's renormalisation); no effect on dense families")
    ap.add_argument("--out", required=True, help="output JSON path")
    args = ap.parse_args(argv)
    if args.steps < 0:
        raise UnsupportedError("--steps must be >= 0")

    prompt = parse_token_list(args.tokens)
    if not prompt:
        raise UnsupportedError("--tokens is empty")
    config, weights = load_checkpoint(args.checkpoint)
    if args.quantize:
        weights = quantize_weights(weights, args.quantize, args.group_size)
    model = Model(config, weights, moe_router=args.moe_router, context=args.max_context)
    del weights

    prompt_logits = model.logits(prompt, args.cache_dtype)
    chosen, rows = greedy(model, prompt, args.steps, args.cache_dtype)
    result = {
        "model_type": model.model_type,
        "tokens": prompt,
        "cache_dtype": args.cache_dtype,
        "prompt_logits": prompt_logits.tolist(),
        "greedy_tokens": chosen,
        "greedy_logits": [r.tolist() for r in rows],
    }
    if args.perplexity_tokens:
        with open(args.perplexity_tokens, "r", encoding="utf-8") as f:
            ptoks = parse_token_list(f.read())
        ppl = perplexity(model, ptoks, args.cache_dtype)
        result["perplexity"] = ppl
        print(json.dumps(ppl))
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f)
    os.replace(tmp, args.out)
    return 0


def main():
    try:
        return run()
    except UnsupportedError as e:
        print("hf_reference: error: %s" % e, file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError) as e:
        print("hf_reference: error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
