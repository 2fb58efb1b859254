"""Speculative decoding through the module: lookup=K and draft=PATH keep the greedy text."""

import os

import pytest

import hfstatic
from conftest import SOURCE_DIR

PROMPT = "And it came to pass"


@pytest.fixture(scope="module")
def demo_program(tmp_path_factory):
    """models/demo exported to a file, so that it can be its own draft."""
    path = tmp_path_factory.mktemp("demo") / "demo.hfs"
    hfstatic.export(os.path.join(SOURCE_DIR, "models", "demo"), path, max_context=256)
    return path


def plain_text(path, prompt=PROMPT, **options):
    runner = hfstatic.Runner(path)
    text = runner.generate(prompt, max_tokens=48, **options)
    assert runner.last.stats["drafted_tokens"] == 0 and runner.last.stats["accepted_tokens"] == 0
    return text, runner.last.stats


def test_lookup_keeps_the_greedy_text(demo_program):
    plain, plain_stats = plain_text(demo_program)
    runner = hfstatic.Runner(demo_program)
    assert runner.generate(PROMPT, max_tokens=48, lookup=4) == plain
    stats = runner.last.stats
    assert stats["generated_tokens"] == plain_stats["generated_tokens"] == 48
    assert stats["drafted_tokens"] >= stats["accepted_tokens"] > 0
    assert stats["steps"] < plain_stats["steps"]


def test_lookup_off_is_plain_decoding(demo_program):
    runner = hfstatic.Runner(demo_program)
    for off in (0, None):
        runner.reset()
        runner.generate(PROMPT, max_tokens=16, lookup=off)
        assert runner.last.stats["drafted_tokens"] == 0


def test_the_program_as_its_own_draft_keeps_the_greedy_text(demo_program):
    plain, plain_stats = plain_text(demo_program)
    runner = hfstatic.Runner(demo_program)
    assert runner.generate(PROMPT, max_tokens=48, draft=demo_program, draft_max=4) == plain
    stats = runner.last.stats
    assert stats["accepted_tokens"] > 0
    assert stats["steps"] < plain_stats["steps"]
    # The draft program stays loaded: a second generation with it gives the same text again.
    runner.reset()
    assert runner.generate(PROMPT, max_tokens=48, draft=str(demo_program)) == plain
    assert runner.last.stats["accepted_tokens"] > 0


def test_stream_and_chat_take_the_speculative_options(demo_program):
    runner = hfstatic.Runner(demo_program)
    plain = runner.generate(PROMPT, max_tokens=32)
    runner.reset()
    assert "".join(runner.stream(PROMPT, max_tokens=32, draft=demo_program)) == plain
    assert runner.last.stats["accepted_tokens"] > 0
    runner.reset()
    assert "".join(runner.stream(PROMPT, max_tokens=32, lookup=3)) == plain


def test_sampled_generation_with_a_draft_is_reproducible(demo_program):
    runner = hfstatic.Runner(demo_program)
    first = runner.generate(PROMPT, max_tokens=24, temperature=0.8, seed=5, draft=demo_program)
    runner.reset()
    assert runner.generate(PROMPT, max_tokens=24, temperature=0.8, seed=5, draft=demo_program) == first


def test_lookup_with_draft_is_a_usage_error(demo_program):
    runner = hfstatic.Runner(demo_program)
    with pytest.raises(hfstatic.UsageError, match="only one of lookup and draft"):
        runner.generate(PROMPT, max_tokens=4, lookup=4, draft=demo_program)
    with pytest.raises(hfstatic.UsageError, match="draft_max"):
        runner.generate(PROMPT, max_tokens=4, draft_max=4)
    with pytest.raises(hfstatic.UsageError, match="lookup"):
        runner.generate(PROMPT, max_tokens=4, lookup=65)
    with pytest.raises(hfstatic.UsageError, match="draft_max"):
        runner.generate(PROMPT, max_tokens=4, draft=demo_program, draft_max=0)
    with pytest.raises(hfstatic.UsageError, match="only one of lookup and draft"):
        list(runner.stream(PROMPT, max_tokens=4, lookup=2, draft=demo_program))
    assert runner.position == 0  # nothing ran


def test_a_draft_of_another_vocabulary_names_both_programs(demo_program, tiny_program):
    runner = hfstatic.Runner(demo_program)
    with pytest.raises(hfstatic.UsageError) as refused:
        runner.generate(PROMPT, max_tokens=4, draft=tiny_program)
    assert str(demo_program) in str(refused.value) and str(tiny_program) in str(refused.value)
    # The runner is usable afterwards, with a draft that fits.
    plain, _ = plain_text(demo_program)
    runner.reset()
    assert runner.generate(PROMPT, max_tokens=48, draft=demo_program) == plain


def test_a_missing_draft_program_is_a_format_error(demo_program, tmp_path):
    runner = hfstatic.Runner(demo_program)
    with pytest.raises(hfstatic.FormatError):
        runner.generate(PROMPT, max_tokens=4, draft=tmp_path / "missing.hfs")
