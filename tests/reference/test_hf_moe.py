"""Self-checks for the mixture-of-experts families of the NumPy reference (hf_moe.py).

Run with /usr/bin/python3 -m unittest discover -s tests/reference -p 'test_*.py'.
"""

import json
import math
import os
import subprocess
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import hf_moe  # noqa: E402
import hf_reference as ref  # noqa: E402
import make_tiny_checkpoint as mk  # noqa: E402
from test_hf_reference import Base as ReferenceBase  # noqa: E402

SCRIPT = os.path.join(HERE, "hf_reference.py")
PYTHON = sys.executable or "/usr/bin/python3"
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "olmoe")
TOKENS = [3, 17, 5, 200, 9, 41, 77]


# ---------------------------------------------------------------------------
# A second, deliberately different implementation: one token at a time, a
# per-layer, per-kv-head cache, and the MoE block as Python loops over an
# explicit {expert: weight} dict of the chosen experts.
# ---------------------------------------------------------------------------

def _norm(v, w, eps):
    return w * (v / math.sqrt(float(np.dot(v, v)) / v.size + eps))


def _rotate(v, pos, freqs):
    half = len(freqs)
    out = v.copy()
    for i, f in enumerate(freqs):
        c, s = math.cos(pos * f), math.sin(pos * f)
        out[i] = v[i] * c - v[i + half] * s
        out[i + half] = v[i + half] * c + v[i] * s
    return out


def _silu_vec(g):
    return np.array([a / (1.0 + math.exp(-a)) for a in g])


def chosen_experts(x, router, k, renorm):
    """{expert index: weight}; ties go to the lower index."""
    logits = [math.fsum(float(a) * float(b) for a, b in zip(row, x)) for row in router]
    top = max(logits)
    e = [math.exp(v - top) for v in logits]
    total = math.fsum(e)
    p = [v / total for v in e]
    order = sorted(range(len(p)), key=lambda j: (-p[j], j))
    chosen = {j: p[j] for j in order[:k]}
    if renorm:
        s = math.fsum(chosen.values())
        chosen = {j: v / s for j, v in chosen.items()}
    return chosen


def moe_token(x, router, experts, k, renorm, shared=None):
    """experts: [(gate [F, E], up [F, E], down [E, F])]; shared: (gate, up, down, gate_row [1, E])."""
    out = np.zeros_like(x)
    for j, wt in chosen_experts(x, router, k, renorm).items():
        g, u, d = experts[j]
        out = out + wt * d.dot(_silu_vec(g.dot(x)) * u.dot(x))
    if shared is not None:
        g, u, d, gate_row = shared
        z = float(gate_row[0].dot(x))
        out = out + (1.0 / (1.0 + math.exp(-z))) * d.dot(_silu_vec(g.dot(x)) * u.dot(x))
    return out


def layer_experts(cfg, w, p):
    """(router, experts, shared) of layer prefix p, or None where the layer is dense."""
    mt = cfg["model_type"]
    base = p + ("block_sparse_moe." if mt == "mixtral" else "mlp.")
    if base + "gate.weight" not in w:
        return None
    names = ("w1", "w3", "w2") if mt == "mixtral" else ("gate_proj", "up_proj", "down_proj")
    n = w[base + "gate.weight"].shape[0]
    experts = [tuple(w[base + "experts.%d.%s.weight" % (j, nm)] for nm in names) for j in range(n)]
    shared = None
    if base + "shared_expert_gate.weight" in w:
        shared = tuple(w[base + "shared_expert.%s.weight" % nm] for nm in ("gate_proj", "up_proj", "down_proj"))
        shared = shared + (w[base + "shared_expert_gate.weight"],)
    return w[base + "gate.weight"], experts, shared


