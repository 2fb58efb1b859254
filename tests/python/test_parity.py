"""Step-level logits against the NumPy reference of the Hugging Face forward pass (tests/parity)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import hfstatic
from conftest import SOURCE_DIR

# The tolerance of the C++ parity tests for float32 caches (tests/parity/test_reference_parity.cpp).
TOLERANCE = 1e-4
PROMPT = [256, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114]  # one full prefill chunk of 8, then 3


def relative_error(got, want):
    """The largest difference relative to the reference's largest magnitude, as the C++ tests measure it."""
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    return float(np.max(np.abs(got.astype(np.float64) - want)) / max(1e-12, float(np.max(np.abs(want)))))


@pytest.fixture(scope="module")
def reference(tiny_checkpoint, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "ref.json"
    script = os.path.join(SOURCE_DIR, "tests", "reference", "hf_reference.py")
    subprocess.run([sys.executable, script, str(tiny_checkpoint), "--tokens", ",".join(map(str, PROMPT)), "--steps", "6",
                    "--out", str(out)], check=True)
    return json.loads(out.read_text())


def test_prefill_and_decode_logits_match_the_reference(tiny_program, reference):
    runner = hfstatic.Runner(tiny_program)
    logits = runner.prefill(PROMPT)
    assert logits.dtype == np.float32 and logits.shape == (runner.model["vocab_size"],)
    assert relative_error(logits, reference["prompt_logits"][-1]) <= TOLERANCE
    for step, want in enumerate(reference["greedy_logits"]):
        if step > 0:
            logits = runner.decode(reference["greedy_tokens"][step - 1])
        assert relative_error(logits, want) <= TOLERANCE, "greedy step %d" % step
        assert int(np.argmax(logits)) == reference["greedy_tokens"][step]
    assert runner.position == len(PROMPT) + len(reference["greedy_logits"]) - 1


def test_logits_are_a_read_only_view_of_the_runners_buffer(tiny_program):
    runner = hfstatic.Runner(tiny_program)
    first = runner.decode(1)
    second = runner.decode(2)
    assert not first.flags.owndata and not first.flags.writeable
    # Both views read the decode method's one logits buffer: the first now shows the second step.
    assert first.__array_interface__["data"][0] == second.__array_interface__["data"][0]
    assert np.array_equal(first, second)
    with pytest.raises(ValueError):
        first[0] = 0
    del runner
    assert np.isfinite(second).all()  # the view keeps the runner alive


def test_prefill_continues_after_a_generation():
    runner = hfstatic.Runner()
    text = runner.generate("In the beginning", max_tokens=5)
    ids = runner.tokenizer.encode(" God")
    pending = runner.context[-1]
    runner.prefill(ids)
    assert runner.position == len(runner.context) and runner.context[-len(ids) - 1] == pending
    assert text


def test_a_gemma3_v2_program_past_its_window_matches_the_reference(tmp_path):
    # tiny-gemma3 has a window of 6: its two local layers see less than the 11-token prompt.
    checkpoint = tmp_path / "gemma3"
    hfstatic.make_checkpoint(checkpoint, preset="tiny-gemma3", seed=7)
    path = tmp_path / "gemma3.hfs"
    hfstatic.export(checkpoint, path, prefill_len=8, max_context=64)
    program = hfstatic.Program(path)
    assert program.metadata["version"] == 2 and program.metadata["layer_types"] == ["local", "local", "global"]
    assert hfstatic.validate(path) == [] and "hf_static v2 program" in program.describe()
    out = tmp_path / "ref.json"
    script = os.path.join(SOURCE_DIR, "tests", "reference", "hf_reference.py")
    subprocess.run([sys.executable, script, str(checkpoint), "--tokens", ",".join(map(str, PROMPT)), "--steps", "4",
                    "--out", str(out)], check=True)
    reference = json.loads(out.read_text())
    runner = hfstatic.Runner(path)
    logits = runner.prefill(PROMPT)
    for step, want in enumerate(reference["greedy_logits"]):
        if step > 0:
            logits = runner.decode(reference["greedy_tokens"][step - 1])
        assert relative_error(logits, want) <= TOLERANCE, "greedy step %d" % step
