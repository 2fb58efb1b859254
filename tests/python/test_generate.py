"""Generation through the Python module matches the tool, and repeats itself after reset()."""

import hfstatic
from conftest import cli_generated_text


def test_greedy_text_of_the_default_program_equals_the_tools():
    runner = hfstatic.Runner()
    assert runner.generate("In the beginning", max_tokens=40) == cli_generated_text("In the beginning", "-n", "40")


def test_sampled_text_equals_the_tools():
    runner = hfstatic.Runner()
    text = runner.generate("And it came to pass", max_tokens=30, temperature=0.8, top_k=40, top_p=0.9, seed=3)
    assert text == cli_generated_text("And it came to pass", "-n", "30", "--temp", "0.8", "--top-k", "40", "--top-p", "0.9",
                                      "--seed", "3")


def test_greedy_text_of_an_exported_program_equals_the_tools(tiny_program):
    runner = hfstatic.Runner(tiny_program)
    assert runner.generate("Hello, world", max_tokens=20) == cli_generated_text("Hello, world", "-m", str(tiny_program), "-n", "20")


def test_generate_reset_generate_is_identical():
    runner = hfstatic.Runner()
    first = runner.generate("And God said", max_tokens=24)
    first_tokens = runner.last.tokens
    assert runner.position > 0
    runner.reset()
    assert runner.position == 0 and runner.context == []
    assert runner.generate("And God said", max_tokens=24) == first
    assert runner.last.tokens == first_tokens
    assert runner.last.stop_reason == "length" and len(first_tokens) == 24


def test_stream_joins_to_generate():
    runner = hfstatic.Runner()
    pieces = list(runner.stream("In the beginning", max_tokens=32))
    assert len(pieces) > 1
    runner.reset()
    assert "".join(pieces) == runner.generate("In the beginning", max_tokens=32)


def test_on_text_receives_what_generate_returns():
    runner = hfstatic.Runner()
    pieces = []
    text = runner.generate("And the king said", max_tokens=16, on_text=pieces.append)
    assert "".join(pieces) == text


def test_leaving_a_stream_early_stops_the_generation():
    runner = hfstatic.Runner()
    for _ in runner.stream("And it came to pass", max_tokens=200):
        break
    assert runner.last is not None and runner.last.stop_reason == "stopped"
    assert len(runner.last.tokens) < 200
    runner.generate("And", max_tokens=2)  # the runner is free again


def test_stop_strings_cut_the_text():
    runner = hfstatic.Runner()
    full = runner.generate("And it came to pass", max_tokens=40)
    word = full.split()[2]
    runner.reset()
    cut = runner.generate("And it came to pass", max_tokens=40, stop=[word])
    assert cut == full[:full.index(word)]
    assert runner.last.stop_reason == "stop_string"


def test_token_prompts_and_continuations():
    runner = hfstatic.Runner()
    ids = runner.tokenizer.encode("In the beginning")
    by_ids = runner.generate(ids, max_tokens=12)
    runner.reset()
    assert runner.generate("In the beginning", max_tokens=12) == by_ids
    before = len(runner.context)
    runner.generate(" and", max_tokens=4)
    added = len(runner.tokenizer.encode(" and", add_special_tokens=False)) + 4
    assert len(runner.context) == before + added and runner.position == before + added - 1
    runner.rewind(3)
    assert len(runner.context) == before + added - 3 and runner.position == before + added - 3


def test_chat_equals_the_tools_chat(tiny_program):
    runner = hfstatic.Runner(tiny_program)
    reply = runner.chat([{"role": "user", "content": "Hello!"}], max_tokens=12)
    out = hfstatic_chat_cli(tiny_program, "Hello!", 12)
    assert reply == out
    assert "".join(runner.chat_stream([{"role": "user", "content": "Hello!"}], max_tokens=12)) == reply


def hfstatic_chat_cli(program, prompt, n):
    from conftest import run_cli
    out = run_cli("run", "-m", str(program), "--chat", "-p", prompt, "-n", str(n)).stdout
    assert out.endswith("\n")
    return out[:-1]


def test_model_and_stats():
    runner = hfstatic.Runner(threads=1)
    model = runner.model
    assert model["max_context"] == 512 and model["vocab_size"] >= runner.tokenizer.vocab_size
    runner.generate("And", max_tokens=3)
    stats = runner.last.stats
    assert stats["generated_tokens"] == 3 and stats["load_ms"] > 0
