#!/usr/bin/python3
"""Write a small random checkpoint folder in the Hugging Face layout.

The folder holds config.json and either model.safetensors or two shards
model-00001-of-00002.safetensors / model-00002-of-00002.safetensors with
model.safetensors.index.json, using the tensor names Hugging Face uses for
llama / mistral / qwen2 / qwen3 / phi3 / smollm3 / granite and the mixture-of-experts
mixtral / qwen2_moe / qwen3_moe / olmoe (experts stored one by one, as on the hub).
NumPy only.

Example:
    make_tiny_checkpoint.py OUT_DIR --model-type qwen3 --dtype BF16 --shards 2
"""

import argparse
import json
import os
import struct

import numpy as np

TORCH_DTYPE = {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}

# Small defaults for the MoE families' own fields (override them through `extra`).
MOE_DEFAULTS = {
    "mixtral": {"num_local_experts": 4, "num_experts_per_tok": 2, "router_jitter_noise": 0.0},
    "qwen2_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                  "shared_expert_intermediate_size": 64, "norm_topk_prob": False, "decoder_sparse_step": 1,
                  "mlp_only_layers": []},
    "qwen3_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "norm_topk_prob": True,
                  "decoder_sparse_step": 1, "mlp_only_layers": []},
    "olmoe": {"num_experts": 4, "num_experts_per_tok": 2, "norm_topk_prob": False, "clip_qkv": None},
}


def _moe_layer(cfg, i):
    """Whether layer i holds experts (transformers' rule, written out for the writer)."""
    mt = cfg["model_type"]
    if mt in ("mixtral", "olmoe"):
        return True
    step = cfg.get("decoder_sparse_step", 1)
    return cfg.get("num_experts", 0) > 0 and (i + 1) % step == 0 and i not in cfg.get("mlp_only_layers", [])


def _moe_weights(cfg, p, E, lin):
    """One sparse layer's tensors, per expert, under the family's names."""
    mt = cfg["model_type"]
    w = {}
    if mt == "mixtral":
        n, F = cfg["num_local_experts"], cfg["intermediate_size"]
        base, names = p + "block_sparse_moe.", ("w1", "w3", "w2")
    else:
        F = cfg["intermediate_size"] if mt == "olmoe" else cfg["moe_intermediate_size"]
        n, base, names = cfg["num_experts"], p + "mlp.", ("gate_proj", "up_proj", "down_proj")
    w[base + "gate.weight"] = lin(n, E)
    for j in range(n):
        w[base + "experts.%d.%s.weight" % (j, names[0])] = lin(F, E)
        w[base + "experts.%d.%s.weight" % (j, names[1])] = lin(F, E)
        w[base + "experts.%d.%s.weight" % (j, names[2])] = lin(E, F)
    S = cfg.get("shared_expert_intermediate_size") if mt == "qwen2_moe" else None
    if S:
        w[base + "shared_expert.gate_proj.weight"] = lin(S, E)
        w[base + "shared_expert.up_proj.weight"] = lin(S, E)
        w[base + "shared_expert.down_proj.weight"] = lin(E, S)
        w[base + "shared_expert_gate.weight"] = lin(1, E)
    return w