def incremental_moe_logits(cfg, w, tokens, router="family"):
    mt = cfg["model_type"]
    E, H = cfg["hidden_size"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    D = cfg.get("head_dim") or E // H
    eps = cfg["rms_norm_eps"]
    freqs = [cfg["rope_theta"] ** (-(2.0 * i) / D) for i in range(D // 2)]
    window = cfg.get("sliding_window") if mt == "mixtral" else None
    bias = bool(cfg.get("attention_bias", False)) and mt in ("qwen3_moe", "olmoe")
    qkv_bias, o_bias = bias or mt == "qwen2_moe", bias
    clip = cfg.get("clip_qkv") if mt == "olmoe" else None
    k_top = cfg["num_experts_per_tok"]
    renorm = router == "family" and (mt == "mixtral" or bool(cfg.get("norm_topk_prob", False)))
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    n_layers = cfg["num_hidden_layers"]
    k_cache = [[[] for _ in range(KV)] for _ in range(n_layers)]
    v_cache = [[[] for _ in range(KV)] for _ in range(n_layers)]
    rows = []
    for pos, tok in enumerate(tokens):
        x = w["model.embed_tokens.weight"][tok]
        for li in range(n_layers):
            p = "model.layers.%d." % li
            h = _norm(x, w[p + "input_layernorm.weight"], eps)
            q, k, v = (w[p + "self_attn.%s_proj.weight" % n].dot(h) for n in "qkv")
            if qkv_bias:
                q, k, v = (t + w[p + "self_attn.%s_proj.bias" % n] for t, n in zip((q, k, v), "qkv"))
            if mt == "olmoe":
                q = _norm(q, w[p + "self_attn.q_norm.weight"], eps)
                k = _norm(k, w[p + "self_attn.k_norm.weight"], eps)
            if clip is not None:
                q, k, v = (np.minimum(np.maximum(t, -clip), clip) for t in (q, k, v))
            for j in range(KV):
                kj = k[j * D:(j + 1) * D]
                if mt == "qwen3_moe":
                    kj = _norm(kj, w[p + "self_attn.k_norm.weight"], eps)
                k_cache[li][j].append(_rotate(kj, pos, freqs))
                v_cache[li][j].append(v[j * D:(j + 1) * D])
            attn = np.zeros(H * D)
            first = 0 if window is None else max(0, pos + 1 - window)
            for a in range(H):
                qa = q[a * D:(a + 1) * D]
                if mt == "qwen3_moe":
                    qa = _norm(qa, w[p + "self_attn.q_norm.weight"], eps)
                qa = _rotate(qa, pos, freqs)
                keys = k_cache[li][a // (H // KV)][first:]
                vals = v_cache[li][a // (H // KV)][first:]
                s = np.array([float(np.dot(qa, kk)) for kk in keys]) / math.sqrt(D)
                e = np.exp(s - s.max())
                e /= e.sum()
                attn[a * D:(a + 1) * D] = sum(wt * vv for wt, vv in zip(e, vals))
            o = w[p + "self_attn.o_proj.weight"].dot(attn)
            if o_bias:
                o = o + w[p + "self_attn.o_proj.bias"]
            x = x + o
            h = _norm(x, w[p + "post_attention_layernorm.weight"], eps)
            moe = layer_experts(cfg, w, p)
            if moe is None:
                g, u, d = (w[p + "mlp.%s.weight" % n] for n in ("gate_proj", "up_proj", "down_proj"))
                x = x + d.dot(_silu_vec(g.dot(h)) * u.dot(h))
            else:
                x = x + moe_token(h, moe[0], moe[1], k_top, renorm, moe[2])
        rows.append(head.dot(_norm(x, w["model.norm.weight"], eps)))
    return np.array(rows)


class Base(ReferenceBase):
    """test_hf_reference's temporary folder, with checkpoints of the MoE families."""

    def ckpt(self, model_type, extra=None, weights=None, seed=0, edit=None, **kw):
        """Write a tiny checkpoint; returns (dir, config, stored float64 weights).
        `edit(cfg, weights)` may change the generated weights before they are written."""
        self._n += 1
        d = os.path.join(self.tmp, "ck%d" % self._n)
        kw.setdefault("intermediate_size", 32)
        kw.setdefault("hidden_size", 32)
        cfg = mk.make_config(model_type=model_type, extra=extra, **kw)
        if weights is None:
            weights = mk.make_weights(cfg, seed=seed)
        if edit is not None:
            edit(cfg, weights)
        return d, cfg, mk.write_checkpoint(d, cfg, weights)

    def logits(self, d, router="family", tokens=TOKENS):
        cfg, w = ref.load_checkpoint(d)
        return ref.Model(cfg, w, moe_router=router).logits(tokens)

    def assertClose(self, a, b, tol=1e-9):
        self.assertEqual(np.shape(a), np.shape(b))
        self.assertLess(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))), tol)

    def assertFar(self, a, b, gap=1e-4):
        self.assertGreater(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))), gap)


