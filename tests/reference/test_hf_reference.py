"""Self-checks for the NumPy reference (run with /usr/bin/python3 -m unittest)."""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import hf_reference as ref  # noqa: E402
import make_tiny_checkpoint as mk  # noqa: E402

SCRIPT = os.path.join(HERE, "hf_reference.py")
PYTHON = sys.executable or "/usr/bin/python3"

LLAMA3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 4.0, "original_max_position_embeddings": 64}


# ---------------------------------------------------------------------------
# A second, deliberately different implementation: one token at a time with an
# explicit per-layer, per-kv-head cache, per-head loops and pairwise rotation.
# ---------------------------------------------------------------------------

def _norm(v, w, eps):
    return w * (v / math.sqrt(float(np.dot(v, v)) / v.size + eps))


def _rotate(v, pos, freqs, factor=1.0):
    """Rotates the first 2 * len(freqs) values of v in pairs (i, i + len(freqs)); the rest pass."""
    half = len(freqs)
    out = v.copy()
    for i, f in enumerate(freqs):
        c, s = math.cos(pos * f) * factor, math.sin(pos * f) * factor
        out[i] = v[i] * c - v[i + half] * s
        out[i + half] = v[i + half] * c + v[i] * s
    return out


def _layer_window(cfg, layer):
    """The window of a layer (None: it sees every earlier position), written out per family."""
    mt = cfg["model_type"]
    window = cfg.get("sliding_window")
    if window is None:
        return None
    if mt == "mistral":
        return window
    if mt == "gemma3_text":
        return window if (layer + 1) % cfg["sliding_window_pattern"] else None
    if cfg.get("use_sliding_window") and layer >= cfg.get("max_window_layers", 28):
        return window
    return None


def _layer_weight(w, p, name, rows):
    """The [rows] of a projection, from phi3's fused qkv_proj / gate_up_proj when the layer has one."""
    fused = {"q_proj": ("self_attn.qkv_proj", 0), "k_proj": ("self_attn.qkv_proj", 1),
             "v_proj": ("self_attn.qkv_proj", 2), "gate_proj": ("mlp.gate_up_proj", 0),
             "up_proj": ("mlp.gate_up_proj", 1)}
    full = p + ("self_attn." if name in ("q_proj", "k_proj", "v_proj") else "mlp.") + name + ".weight"
    if full in w:
        return w[full]
    tensor, index = fused[name]
    whole = w[p + tensor + ".weight"]
    start = sum(rows[:index])
    return whole[start:start + rows[index]]


