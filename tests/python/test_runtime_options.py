"""Runner's runtime options: the tool's environment switches as arguments, the environment as
their default."""

import os
import subprocess
import sys

import numpy as np
import pytest

import hfstatic


def test_each_option_keeps_the_greedy_tokens_and_the_logits_close(tiny_program):
    plain = hfstatic.Runner(tiny_program, threads=1)
    expected_logits = plain.prefill([1, 2, 3])
    plain.reset()
    expected = plain.generate([1, 2, 3], max_tokens=12, ignore_eos=True)
    for options in ({"isa": "scalar"}, {"isa": "avx2"}, {"active_rows": False}, {"fold_ops": False},
                    {"huge_pages": False}, {"idle_prefetch": False}, {"max_buffer_mib": 64}):
        runner = hfstatic.Runner(tiny_program, threads=1, **options)
        np.testing.assert_allclose(runner.prefill([1, 2, 3]), expected_logits, rtol=1e-3, atol=1e-3)
        runner.reset()
        assert runner.generate([1, 2, 3], max_tokens=12, ignore_eos=True) == expected, options


def test_bad_options_are_usage_errors_naming_the_argument(tiny_program):
    with pytest.raises(hfstatic.UsageError, match="isa: 'avx9' is not one of scalar, avx2, avx2-vnni, avx512, avx512-vnni or avx512-vnni-512"):
        hfstatic.Runner(tiny_program, isa="avx9")
    with pytest.raises(hfstatic.UsageError, match=r"max_buffer_mib: 0 is outside \[1, 1073741824\]"):
        hfstatic.Runner(tiny_program, max_buffer_mib=0)
    with pytest.raises(TypeError):
        hfstatic.Runner(tiny_program, 1, "scalar")  # the options are keyword-only


def test_a_buffer_limit_below_the_programs_caches_is_refused(tmp_path):
    checkpoint, path = tmp_path / "wide", tmp_path / "wide.hfs"
    hfstatic.make_checkpoint(checkpoint, preset="tiny-wide")
    hfstatic.export(checkpoint, path, prefill_len=8, max_context=512)  # 2 MiB of caches
    with pytest.raises(hfstatic.Error, match="more than the 1 MiB allowed"):
        hfstatic.Runner(path, max_buffer_mib=1)
    hfstatic.Runner(path, max_buffer_mib=64)


def test_the_environment_is_the_default():
    code = "import hfstatic\ntry:\n    hfstatic.Runner()\nexcept hfstatic.UsageError as e:\n    print(e)\n"
    env = dict(os.environ, HFSTATIC_ISA="avx9")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "HFSTATIC_ISA='avx9': expected scalar, avx2, avx2-vnni, avx512, avx512-vnni or avx512-vnni-512" in out
