"""The example script runs from a preset checkpoint to a streamed generation."""

import os
import subprocess
import sys

from conftest import SOURCE_DIR


def test_export_and_stream_example(tmp_path):
    script = os.path.join(SOURCE_DIR, "examples", "export_and_stream.py")
    done = subprocess.run([sys.executable, script, "--preset", "tiny", "--out", str(tmp_path), "-n", "8"],
                          capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("exported %s" % (tmp_path / "tiny.hfs"))
    assert lines[1].startswith("valid: hf_static v1 program")
    assert lines[2].startswith("The capital of France is")
    assert lines[-1].startswith("8 tokens in ")
