"""Rotary embedding of the NumPy reference (hf_reference.py): Hugging Face's inverse
frequencies and attention factors for each rope_scaling type, in float64.

Only the Python standard library and NumPy are used.
"""

import math

import numpy as np


class UnsupportedError(Exception):
    """A checkpoint or request this reference does not support."""



def _llama3_inv_freq(inv_freq, rope_scaling):
    factor = float(rope_scaling["factor"])
    low_freq_factor = float(rope_scaling["low_freq_factor"])
    high_freq_factor = float(rope_scaling["high_freq_factor"])
    old_ctx = float(rope_scaling["original_max_position_embeddings"])
    low_freq_wavelen = old_ctx / low_freq_factor
    high_freq_wavelen = old_ctx / high_freq_factor
    wavelen = 2.0 * math.pi / inv_freq
    # Long wavelengths (low frequencies) are slowed down by `factor`.
    scaled = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    # The band between the two thresholds is blended smoothly.
    smooth = (old_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blended = (1.0 - smooth) * scaled / factor + smooth * scaled
    middle = np.logical_and(np.logical_not(wavelen < high_freq_wavelen),
                            np.logical_not(wavelen > low_freq_wavelen))
    return np.where(middle, blended, scaled)


def _yarn(dim, theta, rope_scaling, max_position_embeddings):
    """(inv_freq, attention_factor) of YaRN."""
    factor = float(rope_scaling["factor"])
    original = rope_scaling.get("original_max_position_embeddings") or max_position_embeddings
    attention_factor = rope_scaling.get("attention_factor")
    mscale, mscale_all_dim = rope_scaling.get("mscale"), rope_scaling.get("mscale_all_dim")

    def get_mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
        else:
            attention_factor = get_mscale(factor)
    beta_fast = rope_scaling.get("beta_fast") or 32
    beta_slow = rope_scaling.get("beta_slow") or 1

    def correction_dim(rotations):
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if rope_scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    extrapolation = 1.0 - ramp
    pos_freqs = float(theta) ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    inv = (1.0 / (factor * pos_freqs)) * (1.0 - extrapolation) + (1.0 / pos_freqs) * extrapolation
    return inv, float(attention_factor)


def _longrope(dim, theta, rope_scaling, config, seq_len):
    """(inv_freq, attention_factor) of LongRoPE: short_factor up to the original length, long_factor beyond."""
    if "original_max_position_embeddings" in config or config.get("model_type") == "phi3":
        original = int(config.get("original_max_position_embeddings", 4096))
        factor = float(config["max_position_embeddings"]) / original
    else:
        original = int(config["max_position_embeddings"])
        factor = float(rope_scaling.get("factor") or 1.0)
    attention_factor = rope_scaling.get("attention_factor")
    if attention_factor is None:
        attention_factor = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    key = "long_factor" if seq_len is not None and seq_len > original else "short_factor"
    ext = np.asarray(rope_scaling[key], dtype=np.float64)
    if ext.shape != (dim // 2,):
        raise UnsupportedError("rope_scaling.%s has %d values, expected %d" % (key, ext.size, dim // 2))
    return 1.0 / (ext * float(theta) ** (np.arange(0, dim, 2, dtype=np.float64) / dim)), float(attention_factor)


def rope_parameters(dim, theta, rope_scaling=None, config=None, seq_len=None):
    """(inv_freq of length dim/2, attention_factor) in float64, HF semantics for a sequence of seq_len."""
    config = config or {}
    inv_freq = 1.0 / (float(theta) ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    if rope_scaling is None:
        return inv_freq, 1.0
    kind = rope_scaling.get("rope_type", rope_scaling.get("type"))
    if kind == "yarn" and config.get("model_type") == "phi3":
        kind = "longrope"  # Phi3Config renames the old configs' "yarn" (and "su") to longrope
    if kind in (None, "default"):
        return inv_freq, 1.0
    if kind == "llama3":
        return _llama3_inv_freq(inv_freq, rope_scaling), 1.0
    if kind == "linear":
        return inv_freq / float(rope_scaling["factor"]), 1.0
    if kind == "dynamic":
        # The base grows with a sequence longer than max_position_embeddings.
        max_pos = int(config.get("max_position_embeddings", 2048))
        if seq_len is None or seq_len <= max_pos:
            return inv_freq, 1.0
        factor = float(rope_scaling["factor"])
        base = float(theta) * ((factor * seq_len / max_pos) - (factor - 1)) ** (dim / (dim - 2))
        return 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)), 1.0
    if kind == "yarn":
        return _yarn(dim, theta, rope_scaling, int(config.get("max_position_embeddings", 2048)))
    if kind in ("longrope", "su"):
        return _longrope(dim, theta, rope_scaling, config, seq_len)
    raise UnsupportedError("unsupported rope_scaling type %r" % (kind,))


def rope_inv_freq(head_dim, theta, rope_scaling=None):
    """Inverse frequencies (length head_dim/2) in float64, HF semantics."""
    return rope_parameters(head_dim, theta, rope_scaling)[0]


def rope_cos_sin(positions, inv_freq, attention_factor=1.0):
    angles = np.outer(np.asarray(positions, dtype=np.float64), inv_freq)  # [T, R/2]
    emb = np.concatenate([angles, angles], axis=-1)                        # [T, R]
    return np.cos(emb) * attention_factor, np.sin(emb) * attention_factor


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, cos, sin):
    """x: [heads, T, D]; cos/sin: [T, R] with R <= D: the first R values of each head rotate."""
    r = cos.shape[-1]
    rot, rest = x[..., :r], x[..., r:]
    rot = rot * cos[None, :, :] + rotate_half(rot) * sin[None, :, :]
    return np.concatenate([rot, rest], axis=-1)
