"""Self-checks of the reference's gemma2 and gemma3 parts (hf_gemma.py), of longrope over a
program's context, legacy phi3 yarn, and the phi3 and smollm3 sliding windows (run with
/usr/bin/python3 -m unittest)."""

import json
import math
import os
import subprocess
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import hf_gemma  # noqa: E402
import hf_reference as ref  # noqa: E402
import make_tiny_checkpoint as mk  # noqa: E402
from test_hf_reference import PHI3_EXTRA, PHI3_LONGROPE, Base  # noqa: E402

TOKS = [3, 17, 250, 42, 42, 0, 99, 128, 7]


def gemma2_checkpoint(test, caps=(5.0, 3.0), window=3, layers=3, seed=5):
    """A gemma2 checkpoint (gemma3_text's tensors without q/k norms); returns (dir, config, weights)."""
    cfg = mk.make_config(model_type="gemma3_text", num_hidden_layers=layers, head_dim=32, sliding_window=window,
                         query_pre_attn_scalar=24, tie_word_embeddings=True)
    weights = {n: w for n, w in mk.make_weights(cfg, seed=seed).items() if "q_norm" not in n and "k_norm" not in n}
    for key in ("sliding_window_pattern", "rope_local_base_freq"):
        del cfg[key]
    cfg.update({"model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"],
                "attn_logit_softcapping": caps[0], "final_logit_softcapping": caps[1]})
    test._n += 1
    d = os.path.join(test.tmp, "g2_%d" % test._n)
    return d, cfg, mk.write_checkpoint(d, cfg, weights)


