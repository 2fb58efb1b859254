"""Every failure is an hfstatic.Error subclass carrying the C++ message, never a crash."""

import json
import struct

import pytest

import hfstatic
from conftest import rewrite_program_spec, run_cli


def test_the_error_classes():
    for cls in (hfstatic.ContractError, hfstatic.FormatError, hfstatic.UsageError):
        assert issubclass(cls, hfstatic.Error) and cls is not hfstatic.Error
    assert issubclass(hfstatic.Error, Exception)


def test_a_missing_file_is_a_format_error(tmp_path):
    missing = tmp_path / "missing.hfs"
    for load in (hfstatic.Runner, hfstatic.Program, hfstatic.validate, hfstatic.Tokenizer):
        with pytest.raises(hfstatic.FormatError, match=str(missing)):
            load(missing)
    with pytest.raises(hfstatic.FormatError, match="tokenizer.json"):
        hfstatic.Tokenizer.from_file(tmp_path / "tokenizer.json")


def test_a_truncated_program_is_a_format_error(tiny_program, tmp_path):
    broken = tmp_path / "truncated.hfs"
    broken.write_bytes(tiny_program.read_bytes()[:1000])
    with pytest.raises(hfstatic.FormatError) as error:
        hfstatic.Runner(broken)
    assert str(broken) in str(error.value)
    cli = run_cli("run", "-m", str(broken), "-n", "1", check=False)
    assert cli.returncode == 1 and str(error.value) in cli.stderr


def without_vocab_size(spec):
    del spec["metadata"]["vocab_size"]


def test_a_program_that_breaks_the_contract_is_a_contract_error(tiny_program, tmp_path):
    broken = rewrite_program_spec(tiny_program, tmp_path / "no_vocab.hfs", without_vocab_size)
    with pytest.raises(hfstatic.ContractError, match="vocab_size"):
        hfstatic.Runner(broken)
    problems = hfstatic.validate(broken)
    assert problems and any("vocab_size" in p for p in problems)
    cli = run_cli("validate", str(broken), check=False)
    assert cli.returncode == 1
    assert cli.stderr.splitlines()[1:] == ["%s: %s" % (broken, p) for p in problems]


def unknown_op(spec):
    spec["methods"][0]["nodes"][0]["op"] = "nope"


def test_validate_reports_graph_problems_as_the_tool_does(tiny_program, tmp_path):
    assert hfstatic.validate(tiny_program) == []
    assert hfstatic.Program(tiny_program).validate() == []
    broken = rewrite_program_spec(tiny_program, tmp_path / "unknown_op.hfs", unknown_op)
    problems = hfstatic.validate(broken)
    assert len(problems) == 1 and "nope" in problems[0]
    cli = run_cli("validate", str(broken), check=False)
    assert cli.stderr.splitlines()[1:] == ["%s: %s" % (broken, p) for p in problems]
    with pytest.raises(hfstatic.FormatError, match="nope"):
        hfstatic.Runner(broken)


def test_a_prompt_past_the_context_is_a_usage_error(tiny_program):
    runner = hfstatic.Runner(tiny_program)
    with pytest.raises(hfstatic.UsageError, match="prompt does not fit: start_pos 0 \\+ 70 tokens > max_context 64"):
        runner.generate([1] * 70, max_tokens=1)
    with pytest.raises(hfstatic.UsageError, match="prompt does not fit"):
        runner.prefill([1] * 65)
    assert runner.position == 0
    runner.prefill([1] * 64)
    with pytest.raises(hfstatic.UsageError, match="max_context 64"):
        runner.decode(1)
    with pytest.raises(hfstatic.UsageError, match="max_new_tokens 100 exceeds the model's max_context 64"):
        runner.generate([1], max_tokens=100)


