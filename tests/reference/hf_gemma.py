"""The Gemma parts of the NumPy reference (hf_reference.py) that gemma3_text does not share.

* gemma2 (Gemma2ForCausalLM, transformers' modeling_gemma2.py): gemma3_text's layer without
  q/k norms and without a local rope base; attention scores scaled, then capped to
  ``attn_logit_softcapping * tanh(s / attn_logit_softcapping)`` before the mask, and logits
  capped the same way with ``final_logit_softcapping`` (Gemma2Config: 50 and 30 when the
  config lacks them, none when they are null); the layers ``layer_types`` marks
  ``"sliding_attention"``, else the even ones, slide.
* gemma3 (Gemma3ForConditionalGeneration, configuration_gemma3.py): the language model only.
  Its config is ``text_config`` over Gemma3TextConfig's defaults, with the top level's token ids
  and dtype; its tensors are ``language_model.model.*`` (as released) or
  ``model.language_model.*`` (newer transformers), the lm_head ``language_model.lm_head.weight``
  or ``lm_head.weight``; the vision tower and projector are dropped.
* ``hidden_activation: "gelu"`` is transformers' ACT2FN["gelu"], the exact erf GELU (only a
  missing activation of the first Gemma meant the tanh approximation).

Only the Python standard library and NumPy are used.
"""

import math

import numpy as np

GEMMA_MODEL_TYPES = ("gemma2", "gemma3")

# Gemma3TextConfig's defaults, for the fields a text_config omits.
GEMMA3_TEXT_DEFAULTS = {
    "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "pad_token_id": 0, "eos_token_id": 1,
    "bos_token_id": 2, "tie_word_embeddings": True, "rope_theta": 1000000.0, "attention_bias": False,
    "query_pre_attn_scalar": 256, "sliding_window": 4096, "final_logit_softcapping": None,
    "attn_logit_softcapping": None, "rope_scaling": None, "rope_local_base_freq": 10000.0,
    "sliding_window_pattern": 6,
}

# (the language model's prefix of "model.", its lm_head) as checkpoints have saved them.
GEMMA3_LAYOUTS = (("language_model.model.", "language_model.lm_head.weight"),
                  ("model.language_model.", "lm_head.weight"))

_GEMMA2_CAPS = {"attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0}


def language_model(config, weights):
    """(config, weights) of the text model: a gemma3 multimodal checkpoint's language model,
    a gemma2 one with Gemma2Config's sliding_window (4096) when it has none, others as they are."""
    if config.get("model_type") == "gemma2" and "sliding_window" not in config:
        return dict(config, sliding_window=4096), weights
    if config.get("model_type") != "gemma3":
        return config, weights
    text = dict(GEMMA3_TEXT_DEFAULTS)
    text.update(config.get("text_config") or {})
    for key in ("bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype"):
        if config.get(key) is not None:
            text[key] = config[key]
    text["model_type"] = "gemma3_text"
    for prefix, head in GEMMA3_LAYOUTS:
        if prefix + "embed_tokens.weight" in weights:
            break
    out = {}
    for name, w in weights.items():
        if name.startswith(prefix):
            out["model." + name[len(prefix):]] = w
        elif name == head:
            out["lm_head.weight"] = w
    return text, out


def softcaps(config):
    """(attention cap, final logit cap), each None when there is none."""
    defaults = _GEMMA2_CAPS if config.get("model_type") == "gemma2" else {}
    out = []
    for key in ("attn_logit_softcapping", "final_logit_softcapping"):
        value = config[key] if key in config else defaults.get(key)
        out.append(None if value is None else float(value))
    return tuple(out)


def softcap(x, cap):
    """cap * tanh(x / cap); x itself when cap is None."""
    return x if cap is None else cap * np.tanh(x / cap)


def gelu(x):
    """The exact GELU, x * Phi(x) = x (1 + erf(x / sqrt 2)) / 2."""
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * x * (1.0 + erf(np.asarray(x, dtype=np.float64) / math.sqrt(2.0)))


def gemma2_sliding_layers(config, n_layers):
    """gemma2: the layers layer_types marks, else every even layer (Gemma2Config)."""
    if config.get("sliding_window") is None:
        return [False] * n_layers
    types = config.get("layer_types")
    if types is not None:
        return [t == "sliding_attention" for t in types]
    return [i % 2 == 0 for i in range(n_layers)]