def incremental_logits(cfg, w, tokens, inv_freq=None, fp16_cache=False, attention_factor=1.0):
    mt = cfg["model_type"]
    gemma = mt == "gemma3_text"
    E = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    D = cfg.get("head_dim") or E // H
    eps = cfg["rms_norm_eps"]
    n_layers = cfg["num_hidden_layers"]
    if inv_freq is None:
        theta = cfg.get("rope_theta", 10000.0)
        inv_freq = [theta ** (-(2.0 * i) / D) for i in range(D // 2)]
    local_freq = inv_freq
    if gemma:
        local_freq = [cfg["rope_local_base_freq"] ** (-(2.0 * i) / D) for i in range(D // 2)]
    group = H // KV
    qkv_bias = mt == "qwen2" or cfg.get("attention_bias", False)
    o_bias = mt != "qwen2" and cfg.get("attention_bias", False)
    qk_norm = mt in ("qwen3", "gemma3_text")
    tied = cfg.get("tie_word_embeddings", gemma)
    head = w["model.embed_tokens.weight"] if tied else w["lm_head.weight"]
    granite = mt == "granite"
    emb_mult = cfg.get("embedding_multiplier", 1.0) if granite else 1.0
    if gemma:
        emb_mult = float(np.float32(math.sqrt(E)))
    res_mult = cfg.get("residual_multiplier", 1.0) if granite else 1.0
    logits_div = cfg.get("logits_scaling", 1.0) if granite else 1.0
    scale = cfg.get("attention_multiplier", 1.0) if granite else 1.0 / math.sqrt(D)
    if gemma:
        scale = cfg["query_pre_attn_scalar"] ** -0.5
    nope = [v == 0 for v in cfg.get("no_rope_layers", [])] if mt == "smollm3" else []
    F = cfg["intermediate_size"]
    k_cache = [[[] for _ in range(KV)] for _ in range(n_layers)]
    v_cache = [[[] for _ in range(KV)] for _ in range(n_layers)]

    def store(x):
        return x.astype(np.float16).astype(np.float64) if fp16_cache else x

    def norm(v, name):
        return _norm(v, w[name] + (1.0 if gemma else 0.0), eps)

    def act(g):  # silu, or GELU-tanh written as x * sigmoid(2 z)
        if gemma:
            return g / (1.0 + np.exp(-2.0 * math.sqrt(2.0 / math.pi) * (g + 0.044715 * g ** 3)))
        return g / (1.0 + np.exp(-g))

    rows = []
    for pos, tok in enumerate(tokens):
        x = w["model.embed_tokens.weight"][tok] * emb_mult
        for li in range(n_layers):
            p = "model.layers.%d." % li
            window = _layer_window(cfg, li)
            local = gemma and window is not None  # gemma's local layers: their own base, no scaling
            freqs = local_freq if local else inv_freq
            factor = 1.0 if local else attention_factor
            if li < len(nope) and nope[li]:
                freqs = []
            qkv_rows = [H * D, KV * D, KV * D]
            h = norm(x, p + "input_layernorm.weight")
            q = _layer_weight(w, p, "q_proj", qkv_rows).dot(h)
            k = _layer_weight(w, p, "k_proj", qkv_rows).dot(h)
            v = _layer_weight(w, p, "v_proj", qkv_rows).dot(h)
            if qkv_bias:
                q = q + w[p + "self_attn.q_proj.bias"]
                k = k + w[p + "self_attn.k_proj.bias"]
                v = v + w[p + "self_attn.v_proj.bias"]
            for j in range(KV):
                kj = k[j * D:(j + 1) * D]
                if qk_norm:
                    kj = norm(kj, p + "self_attn.k_norm.weight")
                k_cache[li][j].append(store(_rotate(kj, pos, freqs, factor if len(freqs) else 1.0)))
                v_cache[li][j].append(store(v[j * D:(j + 1) * D]))
            attn = np.zeros(H * D)
            for a in range(H):
                qa = q[a * D:(a + 1) * D]
                if qk_norm:
                    qa = norm(qa, p + "self_attn.q_norm.weight")
                qa = _rotate(qa, pos, freqs, factor if len(freqs) else 1.0)
                first = 0 if window is None else max(0, pos + 1 - window)
                keys = k_cache[li][a // group][first:]
                vals = v_cache[li][a // group][first:]
                s = np.array([float(np.dot(qa, kk)) for kk in keys]) * scale
                e = np.exp(s - s.max())
                e /= e.sum()
                acc = np.zeros(D)
                for wt, vv in zip(e, vals):
                    acc += wt * vv
                attn[a * D:(a + 1) * D] = acc
            o = w[p + "self_attn.o_proj.weight"].dot(attn)
            if o_bias:
                o = o + w[p + "self_attn.o_proj.bias"]
            if gemma:
                x = x + norm(o, p + "post_attention_layernorm.weight")
                h = norm(x, p + "pre_feedforward_layernorm.weight")
            else:
                x = x + o * res_mult
                h = norm(x, p + "post_attention_layernorm.weight")
            g = _layer_weight(w, p, "gate_proj", [F, F]).dot(h)
            u = _layer_weight(w, p, "up_proj", [F, F]).dot(h)
            d = w[p + "mlp.down_proj.weight"].dot(act(g) * u)
            x = x + (norm(d, p + "post_feedforward_layernorm.weight") if gemma else d * res_mult)
        rows.append(head.dot(norm(x, "model.norm.weight")) / logits_div)
    return np.array(rows)


def llama3_inv_freq_scalar(D, theta, sc):
    """Per-frequency scalar version of the llama3 rule."""
    out = []
    lo_wl = sc["original_max_position_embeddings"] / sc["low_freq_factor"]
    hi_wl = sc["original_max_position_embeddings"] / sc["high_freq_factor"]
    for i in range(0, D, 2):
        f = 1.0 / theta ** (i / D)
        wl = 2 * math.pi / f
        if wl < hi_wl:
            out.append(f)
        elif wl > lo_wl:
            out.append(f / sc["factor"])
        else:
            t = (sc["original_max_position_embeddings"] / wl - sc["low_freq_factor"]) / (
                sc["high_freq_factor"] - sc["low_freq_factor"])
            out.append((1 - t) * f / sc["factor"] + t * f)
    return np.array(out)


class Base(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name
        self._n = 0

    def tearDown(self):
        self._tmp.cleanup()

    def ckpt(self, dtype="F32", shards=1, seed=0, weights=None, **kw):
        """Write a checkpoint; returns (dir, config, stored float64 weights)."""
        self._n += 1
        d = os.path.join(self.tmp, "ck%d" % self._n)
        cfg = mk.make_config(dtype=dtype, **kw)
        if weights is None:
            weights = mk.make_weights(cfg, seed=seed)
        stored = mk.write_checkpoint(d, cfg, weights, dtype=dtype, shards=shards)
        return d, cfg, stored

    def model(self, d):
        cfg, w = ref.load_checkpoint(d)
        return ref.Model(cfg, w)


class SafetensorsTest(Base):
    def test_bf16_known_values(self):
        # Bit patterns written by hand, not through the writer under test.
        patterns = [0x3F80, 0xC000, 0x3E20, 0x4049, 0x0000, 0x8000, 0x7F80, 0x0001, 0x7F7F]
        expected = [1.0, -2.0, 0.15625, 3.140625, 0.0, -0.0, math.inf, 2.0 ** -133,
                    (2 - 2 ** -7) * 2.0 ** 127]
        f16 = [0x3C00, 0xC400, 0x3555]
        f16_expected = [1.0, -4.0, float(np.float16(1.0 / 3.0))]
        data = struct.pack("<%dH" % len(patterns), *patterns)
        data_f16 = struct.pack("<%dH" % len(f16), *f16)
        data_f32 = struct.pack("<2f", 0.1, -7.5)
        header = {
            "b": {"dtype": "BF16", "shape": [3, 3], "data_offsets": [0, len(data)]},
            "h": {"dtype": "F16", "shape": [3], "data_offsets": [len(data), len(data) + len(data_f16)]},
            "f": {"dtype": "F32", "shape": [2, 1],
                  "data_offsets": [len(data) + len(data_f16), len(data) + len(data_f16) + 8]},
        }
        for with_meta in (False, True):
            h = dict(header)
            if with_meta:
                h["__metadata__"] = {"format": "pt"}
            hj = json.dumps(h).encode()
            path = os.path.join(self.tmp, "t%d.safetensors" % with_meta)
            with open(path, "wb") as f:
                f.write(struct.pack("<Q", len(hj)) + hj + data + data_f16 + data_f32)
            t = ref.read_safetensors(path)
            self.assertEqual(set(t), {"b", "h", "f"})
            self.assertEqual(t["b"].shape, (3, 3))
            self.assertEqual(t["b"].dtype, np.float64)
            got = t["b"].ravel().tolist()
            for g, e in zip(got, expected):
                self.assertEqual(g, e)
            self.assertTrue(math.copysign(1.0, got[5]) < 0)
            self.assertEqual(t["h"].tolist(), f16_expected)
            self.assertEqual(t["f"].shape, (2, 1))
            self.assertEqual(t["f"].ravel().tolist(), [float(np.float32(0.1)), -7.5])

    def test_bf16_encode_round_trip(self):
        vals = np.array([1.0, -2.0, 0.15625, 3.140625, 1e30, -1e-30], dtype=np.float32)
        bits = mk.encode_bf16(vals)
        self.assertEqual(bits[:4].tolist(), [0x3F80, 0xC000, 0x3E20, 0x4049])
        back = ref.decode_bf16(bits)
        np.testing.assert_array_equal(back[:4], vals[:4])
        np.testing.assert_allclose(back, vals, rtol=2 ** -8)

    def test_loaded_weights_equal_stored(self):
        for dtype in ("F32", "BF16", "F16"):
            d, cfg, stored = self.ckpt(dtype=dtype, model_type="qwen2")
            _, w = ref.load_checkpoint(d)
            self.assertEqual(set(w), set(stored))
            for n in stored:
                np.testing.assert_array_equal(w[n], stored[n], err_msg="%s %s" % (dtype, n))

    def test_sharded_equals_single(self):
        for dtype in ("F32", "BF16"):
            d1, _, _ = self.ckpt(dtype=dtype, shards=1, model_type="qwen3", seed=3)
            d2, _, _ = self.ckpt(dtype=dtype, shards=2, model_type="qwen3", seed=3)
            self.assertTrue(os.path.isfile(os.path.join(d2, "model.safetensors.index.json")))
            self.assertFalse(os.path.exists(os.path.join(d2, "model.safetensors")))
            toks = [5, 9, 200, 3, 77, 1]
            a = self.model(d1).logits(toks)
            b = self.model(d2).logits(toks)
            np.testing.assert_array_equal(a, b)

    def test_missing_shard_tensor_is_error(self):
        d, _, _ = self.ckpt(shards=2)
        idx_path = os.path.join(d, "model.safetensors.index.json")
        with open(idx_path) as f:
            idx = json.load(f)
        idx["weight_map"]["model.extra.weight"] = "model-00001-of-00002.safetensors"
        with open(idx_path, "w") as f:
            json.dump(idx, f)
        with self.assertRaises(ref.UnsupportedError):
            ref.load_checkpoint(d)


class ForwardTest(Base):
    VARIANTS = [
        dict(model_type="llama"),
        dict(model_type="llama", attention_bias=True, tie_word_embeddings=True),
        dict(model_type="mistral", sliding_window=4096),
        dict(model_type="qwen2", num_key_value_heads=1),
        dict(model_type="qwen3", head_dim=24),
        dict(model_type="qwen3", attention_bias=True, num_key_value_heads=4, tie_word_embeddings=True),
        # Sliding windows shorter than the sequence, on every layer or from max_window_layers on.
        dict(model_type="mistral", sliding_window=3),
        dict(model_type="qwen2", use_sliding_window=True, sliding_window=4, max_window_layers=1),
        dict(model_type="gemma3_text", num_hidden_layers=3, head_dim=32, sliding_window=4,
             sliding_window_pattern=3, query_pre_attn_scalar=24, tie_word_embeddings=True),
    ]

    def test_incremental_matches_full_sequence(self):
        toks = [3, 17, 250, 42, 42, 0, 99, 128, 7]
        for v in self.VARIANTS:
            with self.subTest(**v):
                d, cfg, stored = self.ckpt(seed=11, **v)
                full = self.model(d).logits(toks)
                inc = incremental_logits(cfg, stored, toks)
                self.assertEqual(full.shape, (len(toks), cfg["vocab_size"]))
                self.assertLess(np.abs(full - inc).max(), 1e-9)
                # Sanity: the comparison is not trivially satisfied.
                self.assertGreater(np.abs(full[0] - full[-1]).max(), 1e-2)

    def test_incremental_matches_with_fp16_cache(self):
        toks = [3, 17, 250, 42, 0, 99]
        d, cfg, stored = self.ckpt(model_type="qwen3", seed=2)
        full = self.model(d).logits(toks, cache_dtype="float16")
        inc = incremental_logits(cfg, stored, toks, fp16_cache=True)
        self.assertLess(np.abs(full - inc).max(), 1e-9)

    def test_causality(self):
        d, cfg, _ = self.ckpt(model_type="qwen2", seed=5)
        m = self.model(d)
        toks = [10, 20, 30, 40, 50, 60, 70]
        full = m.logits(toks)
        for i in range(len(toks)):
            prefix = m.logits(toks[:i + 1])
            self.assertLess(np.abs(prefix - full[:i + 1]).max(), 1e-10)
            changed = toks[:i + 1] + [(t * 7 + 1) % cfg["vocab_size"] for t in toks[i + 1:]]
            other = m.logits(changed)
            self.assertLess(np.abs(other[:i + 1] - full[:i + 1]).max(), 1e-10)
            if i + 1 < len(toks):
                self.assertGreater(np.abs(other[i + 1:] - full[i + 1:]).max(), 1e-6)

    def test_gqa_equals_duplicated_mha(self):
        H, KV, E = 4, 2, 64
        D = E // H
        d1, cfg, stored = self.ckpt(model_type="llama", num_attention_heads=H, num_key_value_heads=KV,
                                    seed=7)
        dup = dict(stored)
        for i in range(cfg["num_hidden_layers"]):
            for nm in ("k_proj", "v_proj"):
                key = "model.layers.%d.self_attn.%s.weight" % (i, nm)
                w = stored[key].reshape(KV, D, E)
                dup[key] = np.concatenate([w[a // (H // KV)] for a in range(H)], axis=0)
        d2, _, _ = self.ckpt(model_type="llama", num_attention_heads=H, num_key_value_heads=H, weights=dup)
        toks = [1, 2, 3, 100, 200, 255]
        a = self.model(d1).logits(toks)
        b = self.model(d2).logits(toks)
        self.assertLess(np.abs(a - b).max(), 1e-10)
        # A wrong grouping (kv head a % KV instead of a // group) must differ.
        bad = dict(stored)
        for i in range(cfg["num_hidden_layers"]):
            for nm in ("k_proj", "v_proj"):
                key = "model.layers.%d.self_attn.%s.weight" % (i, nm)
                w = stored[key].reshape(KV, D, E)
                bad[key] = np.concatenate([w[a % KV] for a in range(H)], axis=0)
        d3, _, _ = self.ckpt(model_type="llama", num_attention_heads=H, num_key_value_heads=H, weights=bad)
        c = self.model(d3).logits(toks)
        self.assertGreater(np.abs(a - c).max(), 1e-6)

    def test_llama3_rope(self):
        D, theta = 16, 10000.0
        ident = {"rope_type": "llama3", "factor": 1.0, "low_freq_factor": 1.0,
                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
        base = ref.rope_inv_freq(D, theta)
        np.testing.assert_allclose(ref.rope_inv_freq(D, theta, ident), base, rtol=0, atol=0)
        # Thresholds beyond every wavelength: unchanged even with factor 8.
        far = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 10 ** 9}
        np.testing.assert_array_equal(ref.rope_inv_freq(D, theta, far), base)
        scaled = ref.rope_inv_freq(D, theta, LLAMA3_SCALING)
        np.testing.assert_allclose(scaled, llama3_inv_freq_scalar(D, theta, LLAMA3_SCALING),
                                   rtol=1e-15, atol=0)
        self.assertEqual(scaled[0], base[0])                       # high frequency untouched
        self.assertAlmostEqual(scaled[-1], base[-1] / 8.0, delta=1e-18)  # low frequency / factor
        # "type" is accepted as the key as well (older configs).
        old = dict(LLAMA3_SCALING)
        old["type"] = old.pop("rope_type")
        np.testing.assert_array_equal(ref.rope_inv_freq(D, theta, old), scaled)

        toks = [4, 8, 15, 16, 23, 42, 108, 200, 3, 9, 11, 250]
        d0, _, w0 = self.ckpt(model_type="llama", seed=9)
        d1, _, _ = self.ckpt(model_type="llama", weights=w0, rope_scaling=ident)
        d8, cfg8, _ = self.ckpt(model_type="llama", weights=w0, rope_scaling=LLAMA3_SCALING)
        l0 = self.model(d0).logits(toks)
        np.testing.assert_array_equal(self.model(d1).logits(toks), l0)
        m8 = self.model(d8)
        l8 = m8.logits(toks)
        self.assertGreater(np.abs(l8 - l0).max(), 1e-6)
        # Position 0 has angle 0 everywhere, so rope scaling cannot matter there.
        self.assertLess(np.abs(l8[0] - l0[0]).max(), 1e-12)
        inc = incremental_logits(cfg8, w0, toks, inv_freq=llama3_inv_freq_scalar(16, 10000.0, LLAMA3_SCALING))
        self.assertLess(np.abs(l8 - inc).max(), 1e-9)

    def test_fp16_cache_small_nonzero(self):
        d, _, _ = self.ckpt(model_type="llama", seed=4)
        m = self.model(d)
        toks = [1, 50, 60, 70, 80, 90, 100]
        a = m.logits(toks)
        b = m.logits(toks, cache_dtype="float16")
        diff = np.abs(a - b).max()
        self.assertGreater(diff, 1e-7)
        self.assertLess(diff, 5e-2 * max(1.0, np.abs(a).max()))

    def test_tied_uses_embedding(self):
        d, cfg, stored = self.ckpt(model_type="qwen2", tie_word_embeddings=True)
        m = self.model(d)
        self.assertIs(m.lm_head, m.embed)
        h = m.hidden_states([1, 2, 3])
        np.testing.assert_array_equal(m.logits([1, 2, 3]), h @ stored["model.embed_tokens.weight"].T)

# Families beyond llama's layout, with the constants of their configs worked out here.
PHI3_LONGROPE = {"type": "longrope", "short_factor": [1.0, 1.25, 1.5, 2.0, 3.0, 4.0],
                 "long_factor": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]}
PHI3_EXTRA = {"partial_rotary_factor": 0.75, "original_max_position_embeddings": 8, "rope_scaling": PHI3_LONGROPE}
GRANITE_EXTRA = {"embedding_multiplier": 12.0, "residual_multiplier": 0.22, "attention_multiplier": 0.05,
                 "logits_scaling": 2.5}


class FamilyTest(Base):
    def test_incremental_matches_full_sequence(self):
        toks = [3, 17, 250, 42, 42, 0]  # 6 <= original_max_position_embeddings 8: short factors
        D, R = 16, 12
        # phi3: max 64 / original 8 = factor 8, attention factor sqrt(1 + ln 8 / ln 8) = sqrt(2).
        short = [10000.0 ** (-(2.0 * i) / R) / f for i, f in enumerate(PHI3_LONGROPE["short_factor"])]
        plain = [10000.0 ** (-(2.0 * i) / D) for i in range(D // 2)]
        variants = [
            (dict(model_type="phi3", max_position_embeddings=64, extra=PHI3_EXTRA, tie_word_embeddings=True),
             short, math.sqrt(2.0)),
            (dict(model_type="smollm3", num_hidden_layers=3, extra={"no_rope_layers": [1, 0, 1]}), plain, 1.0),
            (dict(model_type="granite", extra=GRANITE_EXTRA), plain, 1.0),
        ]
        for kw, freqs, factor in variants:
            with self.subTest(model_type=kw["model_type"]):
                d, cfg, stored = self.ckpt(seed=13, **kw)
                full = self.model(d).logits(toks)
                inc = incremental_logits(cfg, stored, toks, inv_freq=freqs, attention_factor=factor)
                self.assertLess(np.abs(full - inc).max(), 1e-9)
                self.assertGreater(np.abs(full[0] - full[-1]).max(), 1e-2)

    def test_phi3_fused_projections_equal_llama_split_ones(self):
        toks = [5, 6, 7, 200, 31]
        d1, cfg, stored = self.ckpt(model_type="llama", seed=3)
        fused = dict(stored)
        for i in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % i
            fused[p + "self_attn.qkv_proj.weight"] = np.concatenate(
                [fused.pop(p + "self_attn.%s_proj.weight" % n) for n in "qkv"])
            fused[p + "mlp.gate_up_proj.weight"] = np.concatenate(
                [fused.pop(p + "mlp.gate_proj.weight"), fused.pop(p + "mlp.up_proj.weight")])
        d2, _, _ = self.ckpt(model_type="phi3", weights=fused)
        np.testing.assert_array_equal(self.model(d2).logits(toks), self.model(d1).logits(toks))
        # gate and up swapped must differ: the first half of gate_up_proj is the gate.
        swapped = dict(fused)
        for i in range(cfg["num_hidden_layers"]):
            key = "model.layers.%d.mlp.gate_up_proj.weight" % i
            half = swapped[key].shape[0] // 2
            swapped[key] = np.concatenate([swapped[key][half:], swapped[key][:half]])
        d3, _, _ = self.ckpt(model_type="phi3", weights=swapped)
        self.assertGreater(np.abs(self.model(d3).logits(toks) - self.model(d1).logits(toks)).max(), 1e-6)

    def test_smollm3_rope_layers(self):
        toks = [9, 8, 7, 6, 5, 4]
        d1, _, w = self.ckpt(model_type="llama", num_hidden_layers=3, seed=8)
        d2, _, _ = self.ckpt(model_type="smollm3", num_hidden_layers=3, weights=w, extra={"no_rope_layers": [1, 1, 1]})
        np.testing.assert_array_equal(self.model(d2).logits(toks), self.model(d1).logits(toks))
        # The default interval 3 makes layer 2 go without rope, as the explicit list does.
        d3, _, _ = self.ckpt(model_type="smollm3", num_hidden_layers=3, weights=w, extra={"no_rope_layer_interval": 3})
        d4, _, _ = self.ckpt(model_type="smollm3", num_hidden_layers=3, weights=w, extra={"no_rope_layers": [1, 1, 0]})
        self.assertEqual(self.model(d3).use_rope, [True, True, False])
        np.testing.assert_array_equal(self.model(d3).logits(toks), self.model(d4).logits(toks))
        self.assertGreater(np.abs(self.model(d4).logits(toks) - self.model(d1).logits(toks)).max(), 1e-6)

    def test_granite_multipliers(self):
        toks = [1, 2, 3, 4, 100]
        d1, cfg, w = self.ckpt(model_type="llama", seed=6)
        D = cfg["hidden_size"] // cfg["num_attention_heads"]
        neutral = {"embedding_multiplier": 1.0, "residual_multiplier": 1.0, "attention_multiplier": D ** -0.5,
                   "logits_scaling": 1.0}
        d2, _, _ = self.ckpt(model_type="granite", weights=w, extra=neutral)
        base = self.model(d1).logits(toks)
        self.assertLess(np.abs(self.model(d2).logits(toks) - base).max(), 1e-12)
        d3, _, _ = self.ckpt(model_type="granite", weights=w, extra=dict(neutral, logits_scaling=4.0))
        self.assertLess(np.abs(self.model(d3).logits(toks) * 4.0 - base).max(), 1e-12)
        for key, value in (("embedding_multiplier", 3.0), ("residual_multiplier", 0.5), ("attention_multiplier", 1.0)):
            d4, _, _ = self.ckpt(model_type="granite", weights=w, extra=dict(neutral, **{key: value}))
            self.assertGreater(np.abs(self.model(d4).logits(toks) - base).max(), 1e-6, key)

    def test_phi3_sliding_window_and_fused_shape_errors(self):
        # Every layer slides: through 2 layers of window 4, row 7 sees positions 1..7, not 0.
        d, _, _ = self.ckpt(model_type="phi3", sliding_window=4)
        toks = [1, 2, 3, 4, 5, 6, 7, 8]
        m = self.model(d)
        self.assertEqual(m.sliding, [True, True])
        a, b, c = m.logits(toks), m.logits([9] + toks[1:]), m.logits(toks[:1] + [9] + toks[2:])
        self.assertLess(np.abs(a[7] - b[7]).max(), 1e-12)
        self.assertGreater(np.abs(a[7] - c[7]).max(), 1e-6)
        cfg, w = ref.load_checkpoint(d)
        w["model.layers.0.self_attn.qkv_proj.weight"] = w["model.layers.0.self_attn.qkv_proj.weight"][:-1]
        with self.assertRaisesRegex(ref.UnsupportedError, "qkv_proj"):
            ref.Model(cfg, w)


class CliTest(Base):
    def run_cli(self, d, *extra):
        out = os.path.join(self.tmp, "out%d.json" % self._n)
        proc = subprocess.run([PYTHON, SCRIPT, d, "--out", out] + list(extra),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return proc, out

    def test_greedy_and_schema(self):
        d, cfg, _ = self.ckpt(model_type="qwen3", dtype="BF16", vocab_size=512, num_hidden_layers=4,
                              shards=2, seed=21)
        prompt = [1, 5, 9, 33, 400]
        ppl_file = os.path.join(self.tmp, "ppl.txt")
        with open(ppl_file, "w") as f:
            f.write(" ".join(map(str, prompt)) + "\n")
        t0 = time.time()
        proc, out = self.run_cli(d, "--tokens", ",".join(map(str, prompt)), "--steps", "32",
                                 "--perplexity-tokens", ppl_file)
        elapsed = time.time() - t0
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertLess(elapsed, 10.0)
        with open(out) as f:
            res = json.load(f)
        self.assertEqual(res["model_type"], "qwen3")
        self.assertEqual(res["tokens"], prompt)
        V = cfg["vocab_size"]
        pl = np.array(res["prompt_logits"])
        self.assertEqual(pl.shape, (len(prompt), V))
        self.assertEqual(len(res["greedy_tokens"]), 32)
        gl = np.array(res["greedy_logits"])
        self.assertEqual(gl.shape, (32, V))
        np.testing.assert_allclose(gl[0], pl[-1], rtol=1e-12, atol=1e-12)
        for t, row in zip(res["greedy_tokens"], gl):
            self.assertEqual(t, int(np.argmax(row)))
        # Greedy rows agree with a fresh forward over the final sequence.
        m = self.model(d)
        seq = prompt + res["greedy_tokens"]
        full = m.logits(seq[:-1])
        np.testing.assert_allclose(gl, full[len(prompt) - 1:], rtol=0, atol=1e-9)
        # Perplexity equals the prompt's own next-token log-likelihood.
        lp = pl - pl.max(axis=1, keepdims=True)
        lp = lp - np.log(np.exp(lp).sum(axis=1, keepdims=True))
        nll = -np.mean([lp[i, prompt[i + 1]] for i in range(len(prompt) - 1)])
        self.assertEqual(res["perplexity"]["count"], len(prompt) - 1)
        self.assertAlmostEqual(res["perplexity"]["nll_mean"], nll, delta=1e-9)
        self.assertAlmostEqual(res["perplexity"]["perplexity"], math.exp(nll), delta=1e-9 * math.exp(nll))

    def test_steps_zero_and_fp16_cache(self):
        d, _, _ = self.ckpt(model_type="llama", seed=1)
        p1, out1 = self.run_cli(d, "--tokens", "1,2,3,4")
        self.assertEqual(p1.returncode, 0, p1.stderr)
        with open(out1) as f:
            r1 = json.load(f)
        self.assertEqual(r1["greedy_tokens"], [])
        self.assertEqual(r1["greedy_logits"], [])
        self._n += 1
        p2, out2 = self.run_cli(d, "--tokens", "1,2,3,4", "--cache-dtype", "float16")
        self.assertEqual(p2.returncode, 0, p2.stderr)
        with open(out2) as f:
            r2 = json.load(f)
        diff = np.abs(np.array(r1["prompt_logits"]) - np.array(r2["prompt_logits"])).max()
        self.assertGreater(diff, 0.0)
        self.assertLess(diff, 0.1)

    def test_unsupported_inputs_exit_1(self):
        cases = []
        d, _, _ = self.ckpt(model_type="llama")
        with open(os.path.join(d, "config.json")) as f:
            c = json.load(f)
        c["model_type"] = "gpt2"
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f)
        cases.append((d, "model_type", "1,2,3"))
        d, _, _ = self.ckpt(model_type="llama", rope_scaling={"rope_type": "ntk-by-parts", "factor": 4.0})
        cases.append((d, "rope_scaling", "1,2,3"))
        d, _, _ = self.ckpt(model_type="llama", vocab_size=256)
        cases.append((d, "out of range", "1,2,256"))
        for d, word, toks in cases:
            with self.subTest(word=word):
                proc, out = self.run_cli(d, "--tokens", toks)
                self.assertEqual(proc.returncode, 1)
                self.assertIn(word, proc.stderr)
                self.assertFalse(os.path.exists(out))

    def test_sliding_window_limits_what_a_row_sees(self):
        # In a 2-layer window-3 model, row 5 sees rows 3..5 of layer 0, which saw positions 1..5:
        # changing token 0 leaves it unchanged, changing token 1 does not. Without the window both
        # change it.
        toks = [3, 17, 250, 42, 42, 0, 99]
        for window, same in ((3, True), (None, False)):
            with self.subTest(window=window):
                m = self.model(self.ckpt(model_type="mistral", sliding_window=window, seed=4)[0])
                a = m.logits(toks)
                b = m.logits([9] + toks[1:])
                c = m.logits(toks[:1] + [7] + toks[2:])
                self.assertEqual(np.abs(a[5] - b[5]).max() < 1e-12, same)
                self.assertGreater(np.abs(a[5] - c[5]).max(), 1e-6)

    def test_gemma_pieces_by_hand(self):
        # GELU-tanh at 1: 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.841192 (to 6 places).
        self.assertAlmostEqual(float(ref.gelu_tanh(np.array(1.0))), 0.841192, places=6)
        # sqrt(640) = 25.298221...; in bfloat16 (8 bits of mantissa) 25.25; in float32 25.298222.
        self.assertEqual(ref.round_to_float(math.sqrt(640), "bfloat16"), 25.25)
        self.assertAlmostEqual(ref.round_to_float(math.sqrt(640), "float32"), 25.298222, places=5)
        # Layers 0 and 1 of a pattern-3 model slide, layer 2 does not.
        cfg = {"model_type": "gemma3_text", "sliding_window": 4, "sliding_window_pattern": 3}
        self.assertEqual(ref.sliding_layers(cfg, 3), [True, True, False])
        cfg = {"model_type": "qwen2", "sliding_window": 4, "use_sliding_window": True, "max_window_layers": 1}
        self.assertEqual(ref.sliding_layers(cfg, 3), [False, True, True])
        cfg["use_sliding_window"] = False
        self.assertEqual(ref.sliding_layers(cfg, 3), [False, False, False])


if __name__ == "__main__":
    unittest.main()