def gemma2_incremental(cfg, w, tokens):
    """gemma2 one token at a time, written apart from hf_reference: a cache per layer and kv head,
    each score capped on its own, even layers limited to the window, the logits capped."""
    E, H, KV, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    L, eps, window = cfg["num_hidden_layers"], cfg["rms_norm_eps"], cfg["sliding_window"]
    acap, fcap = cfg["attn_logit_softcapping"], cfg["final_logit_softcapping"]
    freqs = [cfg["rope_theta"] ** (-(2.0 * i) / D) for i in range(D // 2)]
    scale, emb = cfg["query_pre_attn_scalar"] ** -0.5, float(np.float32(math.sqrt(E)))
    keys = [[[] for _ in range(KV)] for _ in range(L)]
    vals = [[[] for _ in range(KV)] for _ in range(L)]

    def norm(v, name):
        return (v / math.sqrt(float(np.dot(v, v)) / v.size + eps)) * (1.0 + w[name])

    def rotate(v, pos):
        out, half = v.copy(), D // 2
        for i, f in enumerate(freqs):
            c, s = math.cos(pos * f), math.sin(pos * f)
            out[i], out[i + half] = v[i] * c - v[i + half] * s, v[i + half] * c + v[i] * s
        return out

    rows = []
    for pos, tok in enumerate(tokens):
        x = w["model.embed_tokens.weight"][tok] * emb
        for li in range(L):
            p = "model.layers.%d." % li
            h = norm(x, p + "input_layernorm.weight")
            q, k, v = (w[p + "self_attn.%s_proj.weight" % n].dot(h) for n in "qkv")
            for j in range(KV):
                keys[li][j].append(rotate(k[j * D:(j + 1) * D], pos))
                vals[li][j].append(v[j * D:(j + 1) * D])
            attn = np.zeros(H * D)
            first = max(0, pos + 1 - window) if li % 2 == 0 else 0
            for a in range(H):
                qa = rotate(q[a * D:(a + 1) * D], pos)
                s = np.array([acap * math.tanh(float(np.dot(qa, kk)) * scale / acap)
                              for kk in keys[li][a // (H // KV)][first:]])
                e = np.exp(s - s.max())
                attn[a * D:(a + 1) * D] = (e / e.sum()).dot(np.array(vals[li][a // (H // KV)][first:]))
            x = x + norm(w[p + "self_attn.o_proj.weight"].dot(attn), p + "post_attention_layernorm.weight")
            h = norm(x, p + "pre_feedforward_layernorm.weight")
            g, u = w[p + "mlp.gate_proj.weight"].dot(h), w[p + "mlp.up_proj.weight"].dot(h)
            d = w[p + "mlp.down_proj.weight"].dot(ref.gelu_tanh(g) * u)
            x = x + norm(d, p + "post_feedforward_layernorm.weight")
        logits = w["model.embed_tokens.weight"].dot(norm(x, "model.norm.weight"))
        rows.append(np.array([fcap * math.tanh(z / fcap) for z in logits]))
    return np.array(rows)


class Gemma2Test(Base):
    def test_incremental_matches_full_sequence(self):
        d, cfg, stored = gemma2_checkpoint(self)
        full = self.model(d).logits(TOKS)
        self.assertLess(np.abs(full - gemma2_incremental(cfg, stored, TOKS)).max(), 1e-9)
        self.assertGreater(np.abs(full[0] - full[-1]).max(), 1e-2)

    def test_caps_bite_and_bound_the_logits(self):
        d, _, _ = gemma2_checkpoint(self)
        capped = self.model(d).logits(TOKS)
        self.assertLessEqual(np.abs(capped).max(), 3.0)
        for caps in ((5.0, None), (None, 3.0), (None, None)):
            other, _, _ = gemma2_checkpoint(self, caps=caps)
            self.assertGreater(np.abs(self.model(other).logits(TOKS) - capped).max(), 0.1, caps)

    def test_cap_defaults_and_layers(self):
        self.assertEqual(hf_gemma.softcaps({"model_type": "gemma2"}), (50.0, 30.0))
        self.assertEqual(hf_gemma.softcaps({"model_type": "gemma2", "attn_logit_softcapping": None,
                                            "final_logit_softcapping": 4}), (None, 4.0))
        self.assertEqual(hf_gemma.softcaps({"model_type": "gemma3_text"}), (None, None))
        cfg = {"model_type": "gemma2", "sliding_window": 8}
        self.assertEqual(ref.sliding_layers(cfg, 5), [True, False, True, False, True])
        cfg["layer_types"] = ["full_attention", "sliding_attention", "full_attention"]
        self.assertEqual(ref.sliding_layers(cfg, 3), [False, True, False])
        # Gemma2Config's window when the config has none: 4096, even layers.
        config, _ = hf_gemma.language_model({"model_type": "gemma2"}, {})
        self.assertEqual(config["sliding_window"], 4096)

    def test_window_limits_the_even_layers_only(self):
        # Window 2 on layers 0 and 2 of 3: row 8 still sees token 0 through the global layer 1.
        d, _, _ = gemma2_checkpoint(self, window=2)
        m = self.model(d)
        a, b = m.logits(TOKS), m.logits([9] + TOKS[1:])
        self.assertGreater(np.abs(a[8] - b[8]).max(), 1e-6)
        # With every layer local, it does not.
        d, cfg, _ = gemma2_checkpoint(self, window=2)
        cfg["layer_types"] = ["sliding_attention"] * 3
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        m = self.model(d)
        self.assertLess(np.abs(m.logits(TOKS)[8] - m.logits([9] + TOKS[1:])[8]).max(), 1e-12)


def gemma3_text_checkpoint(test, seed=7, **extra):
    cfg = mk.make_config(model_type="gemma3_text", num_hidden_layers=3, head_dim=32, sliding_window=3,
                         sliding_window_pattern=3, query_pre_attn_scalar=256, tie_word_embeddings=True,
                         rope_theta=1000000.0, extra=extra)
    cfg["rms_norm_eps"] = 1e-6
    return cfg, mk.make_weights(cfg, seed=seed)


class Gemma3Test(Base):
    def write(self, cfg, weights):
        self._n += 1
        d = os.path.join(self.tmp, "g3_%d" % self._n)
        mk.write_checkpoint(d, cfg, weights)
        return d

    def test_multimodal_checkpoint_is_its_language_model(self):
        text, w = gemma3_text_checkpoint(self, rope_scaling={"rope_type": "linear", "factor": 8.0})
        want = self.model(self.write(text, w)).logits(TOKS)
        # text_config without the fields that are Gemma3TextConfig's defaults (rope_local_base_freq
        # 10000, query_pre_attn_scalar 256, rms_norm_eps 1e-6, rope_theta 1e6, tied).
        sub = {k: v for k, v in text.items() if k not in ("rope_local_base_freq", "query_pre_attn_scalar",
                                                          "rms_norm_eps", "rope_theta", "tie_word_embeddings",
                                                          "torch_dtype", "bos_token_id", "eos_token_id")}
        top = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"], "text_config": sub,
               "vision_config": {"hidden_size": 16}, "eos_token_id": [1, 5], "torch_dtype": "float32"}
        vision = {"vision_tower.vision_model.post_layernorm.weight": np.ones(16),
                  "multi_modal_projector.mm_input_projection_weight": np.ones((16, 64))}
        for prefix, _ in hf_gemma.GEMMA3_LAYOUTS:
            with self.subTest(prefix=prefix):
                renamed = {prefix + n[len("model."):]: x for n, x in w.items()}
                renamed.update({("model." if prefix.startswith("model.") else "") + n: x for n, x in vision.items()})
                m = self.model(self.write(top, renamed))
                np.testing.assert_array_equal(m.logits(TOKS), want)
                self.assertEqual(m.config["eos_token_id"], [1, 5])
        # An untied one's lm_head: language_model.lm_head.weight as released.
        untied = dict(text, tie_word_embeddings=False)
        head = np.random.default_rng(1).standard_normal((text["vocab_size"], 64)) * 0.1
        want = self.model(self.write(untied, dict(w, **{"lm_head.weight": head}))).logits(TOKS)
        renamed = {"language_model." + n: x for n, x in w.items()}
        renamed["language_model.lm_head.weight"] = head
        got = self.model(self.write(dict(top, text_config=dict(sub, tie_word_embeddings=False)), renamed))
        np.testing.assert_array_equal(got.logits(TOKS), want)

    def test_rope_scaling_applies_to_the_global_layers_only(self):
        for types, same in ((["sliding_attention"] * 3, True), (None, False)):
            with self.subTest(types=types):
                plain, w = gemma3_text_checkpoint(self)
                scaled = dict(plain, rope_scaling={"rope_type": "linear", "factor": 8.0})
                if types:
                    plain["layer_types"] = scaled["layer_types"] = types
                a = self.model(self.write(plain, w)).logits(TOKS)
                b = self.model(self.write(scaled, w)).logits(TOKS)
                self.assertEqual(np.abs(a - b).max() < 1e-12, same)

    def test_gelu_is_the_exact_gelu(self):
        self.assertAlmostEqual(float(hf_gemma.gelu(np.array(1.0))), 0.8413447460685429, places=15)
        self.assertAlmostEqual(float(hf_gemma.gelu(np.array(-1.0))), -0.15865525393145707, places=15)
        tanh_cfg, w = gemma3_text_checkpoint(self)
        exact = dict(tanh_cfg, hidden_activation="gelu")
        a = self.model(self.write(tanh_cfg, w)).logits(TOKS)
        b = self.model(self.write(exact, w)).logits(TOKS)
        self.assertGreater(np.abs(a - b).max(), 1e-4)
        self.assertIs(self.model(self.write(exact, w)).act, hf_gemma.gelu)


class LongropeAndWindowsTest(Base):
    def phi3(self, rope_scaling=PHI3_LONGROPE, **kw):
        extra = dict(PHI3_EXTRA, rope_scaling=rope_scaling)
        return self.ckpt(model_type="phi3", max_position_embeddings=64, extra=extra, seed=13, **kw)

    def test_a_context_past_the_original_takes_long_factors_everywhere(self):
        toks = TOKS[:6]  # within original_max_position_embeddings 8: Hugging Face takes the short factors
        d, _, w = self.phi3()
        short = ref.Model(*ref.load_checkpoint(d)).logits(toks)
        long_ctx = ref.Model(*ref.load_checkpoint(d), context=64).logits(toks)
        within = ref.Model(*ref.load_checkpoint(d), context=8).logits(toks)
        np.testing.assert_array_equal(within, short)
        self.assertGreater(np.abs(short - long_ctx).max(), 1e-6)
        # The long context's logits are those of a model whose short factors are the long ones.
        swapped = dict(PHI3_LONGROPE, short_factor=PHI3_LONGROPE["long_factor"])
        d2, _, _ = self.phi3(rope_scaling=swapped, weights=w)
        np.testing.assert_allclose(self.model(d2).logits(toks), long_ctx, rtol=0, atol=1e-12)

    def test_phi3_legacy_yarn_is_longrope(self):
        d1, _, w = self.phi3()
        d2, _, _ = self.phi3(rope_scaling=dict(PHI3_LONGROPE, type="yarn"), weights=w)
        for context in (None, 64):
            a = ref.Model(*ref.load_checkpoint(d1), context=context).logits(TOKS)
            np.testing.assert_array_equal(ref.Model(*ref.load_checkpoint(d2), context=context).logits(TOKS), a)

    def test_smollm3_window_slides_the_layers_without_rope(self):
        extra = {"no_rope_layers": [1, 0, 1], "use_sliding_window": True, "sliding_window": 2}
        d, cfg, _ = self.ckpt(model_type="smollm3", num_hidden_layers=3, extra=extra)
        self.assertEqual(self.model(d).sliding, [False, True, False])
        self.assertEqual(ref.sliding_layers(dict(cfg, layer_types=["sliding_attention", "full_attention",
                                                                    "full_attention"]), 3), [True, False, False])
        self.assertEqual(ref.sliding_layers(dict(cfg, use_sliding_window=False), 3), [False] * 3)
        plain, _, _ = self.ckpt(model_type="smollm3", num_hidden_layers=3,
                                extra=dict(extra, use_sliding_window=False))
        self.assertGreater(np.abs(self.model(d).logits(TOKS) - self.model(plain).logits(TOKS)).max(), 1e-6)


class MaxContextCliTest(Base):
    def run_cli(self, d, *extra):
        out = os.path.join(self.tmp, "out%d.json" % self._n)
        proc = subprocess.run([sys.executable or "/usr/bin/python3", os.path.join(HERE, "hf_reference.py"), d,
                               "--out", out] + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return proc, out

    def test_max_context_flag(self):
        d, _, _ = self.ckpt(model_type="phi3", max_position_embeddings=64, extra=PHI3_EXTRA, seed=2)
        for context in ("8", "64"):
            proc, out = self.run_cli(d, "--tokens", "1,2,3,4", "--max-context", context)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(out) as f:
                got = np.array(json.load(f)["prompt_logits"])
            want = ref.Model(*ref.load_checkpoint(d), context=int(context)).logits([1, 2, 3, 4])
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
            self._n += 1


if __name__ == "__main__":
    unittest.main()
