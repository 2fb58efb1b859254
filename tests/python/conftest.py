"""Fixtures of the Python module's tests: the tool, a tiny exported program, program surgery."""

import json
import os
import struct
import subprocess
import sys

import pytest

import hfstatic

SOURCE_DIR = os.environ.get("HFSTATIC_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("HFSTATIC_CLI", os.path.join(SOURCE_DIR, "build", "hfstatic"))


def run_cli(*args, check=True, input=None):
    """Runs the hfstatic tool; returns its CompletedProcess (text mode)."""
    done = subprocess.run([CLI, *args], capture_output=True, text=True, input=input)
    if check and done.returncode != 0:
        raise AssertionError("hfstatic %s failed (%d): %s" % (" ".join(args), done.returncode, done.stderr))
    return done


def cli_generated_text(prompt, *args):
    """The text `hfstatic run -p PROMPT ARGS` generates (its output less the echoed prompt and newline)."""
    out = run_cli("run", "-p", prompt, *args).stdout
    assert out.startswith(prompt) and out.endswith("\n"), out
    return out[len(prompt):-1]


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """The `tiny` preset, seed 7, as a Hugging Face checkpoint folder."""
    folder = tmp_path_factory.mktemp("tiny") / "ckpt"
    hfstatic.make_checkpoint(folder, preset="tiny", seed=7)
    return folder


@pytest.fixture(scope="session")
def tiny_program(tiny_checkpoint, tmp_path_factory):
    """The tiny checkpoint exported as the parity tests export it (prefill 8, context 64)."""
    path = tmp_path_factory.mktemp("program") / "tiny.hfs"
    hfstatic.export(tiny_checkpoint, path, prefill_len=8, max_context=64, repeat_state=True)
    return path


def rewrite_program_spec(source, target, edit):
    """Copies the program `source` to `target` with edit(spec) applied to its program spec (a dict).

    The header keeps its length (padded with spaces), so the tensors stay where they were.
    """
    data = bytearray(open(source, "rb").read())
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    spec = json.loads(header["__metadata__"]["hfstatic.program"])
    edit(spec)
    header["__metadata__"]["hfstatic.program"] = json.dumps(spec, separators=(",", ":"))
    text = json.dumps(header, separators=(",", ":")).encode()
    assert len(text) <= size, "the edit must not lengthen the header"
    data[8:8 + size] = text + b" " * (size - len(text))
    open(target, "wb").write(bytes(data))
    return target


def pytest_report_header(config):
    return "hfstatic module: %s (python %s)" % (hfstatic._hfstatic.__file__, sys.version.split()[0])