def encode_bf16(x):
    """float array -> bfloat16 bit patterns (uint16), round to nearest even."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + rounding) >> 16).astype(np.uint16)


def quantize(x, dtype):
    """Values exactly representable in `dtype`, as float64 (what a reader should get back)."""
    if dtype == "F32":
        return np.asarray(x, dtype=np.float32).astype(np.float64)
    if dtype == "F16":
        return np.asarray(x, dtype=np.float16).astype(np.float64)
    if dtype == "BF16":
        b = encode_bf16(x).astype(np.uint32) << 16
        return b.view(np.float32).astype(np.float64)
    raise ValueError("unknown dtype %s" % dtype)


def tensor_bytes(x, dtype):
    if dtype == "F32":
        return np.ascontiguousarray(x, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.ascontiguousarray(x, dtype="<f2").tobytes()
    if dtype == "BF16":
        return encode_bf16(x).astype("<u2").tobytes()
    raise ValueError("unknown dtype %s" % dtype)


def write_safetensors(path, tensors, dtype, metadata=None):
    """tensors: ordered {name: ndarray}; all written with the same dtype."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    chunks, offset = [], 0
    for name, arr in tensors.items():
        data = tensor_bytes(arr, dtype)
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((8 - len(hjson) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for c in chunks:
            f.write(c)


def make_config(model_type="llama", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=None, vocab_size=256,
                rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None,
                tie_word_embeddings=False, attention_bias=False, dtype="F32",
                max_position_embeddings=2048, sliding_window=None, use_sliding_window=False,
                max_window_layers=None, sliding_window_pattern=6, query_pre_attn_scalar=None, extra=None):
    cfg = {
        "architectures": [{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                           "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "phi3": "Phi3ForCausalLM",
                           "smollm3": "SmolLM3ForCausalLM", "granite": "GraniteForCausalLM",
                           "gemma3_text": "Gemma3ForCausalLM", "mixtral": "MixtralForCausalLM",
                           "qwen2_moe": "Qwen2MoeForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM",
                           "olmoe": "OlmoeForCausalLM"}.get(model_type, "Unknown")],
        "model_type": model_type,
        "hidden_size": hidden_size,
        "intermediate_size": intermediate_size,
        "num_hidden_layers": num_hidden_layers,
        "num_attention_heads": num_attention_heads,
        "num_key_value_heads": num_key_value_heads,
        "hidden_act": "silu",
        "rms_norm_eps": rms_norm_eps,
        "rope_theta": rope_theta,
        "vocab_size": vocab_size,
        "max_position_embeddings": max_position_embeddings,
        "tie_word_embeddings": tie_word_embeddings,
        "torch_dtype": TORCH_DTYPE[dtype],
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    if head_dim is not None or model_type in ("qwen3", "gemma3_text", "qwen3_moe"):
        cfg["head_dim"] = head_dim if head_dim is not None else hidden_size // num_attention_heads
    if model_type in ("llama", "qwen3", "smollm3", "granite", "qwen3_moe", "olmoe"):
        cfg["attention_bias"] = attention_bias
    if model_type in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        cfg["use_sliding_window"] = use_sliding_window
        cfg["sliding_window"] = sliding_window
        if max_window_layers is not None:
            cfg["max_window_layers"] = max_window_layers
    if model_type == "gemma3_text":
        del cfg["hidden_act"]
        cfg.update({"hidden_activation": "gelu_pytorch_tanh", "sliding_window": sliding_window or 4096,
                    "sliding_window_pattern": sliding_window_pattern, "rope_local_base_freq": 10000.0,
                    "query_pre_attn_scalar": query_pre_attn_scalar or cfg["head_dim"],
                    "final_logit_softcapping": None, "attn_logit_softcapping": None, "attention_bias": False})
    if model_type in ("mistral", "phi3", "mixtral"):
        cfg["sliding_window"] = sliding_window
    cfg.update(MOE_DEFAULTS.get(model_type, {}))
    if rope_scaling is not None:
        cfg["rope_scaling"] = rope_scaling
    cfg.update(extra or {})  # family fields: partial_rotary_factor, no_rope_layers, multipliers, ...
    return cfg


def make_weights(cfg, seed=0):
    """Random weights {name: float64 ndarray} in HF order for the config."""
    rng = np.random.default_rng(seed)
    E = cfg["hidden_size"]
    I = cfg["intermediate_size"]
    H = cfg["num_attention_heads"]
    KV = cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or E // H
    V = cfg["vocab_size"]
    mt = cfg["model_type"]
    qkv_bias = mt == "qwen2" or bool(cfg.get("attention_bias", False))
    qkv_bias = qkv_bias or (mt == "qwen2_moe" and cfg.get("qkv_bias", True))
    o_bias = mt not in ("qwen2", "qwen2_moe") and bool(cfg.get("attention_bias", False))

    def lin(out_f, in_f):
        return rng.standard_normal((out_f, in_f)) / np.sqrt(in_f)

    gemma = mt == "gemma3_text"

    def norm(n):  # gemma's norms scale by 1 + w
        return (0.0 if gemma else 1.0) + 0.1 * rng.standard_normal(n)

    w = {"model.embed_tokens.weight": rng.standard_normal((V, E))}
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = norm(E)
        w[p + "self_attn.q_proj.weight"] = lin(H * D, E)
        w[p + "self_attn.k_proj.weight"] = lin(KV * D, E)
        w[p + "self_attn.v_proj.weight"] = lin(KV * D, E)
        if qkv_bias:
            w[p + "self_attn.q_proj.bias"] = 0.1 * rng.standard_normal(H * D)
            w[p + "self_attn.k_proj.bias"] = 0.1 * rng.standard_normal(KV * D)
            w[p + "self_attn.v_proj.bias"] = 0.1 * rng.standard_normal(KV * D)
        if mt in ("qwen3", "gemma3_text", "qwen3_moe"):
            w[p + "self_attn.q_norm.weight"] = norm(D)
            w[p + "self_attn.k_norm.weight"] = norm(D)
        if mt == "olmoe":  # over the whole projections
            w[p + "self_attn.q_norm.weight"] = norm(H * D)
            w[p + "self_attn.k_norm.weight"] = norm(KV * D)
        w[p + "self_attn.o_proj.weight"] = lin(E, H * D)
        if o_bias:
            w[p + "self_attn.o_proj.bias"] = 0.1 * rng.standard_normal(E)
        w[p + "post_attention_layernorm.weight"] = norm(E)
        if gemma:
            w[p + "pre_feedforward_layernorm.weight"] = norm(E)
            w[p + "post_feedforward_layernorm.weight"] = norm(E)
        if mt in MOE_DEFAULTS and _moe_layer(cfg, i):
            w.update(_moe_weights(cfg, p, E, lin))
            continue
        w[p + "mlp.gate_proj.weight"] = lin(I, E)
        w[p + "mlp.up_proj.weight"] = lin(I, E)
        w[p + "mlp.down_proj.weight"] = lin(E, I)
    if mt == "phi3":  # fused as Phi-3 stores them: rows q, k, v and gate, up
        for i in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % i
            w[p + "self_attn.qkv_proj.weight"] = np.concatenate(
                [w.pop(p + "self_attn.%s_proj.weight" % n) for n in "qkv"], axis=0)
            w[p + "mlp.gate_up_proj.weight"] = np.concatenate(
                [w.pop(p + "mlp.gate_proj.weight"), w.pop(p + "mlp.up_proj.weight")], axis=0)
    w["model.norm.weight"] = norm(E)
    if not cfg.get("tie_word_embeddings", False):
        w["lm_head.weight"] = lin(V, E)
    return w


def write_checkpoint(out_dir, cfg, weights, dtype="F32", shards=1):
    """Write config.json and safetensors file(s). Returns the weights as stored (float64)."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
    names = list(weights)
    meta = {"format": "pt"}
    if shards <= 1:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), weights, dtype, meta)
    else:
        per = (len(names) + shards - 1) // shards
        groups = [names[k * per:(k + 1) * per] for k in range(shards)]
        weight_map, total = {}, 0
        item = 4 if dtype == "F32" else 2
        for k, group in enumerate(groups):
            fname = "model-%05d-of-%05d.safetensors" % (k + 1, shards)
            write_safetensors(os.path.join(out_dir, fname), {n: weights[n] for n in group}, dtype, meta)
            for n in group:
                weight_map[n] = fname
                total += weights[n].size * item
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        with open(os.path.join(out_dir, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
            json.dump(index, f, indent=2)
    return {n: quantize(a, dtype) for n, a in weights.items()}


def make_tiny_checkpoint(out_dir, dtype="F32", shards=1, seed=0, **config_kwargs):
    cfg = make_config(dtype=dtype, **config_kwargs)
    weights = make_weights(cfg, seed=seed)
    write_checkpoint(out_dir, cfg, weights, dtype=dtype, shards=shards)
    return cfg


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--model-type", default="llama",
                    choices=("llama", "mistral", "qwen2", "qwen3", "phi3", "smollm3", "granite",
                             "mixtral", "qwen2_moe", "qwen3_moe", "olmoe"))
    ap.add_argument("--hidden-size", type=int, default=64)
    ap.add_argument("--intermediate-size", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=None)
    ap.add_argument("--vocab-size", type=int, default=256)
    ap.add_argument("--rms-norm-eps", type=float, default=1e-6)
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--rope-scaling", default=None, help="JSON object, e.g. llama3 parameters")
    ap.add_argument("--tie-word-embeddings", action="store_true")
    ap.add_argument("--attention-bias", action="store_true")
    ap.add_argument("--dtype", default="F32", choices=("F32", "BF16", "F16"))
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--extra", default=None, help="JSON object of further config fields, e.g. MoE ones")
    args = ap.parse_args()
    make_tiny_checkpoint(
        args.out_dir, dtype=args.dtype, shards=args.shards, seed=args.seed,
        model_type=args.model_type, hidden_size=args.hidden_size,
        intermediate_size=args.intermediate_size, num_hidden_layers=args.layers,
        num_attention_heads=args.heads, num_key_value_heads=args.kv_heads, head_dim=args.head_dim,
        vocab_size=args.vocab_size, rms_norm_eps=args.rms_norm_eps, rope_theta=args.rope_theta,
        rope_scaling=json.loads(args.rope_scaling) if args.rope_scaling else None,
        tie_word_embeddings=args.tie_word_embeddings, attention_bias=args.attention_bias,
        extra=json.loads(args.extra) if args.extra else None)


if __name__ == "__main__":
    main()