def test_bad_arguments_are_usage_errors(tiny_program):
    runner = hfstatic.Runner(tiny_program)
    vocab = runner.model["vocab_size"]
    with pytest.raises(hfstatic.UsageError, match="is outside the vocabulary \\[0, %d\\)" % vocab):
        runner.generate([vocab], max_tokens=1)
    with pytest.raises(hfstatic.UsageError, match="outside the vocabulary"):
        runner.decode(-1)
    with pytest.raises(hfstatic.UsageError, match="temperature: -1 is outside"):
        runner.generate("x", temperature=-1)
    with pytest.raises(hfstatic.UsageError, match="top_p: 2 is outside"):
        runner.generate("x", top_p=2)
    # The ranges of run's flags and the server's fields.
    with pytest.raises(hfstatic.UsageError, match=r"temperature: 2.5 is outside \[0, 2\]"):
        runner.generate("x", temperature=2.5)
    with pytest.raises(hfstatic.UsageError, match=r"repeat_penalty: 0.001 is outside \[0.01, 100\]"):
        runner.generate("x", repeat_penalty=0.001)
    with pytest.raises(hfstatic.UsageError, match="cannot rewind 5 tokens"):
        runner.rewind(5)
    with pytest.raises(hfstatic.UsageError, match="threads: 0 is outside"):
        hfstatic.Runner(tiny_program, threads=0)
    with pytest.raises(hfstatic.UsageError, match="messages\\[0\\]"):
        runner.chat(["hello"])
    with pytest.raises(hfstatic.UsageError, match="outside the vocabulary"):
        runner.tokenizer.decode([vocab + 10])
    with pytest.raises(TypeError):
        runner.generate(3.5)


def test_export_errors(tiny_checkpoint, tmp_path):
    with pytest.raises(hfstatic.UsageError, match="cache_dtype: 'int8' is not one of float32\\|float16"):
        hfstatic.export(tiny_checkpoint, tmp_path / "p.hfs", cache_dtype="int8")
    with pytest.raises(hfstatic.UsageError, match="max_context: 1 is outside"):
        hfstatic.export(tiny_checkpoint, tmp_path / "p.hfs", max_context=1)
    with pytest.raises(hfstatic.UsageError, match="group_size: only with weights_dtype int8 or int4"):
        hfstatic.export(tiny_checkpoint, tmp_path / "p.hfs", group_size=32)
    with pytest.raises(hfstatic.UsageError, match="group_size: 48 is not one of 32\\|64\\|128"):
        hfstatic.export(tiny_checkpoint, tmp_path / "p.hfs", weights_dtype="int8", group_size=48)
    with pytest.raises(hfstatic.FormatError, match="config.json"):
        hfstatic.export(tmp_path, tmp_path / "p.hfs")
    assert not (tmp_path / "p.hfs").exists()
    with pytest.raises(hfstatic.UsageError, match="nope"):
        hfstatic.make_checkpoint(tmp_path / "c", preset="nope")
    assert hfstatic.UsageError.__module__ == "hfstatic"


def test_an_exception_in_on_text_reaches_the_caller():
    runner = hfstatic.Runner()

    def fail(piece):
        raise KeyError("from on_text")

    with pytest.raises(KeyError, match="from on_text"):
        runner.generate("And", max_tokens=4, on_text=fail)
    runner.reset()
    assert runner.generate("And", max_tokens=4)


def with_nan(source, target, tensor, index):
    """Copies the program `source` to `target` with element `index` of `tensor` set to NaN."""
    data = bytearray(open(source, "rb").read())
    (size,) = struct.unpack("<Q", data[:8])
    entry = json.loads(data[8:8 + size])[tensor]
    at = 8 + size + entry["data_offsets"][0]
    if entry["dtype"] == "F32":
        data[at + 4 * index:at + 4 * index + 4] = struct.pack("<f", float("nan"))
    else:
        data[at + 2 * index:at + 2 * index + 2] = struct.pack("<H", 0x7E00)
    target.write_bytes(bytes(data))
    return target


def test_validate_checks_the_weights_when_asked(tiny_program, tmp_path):
    assert hfstatic.validate(tiny_program, check_weights=True) == []
    broken = with_nan(tiny_program, tmp_path / "nan.hfs", "model.norm.weight", 3)
    assert hfstatic.validate(broken) == []
    problems = hfstatic.validate(broken, check_weights=True)
    assert len(problems) == 1
    assert "tensor 'model.norm.weight'" in problems[0] and "1 NaN, the first at index 3 [3]" in problems[0]
    cli = run_cli("validate", "--check-weights", str(broken), check=False)
    assert cli.returncode == 1
    assert cli.stderr.splitlines()[1:] == ["%s: %s" % (broken, p) for p in problems]
    with pytest.raises(hfstatic.Error, match="predicting position 2\\) are NaN"):
        hfstatic.Runner(broken).generate([1, 2], max_tokens=1)
