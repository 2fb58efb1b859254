"""Self-checks of the reference's rope types and weight quantization (run with /usr/bin/python3 -m unittest)."""

import math
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hf_reference as ref  # noqa: E402
from test_hf_reference import PHI3_LONGROPE, Base, _rotate  # noqa: E402


class RopeTypesTest(Base):
    def test_partial_rotary_rotates_the_leading_values(self):
        x = np.arange(2 * 3 * 8, dtype=np.float64).reshape(2, 3, 8) / 10.0
        inv, _ = ref.rope_parameters(4, 100.0)
        cos, sin = ref.rope_cos_sin(np.arange(3), inv, 1.5)
        got = ref.apply_rope(x, cos, sin)
        for h in range(2):
            for t in range(3):
                np.testing.assert_allclose(got[h, t], _rotate(x[h, t], t, [1.0, 0.1], 1.5), rtol=0, atol=1e-14)
                np.testing.assert_array_equal(got[h, t, 4:], x[h, t, 4:])

    def test_linear_and_dynamic(self):
        base, one = ref.rope_parameters(16, 10000.0)
        self.assertEqual(one, 1.0)
        lin, f = ref.rope_parameters(16, 10000.0, {"type": "linear", "factor": 4.0})
        np.testing.assert_allclose(lin, base / 4.0, rtol=1e-15)
        self.assertEqual(f, 1.0)
        dyn = {"rope_type": "dynamic", "factor": 2.0}
        cfg = {"max_position_embeddings": 100}
        for T in (1, 100):
            np.testing.assert_array_equal(ref.rope_parameters(16, 10000.0, dyn, cfg, seq_len=T)[0], base)
        # seq_len 200 = 2 * 100: base * (2 * 2 - 1) ^ (16 / 14).
        grown = 10000.0 * 3.0 ** (16.0 / 14.0)
        want = np.array([grown ** (-(2.0 * i) / 16) for i in range(8)])
        np.testing.assert_allclose(ref.rope_parameters(16, 10000.0, dyn, cfg, seq_len=200)[0], want, rtol=1e-13)

    def test_yarn(self):
        D, theta = 16, 10000.0
        sc = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "beta_fast": 32,
              "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 0.5}
        inv, factor = ref.rope_parameters(D, theta, sc, {"max_position_embeddings": 512})
        # (1 + 0.1 ln 4) / (1 + 0.05 ln 4)
        self.assertAlmostEqual(factor, (1 + 0.1 * math.log(4)) / (1 + 0.05 * math.log(4)), places=15)
        # Correction range by hand: dims floor(-0.99) -> 0 to ceil(2.016) = 3; the ramp is i / 3.
        self.assertLess(16 * math.log(64 / (32 * 2 * math.pi)) / (2 * math.log(theta)), 0)
        self.assertAlmostEqual(16 * math.log(64 / (2 * math.pi)) / (2 * math.log(theta)), 2.016, places=4)
        for i in range(8):
            f = theta ** (-(2.0 * i) / D)
            ramp = min(i / 3.0, 1.0)
            self.assertAlmostEqual(inv[i] / (f / 4.0 * ramp + f * (1 - ramp)), 1.0, places=13)
        # Without mscale: 0.1 ln 4 + 1; an explicit attention_factor wins.
        self.assertAlmostEqual(ref.rope_parameters(D, theta, {"rope_type": "yarn", "factor": 4.0})[1],
                               0.1 * math.log(4) + 1, places=15)
        self.assertEqual(ref.rope_parameters(D, theta, dict(sc, attention_factor=0.7))[1], 0.7)

    def test_longrope(self):
        cfg = {"model_type": "phi3", "max_position_embeddings": 64, "original_max_position_embeddings": 8}
        base = np.array([10000.0 ** (-(2.0 * i) / 12) for i in range(6)])
        for T, key in ((1, "short_factor"), (8, "short_factor"), (9, "long_factor")):
            inv, factor = ref.rope_parameters(12, 10000.0, PHI3_LONGROPE, cfg, seq_len=T)
            np.testing.assert_allclose(inv, base / np.array(PHI3_LONGROPE[key]), rtol=1e-14, err_msg=key)
            self.assertAlmostEqual(factor, math.sqrt(2.0), places=15)  # sqrt(1 + ln(64/8) / ln 8)
        su = dict(PHI3_LONGROPE, type="su")
        np.testing.assert_array_equal(ref.rope_parameters(12, 10000.0, su, cfg, seq_len=4)[0],
                                      ref.rope_parameters(12, 10000.0, PHI3_LONGROPE, cfg, seq_len=4)[0])
        given = dict(PHI3_LONGROPE, attention_factor=1.1)
        self.assertEqual(ref.rope_parameters(12, 10000.0, given, cfg, seq_len=4)[1], 1.1)
        with self.assertRaises(ref.UnsupportedError):
            ref.rope_parameters(16, 10000.0, PHI3_LONGROPE, cfg, seq_len=4)  # 8 frequencies, 6 factors


class QuantizeTest(unittest.TestCase):
    def test_int8_scale_one_rounds_half_to_even(self):
        # max|x| = 127: scale 1 exactly, so the values are rint(x).
        x = np.zeros((1, 32))
        x[0, :6] = [127, -127, 2.5, 3.5, -2.5, 0.4]
        got = ref.quantize_dequantize(x, "int8", 32)
        np.testing.assert_array_equal(got[0, :6], [127, -127, 2, 4, -2, 0])

    def test_int4_uses_the_float16_rounded_scale(self):
        # scale float16(1 / 7) = 0.142822265625; 0.5 / scale = 3.5009 -> 4.
        x = np.zeros((1, 32))
        x[0, :2] = [1.0, 0.5]
        got = ref.quantize_dequantize(x, "int4", 32)
        self.assertEqual(got[0, 0], 7 * 0.142822265625)
        self.assertEqual(got[0, 1], 4 * 0.142822265625)

    def test_groups_have_their_own_scales_and_zero_groups_stay_zero(self):
        x = np.zeros((2, 64))
        x[0, 0], x[0, 32] = 7.0, 70.0
        got = ref.quantize_dequantize(x, "int4", 32)
        self.assertEqual(got[0, 0], 7.0)
        self.assertEqual(got[0, 32], 70.0)
        np.testing.assert_array_equal(got[1], 0)
        with self.assertRaises(ref.UnsupportedError):
            ref.quantize_dequantize(np.zeros((1, 48)), "int8", 32)


if __name__ == "__main__":
    unittest.main()