def _all_experts_like_first(cfg, w):
    """Every expert of every sparse layer made a copy of expert 0 (router rows stay distinct)."""
    for name in list(w):
        parts = name.split(".")
        if "experts" in parts:
            j = parts.index("experts") + 1
            w[name] = w[".".join(parts[:j] + ["0"] + parts[j + 1:])].copy()


def _dense_from_expert0(moe_w, family):
    """The weights of a dense model whose MLP is expert 0 of each layer (attention copied)."""
    out = {}
    for name, t in moe_w.items():
        parts = name.split(".")
        if "experts" in parts:
            j = parts.index("experts")
            if parts[j + 1] == "0":
                nm = {"w1": "gate_proj", "w3": "up_proj", "w2": "down_proj"}.get(parts[j + 2], parts[j + 2])
                out[".".join(parts[:3] + ["mlp", nm, "weight"])] = t
        elif not (name.endswith(".gate.weight") or "shared_expert" in name):
            out[name] = t
    return out


class LayerTest(Base):
    def test_route_ties_go_to_the_lower_index(self):
        logits = np.array([[1.0, 3.0, 3.0, 3.0, 0.0]])
        idx, w = hf_moe.route(logits, 2, False)
        self.assertEqual(idx.tolist(), [[1, 2]])
        p3 = math.exp(3.0) / (math.exp(1.0) + 3 * math.exp(3.0) + 1.0)
        self.assertAlmostEqual(w[0, 0], p3, places=15)
        idx, w = hf_moe.route(logits, 1, True)
        self.assertEqual(idx.tolist(), [[1]])
        self.assertEqual(w.tolist(), [[1.0]])
        idx, w = hf_moe.route(np.array([[2.0, 5.0, 4.0, 5.0]]), 3, True)
        self.assertEqual(idx.tolist(), [[1, 3, 2]])
        self.assertAlmostEqual(float(w.sum()), 1.0, places=15)

    def test_identical_router_rows_tie_exactly(self):
        rng = np.random.default_rng(3)
        gate = rng.standard_normal((6, 40))
        gate[4] = gate[1]
        logits = hf_moe.router_logits(rng.standard_normal((9, 40)), gate)
        self.assertTrue(np.array_equal(logits[:, 1], logits[:, 4]))

    def test_tie_by_hand(self):
        # Experts 1, 2 and 3 share a router row that beats expert 0's on every token.
        rng = np.random.default_rng(5)
        E, F = 16, 8
        h = np.abs(rng.standard_normal((4, E))) + 0.1
        router = np.zeros((4, E))
        router[1:] = 2.0 / E
        block = {"router": router, "gate": rng.standard_normal((4, F, E)), "up": rng.standard_normal((4, F, E)),
                 "down": rng.standard_normal((4, E, F))}

        def f(j):
            return (hf_moe._silu(h @ block["gate"][j].T) * (h @ block["up"][j].T)) @ block["down"][j].T

        spec = hf_moe.MoeSpec({"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2,
                               "intermediate_size": F}, 1)
        self.assertClose(spec.forward(block, h), 0.5 * f(1) + 0.5 * f(2), 1e-12)
        spec.top_k = 1
        self.assertClose(spec.forward(block, h), f(1), 1e-12)
        self.assertFar(f(1), f(2))

    def test_block_agrees_with_per_token_loops(self):
        rng = np.random.default_rng(11)
        for mt, extra in (("mixtral", None), ("qwen2_moe", None), ("qwen3_moe", {"norm_topk_prob": True}),
                          ("qwen3_moe", {"norm_topk_prob": False, "num_experts_per_tok": 3}), ("olmoe", None)):
            with self.subTest(mt=mt, extra=extra):
                d, cfg, w = self.ckpt(mt, extra=extra, num_hidden_layers=1)
                model = ref.Model(*ref.load_checkpoint(d))
                h = rng.standard_normal((7, cfg["hidden_size"]))
                got = model._mlp(model.layers[0], h)
                router, experts, shared = layer_experts(cfg, w, "model.layers.0.")
                renorm = mt == "mixtral" or cfg["norm_topk_prob"]
                want = np.array([moe_token(x, router, experts, cfg["num_experts_per_tok"], renorm, shared)
                                 for x in h])
                self.assertClose(got, want)
                self.assertEqual(shared is not None, mt == "qwen2_moe")


