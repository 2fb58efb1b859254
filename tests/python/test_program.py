"""Programs, tokenizers and the export through the Python module."""

import hfstatic
import pytest
from conftest import run_cli


def test_program_metadata_methods_and_sizes(tiny_program):
    program = hfstatic.Program(tiny_program)
    meta = program.metadata
    assert meta["io_contract"] == "hf_static" and meta["version"] == 1
    assert meta["max_context"] == 64 and meta["prefill_len"] == 8
    assert program.file_size == tiny_program.stat().st_size and 0 < program.weight_bytes < program.file_size
    methods = {m["name"]: m for m in program.methods}
    prefill = methods[meta["prefill_method"]]
    tokens = prefill["inputs"][0]
    assert tokens["dtype"] == "int64" and tokens["shape"] == (1, 8)
    logits = prefill["outputs"][3 * meta["n_layers"]]
    assert logits["dtype"] == "float32" and logits["shape"][-1] == meta["vocab_size"]
    assert program.describe() in run_cli("validate", str(tiny_program)).stdout
    assert program.embedded_file("tokenizer.json").startswith(b"{")


def test_the_default_program():
    program = hfstatic.Program()
    assert program.path == "<embedded default program>"
    assert hfstatic.Program().validate() == []
    assert program.metadata["max_context"] == 512


def test_export_takes_the_tools_flags(tiny_checkpoint, tmp_path):
    ours = tmp_path / "ours.hfs"
    summary = hfstatic.export(tiny_checkpoint, ours, prefill_len=4, max_context=32, cache_dtype="float16",
                              weights_dtype="float16")
    theirs = tmp_path / "theirs.hfs"
    run_cli("export", str(tiny_checkpoint), "-o", str(theirs), "--prefill-len", "4", "--max-context", "32",
            "--cache-dtype", "float16", "--weights-dtype", "float16")
    assert ours.read_bytes() == theirs.read_bytes()
    assert summary.file_bytes == ours.stat().st_size and summary.tensors > 0
    assert hfstatic.Program(ours).metadata["cache_dtype"] == "float16"


def test_make_checkpoint_presets():
    presets = hfstatic.checkpoint_presets()
    assert "tiny" in presets and all(isinstance(d, str) for d in presets.values())


def test_tokenizer_encode_decode_and_the_tool(tiny_program):
    tokenizer = hfstatic.Tokenizer(tiny_program)
    text = "Hello, world! Ünïcödé"
    ids = tokenizer.encode(text)
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
    tool = run_cli("tokenize", "-t", str(tiny_program), input=text)
    assert [int(t) for t in tool.stdout.split()] == ids


def test_tokenizer_sources_agree(tiny_checkpoint, tiny_program):
    from_file = hfstatic.Tokenizer.from_file(tiny_checkpoint / "tokenizer.json")
    embedded = hfstatic.Tokenizer(tiny_program)
    text = "And it came to pass"
    assert from_file.encode(text) == embedded.encode(text)
    assert from_file.chat_template == embedded.chat_template
    runner = hfstatic.Runner(tiny_program)
    assert runner.tokenizer.encode(text) == embedded.encode(text)
    assert hfstatic.Tokenizer().encode(text) == hfstatic.Runner().tokenizer.encode(text)


def test_apply_chat_template(tiny_program):
    tokenizer = hfstatic.Tokenizer(tiny_program)
    messages = [{"role": "user", "content": "Hello!"}]
    prompt = tokenizer.apply_chat_template(messages)
    assert "Hello!" in prompt
    assert prompt.startswith(tokenizer.apply_chat_template(messages, add_generation_prompt=False))
    # Content parts: text joined; an image refused, naming the part.
    parts = [{"role": "user", "content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo!"}]}]
    assert tokenizer.apply_chat_template(parts) == prompt
    image = [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, {"type": "image"}]}]
    with pytest.raises(hfstatic.UsageError, match=r"messages\[0\]\.content\[1\]: an image part \('image'\)"):
        tokenizer.apply_chat_template(image)


def test_export_quantizes_as_the_tool_does(tiny_checkpoint, tmp_path):
    ours = tmp_path / "ours.hfs"
    hfstatic.export(tiny_checkpoint, ours, prefill_len=4, max_context=32, weights_dtype="int4", group_size=32)
    theirs = tmp_path / "theirs.hfs"
    run_cli("export", str(tiny_checkpoint), "-o", str(theirs), "--prefill-len", "4", "--max-context", "32",
            "--weights-dtype", "int4", "--group-size", "32")
    assert ours.read_bytes() == theirs.read_bytes()
    program = hfstatic.Program(ours)
    assert program.metadata["weights_dtype"] == "int4" and program.validate() == []
