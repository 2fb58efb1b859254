"""Two runners in two Python threads: the model computes without the GIL, the tokens do not change."""

import threading

import pytest

import hfstatic

PROMPTS = ["In the beginning", "And it came to pass"]


def generate_tokens(runner, prompt):
    runner.generate(prompt, max_tokens=48, temperature=0.7, top_k=40, seed=5)
    return runner.last.tokens


def test_two_runners_in_two_threads_give_the_tokens_of_one_after_the_other():
    runners = [hfstatic.Runner(threads=1), hfstatic.Runner(threads=1)]
    sequential = [generate_tokens(r, p) for r, p in zip(runners, PROMPTS)]
    for r in runners:
        r.reset()
    results = [None, None]
    start = threading.Barrier(2)

    def work(i):
        start.wait()
        results[i] = generate_tokens(runners[i], PROMPTS[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == sequential


def test_the_gil_is_released_while_the_model_computes():
    runner = hfstatic.Runner(threads=1)
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(1)
            done.wait(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        runner.generate("And", max_tokens=200, ignore_eos=True)
    finally:
        done.set()
        ticker.join()
    assert len(ticks) > 10


def test_a_runner_busy_in_another_thread_refuses_a_second_call():
    runner = hfstatic.Runner(threads=1)
    stream = runner.stream("And it came to pass", max_tokens=300, ignore_eos=True)
    next(stream)
    with pytest.raises(hfstatic.UsageError, match="busy"):
        runner.generate("And", max_tokens=1)
    stream.close()
    assert runner.last.stop_reason == "stopped"