class ModelTest(Base):
    def test_full_model_agrees_with_incremental(self):
        cases = (
            ("mixtral", None, {"sliding_window": 3}),
            ("mixtral", {"num_local_experts": 5, "num_experts_per_tok": 3}, {}),
            ("qwen2_moe", {"decoder_sparse_step": 2}, {"num_hidden_layers": 3}),
            ("qwen3_moe", None, {"tie_word_embeddings": True}),
            ("qwen3_moe", {"norm_topk_prob": False}, {}),
            ("olmoe", {"clip_qkv": 0.8}, {"attention_bias": True}),
            ("olmoe", {"norm_topk_prob": True}, {"num_key_value_heads": 4}),
        )
        for mt, extra, kw in cases:
            with self.subTest(mt=mt, extra=extra, kw=kw):
                d, cfg, w = self.ckpt(mt, extra=extra, **kw)
                self.assertClose(self.logits(d), incremental_moe_logits(cfg, w, TOKENS))
                if mt == "mixtral":
                    self.assertClose(self.logits(d, "naive"), incremental_moe_logits(cfg, w, TOKENS, "naive"))

    def test_mixtral_with_identical_experts_is_mistral(self):
        # Renormalised top-k weights sum to 1, so k copies of one MLP are that MLP.
        seen = []
        for window in (None, 3):  # mixtral's window applies to every layer, as mistral's
            d, cfg, w = self.ckpt("mixtral", edit=_all_experts_like_first, sliding_window=window)
            dd, _, _ = self.ckpt("mistral", weights=_dense_from_expert0(w, "mixtral"), sliding_window=window,
                                 rms_norm_eps=cfg["rms_norm_eps"], rope_theta=cfg["rope_theta"])
            seen.append(self.logits(d))
            self.assertClose(seen[-1], self.logits(dd))
            self.assertFar(self.logits(d, "naive"), self.logits(dd))
        self.assertFar(seen[0], seen[1])

    def test_qwen3_moe_with_identical_experts_is_qwen3(self):
        d, cfg, w = self.ckpt("qwen3_moe", edit=_all_experts_like_first, intermediate_size=32)
        dd, _, _ = self.ckpt("qwen3", weights=_dense_from_expert0(w, "qwen3_moe"))
        self.assertClose(self.logits(d), self.logits(dd))
        d2, _, _ = self.ckpt("qwen3_moe", extra={"norm_topk_prob": False}, weights=w)
        self.assertFar(self.logits(d2), self.logits(dd))

    def test_qwen2_moe_shared_expert_and_sigmoid_gate(self):
        # Experts and shared expert all equal f, gate 0: f + sigmoid(0) * f = 1.5 f.
        def edit(cfg, w):
            for i in range(cfg["num_hidden_layers"]):  # on a 2^-10 grid, 1.5 * down stays exact in float32
                name = "model.layers.%d.mlp.experts.0.down_proj.weight" % i
                w[name] = np.round(w[name] * 1024.0) / 1024.0
            _all_experts_like_first(cfg, w)
            for i in range(cfg["num_hidden_layers"]):
                p = "model.layers.%d.mlp." % i
                for n in ("gate_proj", "up_proj", "down_proj"):
                    w[p + "shared_expert.%s.weight" % n] = w[p + "experts.0.%s.weight" % n].copy()
                w[p + "shared_expert_gate.weight"] = np.zeros_like(w[p + "shared_expert_gate.weight"])

        d, cfg, w = self.ckpt("qwen2_moe", extra={"norm_topk_prob": True, "shared_expert_intermediate_size": 32},
                              edit=edit)
        dense = _dense_from_expert0(w, "qwen2_moe")
        for name in list(dense):
            if name.endswith("mlp.down_proj.weight"):
                dense[name] = 1.5 * dense[name]
        dd, _, _ = self.ckpt("qwen2", weights=dense)
        self.assertClose(self.logits(d), self.logits(dd))

    def test_qwen_sparse_and_dense_layers(self):
        # decoder_sparse_step 2 over 4 layers: layers 1 and 3; mlp_only_layers [3] leaves layer 1.
        d, cfg, w = self.ckpt("qwen2_moe", extra={"decoder_sparse_step": 2, "mlp_only_layers": [3]},
                              num_hidden_layers=4)
        self.assertIn("model.layers.1.mlp.experts.3.down_proj.weight", w)
        for i in (0, 2, 3):
            self.assertIn("model.layers.%d.mlp.down_proj.weight" % i, w)
        model = ref.Model(*ref.load_checkpoint(d))
        self.assertEqual(["moe" in L for L in model.layers], [False, True, False, False])
        self.assertEqual(model.layers[0]["down"].shape, (32, 32))  # intermediate_size, not moe_intermediate_size
        # Every layer dense: exactly qwen2 / qwen3 on the same weights.
        for mt, dense in (("qwen2_moe", "qwen2"), ("qwen3_moe", "qwen3")):
            for extra in ({"mlp_only_layers": [0, 1]}, {"num_experts": 0}):
                d, cfg, w = self.ckpt(mt, extra=extra)
                dd, _, _ = self.ckpt(dense, weights=w)
                self.assertTrue(np.array_equal(self.logits(d), self.logits(dd)))

    def test_norm_topk_prob_and_naive_router(self):
        for mt in ("qwen3_moe", "olmoe", "qwen2_moe"):
            d1, _, w = self.ckpt(mt, extra={"norm_topk_prob": True})
            d0, _, _ = self.ckpt(mt, extra={"norm_topk_prob": False}, weights=w)
            self.assertFar(self.logits(d1), self.logits(d0))
            # naive = the top-k probabilities as they are = norm_topk_prob false
            self.assertTrue(np.array_equal(self.logits(d1, "naive"), self.logits(d0)))
            self.assertTrue(np.array_equal(self.logits(d0, "naive"), self.logits(d0)))
        d, _, w = self.ckpt("mixtral")
        self.assertFar(self.logits(d, "naive"), self.logits(d))
        # top-k over every expert: renormalising a whole softmax changes nothing
        d, _, _ = self.ckpt("mixtral", extra={"num_experts_per_tok": 4})
        self.assertClose(self.logits(d, "naive"), self.logits(d), 1e-12)

    def test_tie_in_a_model(self):
        # top-1 mixtral whose experts 1 and 2 share a router row: expert 2 is never used.
        def edit(cfg, w):
            for i in range(cfg["num_hidden_layers"]):
                g = w["model.layers.%d.block_sparse_moe.gate.weight" % i]
                g[1] *= 4.0
                g[2] = g[1]

        def changed(n):
            def f(cfg, w):
                edit(cfg, w)
                for key in ("w1", "w2", "w3"):
                    name = "model.layers.0.block_sparse_moe.experts.%d.%s.weight" % (n, key)
                    w[name] = -w[name]
            return f

        extra = {"num_experts_per_tok": 1}
        d, _, w = self.ckpt("mixtral", extra=extra, edit=edit)
        d2, _, _ = self.ckpt("mixtral", extra=extra, edit=changed(2))
        d1, _, _ = self.ckpt("mixtral", extra=extra, edit=changed(1))
        self.assertTrue(np.array_equal(self.logits(d), self.logits(d2)))
        self.assertFar(self.logits(d), self.logits(d1))

    def test_olmoe_norms_the_whole_projection(self):
        # One head: the whole projection is the head, so olmoe is qwen3_moe with the same weights.
        extra = {"norm_topk_prob": False}
        d, cfg, w = self.ckpt("olmoe", extra=extra, num_attention_heads=1, num_key_value_heads=1,
                              rms_norm_eps=1e-5)
        q3 = {"moe_intermediate_size": 32, "norm_topk_prob": False, "num_experts": 4}
        dq, _, _ = self.ckpt("qwen3_moe", extra=q3, weights=w, num_attention_heads=1, num_key_value_heads=1,
                             rms_norm_eps=1e-5)
        self.assertClose(self.logits(d), self.logits(dq))
        # Four heads: the same per-head weights tiled over the projection no longer agree.
        d, cfg, w = self.ckpt("olmoe", extra=extra, num_attention_heads=4, num_key_value_heads=2)
        wq = dict(w)
        for i in range(cfg["num_hidden_layers"]):
            for n, heads in (("q_norm", 4), ("k_norm", 2)):
                name = "model.layers.%d.self_attn.%s.weight" % (i, n)
                wq[name] = w[name][:8].copy()
                w[name] = np.tile(wq[name], heads)
        d, _, _ = self.ckpt("olmoe", extra=extra, weights=w, num_attention_heads=4, num_key_value_heads=2)
        dq, _, _ = self.ckpt("qwen3_moe", extra=q3, weights=wq, num_attention_heads=4, num_key_value_heads=2,
                             rms_norm_eps=cfg["rms_norm_eps"])
        self.assertFar(self.logits(d), self.logits(dq))

    def test_olmoe_clip_qkv_after_the_norms(self):
        d, _, w = self.ckpt("olmoe")
        d_big, _, _ = self.ckpt("olmoe", extra={"clip_qkv": 1e9}, weights=w)
        d_small, _, _ = self.ckpt("olmoe", extra={"clip_qkv": 0.5}, weights=w)
        self.assertTrue(np.array_equal(self.logits(d), self.logits(d_big)))
        self.assertFar(self.logits(d), self.logits(d_small))
        # By hand on one row: q and k normed over the whole projection, then q, k, v clipped.
        spec = hf_moe.MoeSpec({"model_type": "olmoe", "num_experts": 4, "num_experts_per_tok": 2,
                               "intermediate_size": 8, "clip_qkv": 0.5, "rms_norm_eps": 1e-5}, 1)
        q, k, v = np.array([[3.0, -1.0, 0.25, 2.0]]), np.array([[0.1, -0.4]]), np.array([[0.7, -0.2]])
        L = {"q_norm_full": np.array([1.0, 0.5, 2.0, 0.1]), "k_norm_full": np.array([2.0, 1.0])}
        rq = math.sqrt((9.0 + 1.0 + 0.0625 + 4.0) / 4 + 1e-5)
        rk = math.sqrt((0.01 + 0.16) / 2 + 1e-5)
        want_q = [min(max(a * b / rq, -0.5), 0.5) for a, b in zip([3.0, -1.0, 0.25, 2.0], [1.0, 0.5, 2.0, 0.1])]
        want_k = [min(max(a * b / rk, -0.5), 0.5) for a, b in zip([0.1, -0.4], [2.0, 1.0])]
        got = spec.before_heads(L, q, k, v)
        self.assertClose(got[0][0], want_q, 1e-15)
        self.assertClose(got[1][0], want_k, 1e-15)
        self.assertClose(got[2][0], [0.5, -0.2], 1e-15)
        self.assertEqual(want_q[0], 0.5)
        self.assertAlmostEqual(want_q[3], 2.0 * 0.1 / rq, places=15)  # under the clip: kept

    def test_unsupported(self):
        d, _, _ = self.ckpt("qwen3_moe", use_sliding_window=True, sliding_window=4)
        with self.assertRaisesRegex(ref.UnsupportedError, "use_sliding_window"):
            self.logits(d)
        d, _, _ = self.ckpt("olmoe", head_dim=16)
        with self.assertRaisesRegex(ref.UnsupportedError, "olmoe needs head_dim"):
            self.logits(d)
        w = mk.make_weights(mk.make_config(model_type="mixtral", hidden_size=32, intermediate_size=32))
        del w["model.layers.1.block_sparse_moe.experts.2.w3.weight"]
        d, _, _ = self.ckpt("mixtral", weights=w)
        with self.assertRaisesRegex(ref.UnsupportedError, r"layers\.1\.block_sparse_moe\.experts\.2\.w3"):
            self.logits(d)


class QuantizeAndCliTest(Base):
    def test_quantize_keeps_routers_float(self):
        for mt in MOE:
            _, _, w = self.ckpt(mt)
            q = ref.quantize_weights(w, "int8", 32)
            routers = [n for n in w if hf_moe.is_router_weight(n)]
            self.assertEqual(len(routers), 2)
            for n in w:
                if w[n].ndim != 2:
                    continue
                if n in routers:
                    self.assertTrue(np.array_equal(q[n], w[n]), n)
                else:
                    self.assertFalse(np.array_equal(q[n], w[n]), n)
            if mt == "qwen2_moe":
                self.assertFalse(np.array_equal(q["model.layers.0.mlp.shared_expert_gate.weight"],
                                                w["model.layers.0.mlp.shared_expert_gate.weight"]))

    def run_cli(self, d, *extra):
        out = os.path.join(self.tmp, "out%d.json" % self._n)
        self._n += 1
        proc = subprocess.run([PYTHON, SCRIPT, d, "--out", out] + list(extra),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        result = None
        if proc.returncode == 0:
            with open(out, "r", encoding="utf-8") as f:
                result = json.load(f)
        return proc, result

    def test_cli_each_family(self):
        for mt in MOE:
            d, cfg, w = self.ckpt(mt)
            proc, res = self.run_cli(d, "--tokens", "1,2,3,4", "--steps", "2")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(res["model_type"], mt)
            self.assertEqual(np.shape(res["prompt_logits"]), (4, cfg["vocab_size"]))
            self.assertEqual(len(res["greedy_tokens"]), 2)
            self.assertEqual(res["greedy_tokens"][0], int(np.argmax(res["prompt_logits"][-1])))
            self.assertClose(res["prompt_logits"], incremental_moe_logits(cfg, w, [1, 2, 3, 4]))

    def test_cli_router_and_quantize(self):
        d, cfg, w = self.ckpt("mixtral")
        _, fam = self.run_cli(d, "--tokens", "5,6,7")
        _, naive = self.run_cli(d, "--tokens", "5,6,7", "--moe-router", "naive")
        self.assertClose(naive["prompt_logits"], incremental_moe_logits(cfg, w, [5, 6, 7], "naive"))
        self.assertFar(naive["prompt_logits"], fam["prompt_logits"])
        proc, q = self.run_cli(d, "--tokens", "5,6,7", "--quantize", "int8")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        kept = {n: (ref.quantize_dequantize(t, "int8", 32) if t.ndim == 2 and ".gate." not in n else t)
                for n, t in w.items()}
        everything = ref.quantize_weights({n: t for n, t in w.items()}, "int8", 32)
        for n in everything:
            if ".gate." in n:
                everything[n] = ref.quantize_dequantize(w[n], "int8", 32)
        self.assertClose(q["prompt_logits"], ref.Model(cfg, kept).logits([5, 6, 7]), 1e-12)
        self.assertFar(q["prompt_logits"], ref.Model(cfg, everything).logits([5, 6, 7]), 1e-9)
        proc, _ = self.run_cli(d, "--tokens", "5", "--moe-router", "sometimes")
        self.assertEqual(proc.returncode, 2)

    def test_cli_refuses_qwen_sliding_window(self):
        d, _, _ = self.ckpt("qwen2_moe", use_sliding_window=True, sliding_window=4)
        proc, _ = self.run_cli(d, "--tokens", "1,2")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("use_sliding_window", proc.stderr)


if __name__ == "__main__":
    unittest.main()
