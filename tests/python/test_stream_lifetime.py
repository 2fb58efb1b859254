"""Streams that are refused, dropped, closed, raised out of or left running at exit: the process
ends normally and the Runner serves the next call. Each case is a script in a process of its own,
so that a crash or a hang at exit fails the case instead of the suite."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import gc, sys, threading
import hfstatic
r = hfstatic.Runner(threads=1)

def reusable():
    r.reset()
    return r.generate("And God said", max_tokens=4, ignore_eos=True) == r.last.text and len(r.last.tokens) == 4
"""


def run_script(body, timeout=60):
    """Runs PRELUDE + body in a fresh interpreter; returns (exit status, stdout, stderr)."""
    script = PRELUDE + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONFAULTHANDLER="1"))
    return done.returncode, done.stdout.split(), done.stderr


def test_a_refused_stream_leaves_the_running_one_and_the_process_alone():
    status, out, err = run_script("""
        g1 = r.stream("hi", max_tokens=50, ignore_eos=True)
        next(g1)
        g2 = r.stream("yo", max_tokens=50)
        try:
            next(g2)
        except hfstatic.UsageError as e:
            print("refused", "busy" in str(e))
        for piece in g1:
            pass
        print(r.last.stop_reason, len(r.last.tokens))
        print("reusable", reusable())
        g3 = r.stream("hi", max_tokens=50, ignore_eos=True)
        next(g3)
        try:
            next(r.stream("yo", max_tokens=50))
        except hfstatic.UsageError:
            print("refused-again")
    """)
    assert (status, out) == (0, ["refused", "True", "length", "50", "reusable", "True", "refused-again"]), err


def test_the_refusal_alone_exits_cleanly():
    status, out, err = run_script("""
        g1 = r.stream("hi", max_tokens=50)
        next(g1)
        g2 = r.stream("yo", max_tokens=50)
        try:
            next(g2)
        except hfstatic.UsageError:
            print("refused")
    """)
    assert (status, out) == (0, ["refused"]), err


def test_a_dropped_generator_stops_its_generation_and_frees_the_runner():
    status, out, err = run_script("""
        g = r.stream("And it came to pass", max_tokens=400, ignore_eos=True)
        next(g)
        del g
        gc.collect()
        print(r.last.stop_reason, len(r.last.tokens) < 400)
        print("reusable", reusable())
    """)
    assert (status, out) == (0, ["stopped", "True", "reusable", "True"]), err


def test_a_generator_in_a_cycle_is_collected_like_any_other():
    status, out, err = run_script("""
        holder = {"g": r.stream("And it came to pass", max_tokens=400, ignore_eos=True)}
        holder["self"] = holder
        next(holder["g"])
        del holder
        gc.collect()
        print(r.last.stop_reason, "reusable", reusable())
    """)
    assert (status, out) == (0, ["stopped", "reusable", "True"]), err


def test_closing_a_generator_stops_it_and_frees_the_runner():
    status, out, err = run_script("""
        g = r.stream("And it came to pass", max_tokens=400, ignore_eos=True)
        next(g)
        g.close()
        print(r.last.stop_reason, len(r.last.tokens) < 400)
        print("reusable", reusable())
        print("closed-twice", g.close() is None, next(g, "exhausted"))
    """)
    assert (status, out) == (0, ["stopped", "True", "reusable", "True", "closed-twice", "True", "exhausted"]), err


def test_a_consumer_that_raises_stops_the_generation():
    status, out, err = run_script("""
        try:
            for piece in r.stream("And it came to pass", max_tokens=400, ignore_eos=True):
                raise ValueError("consumer")
        except ValueError:
            print("raised")
        print(r.last.stop_reason, "reusable", reusable())
    """)
    assert (status, out) == (0, ["raised", "stopped", "reusable", "True"]), err


def test_an_uncaught_exception_in_the_consumer_exits_with_its_traceback():
    status, out, err = run_script("""
        g = r.stream("And it came to pass", max_tokens=400, ignore_eos=True)
        for piece in g:
            print("piece")
            raise ValueError("consumer")
    """)
    assert (status, out) == (1, ["piece"]), err
    assert "ValueError: consumer" in err and "terminate" not in err


@pytest.mark.parametrize("ending", ["", "sys.exit(0)", "gc.collect()"])
def test_a_stream_left_running_at_exit_ends_with_the_interpreter(ending):
    status, out, err = run_script("""
        g = r.stream("And it came to pass", max_tokens=400, ignore_eos=True)
        next(g)
        chat = r.chat_stream([{"role": "user", "content": "Hello"}], max_tokens=400)
        other = hfstatic.Runner(threads=1)
        g2 = other.stream("And", max_tokens=400, ignore_eos=True)
        next(g2)
        print("leaving")
        """ + ending + "\n")
    assert (status, out) == (0, ["leaving"]), err


def test_a_thread_consuming_a_stream_at_exit_does_not_stop_the_interpreter_from_ending():
    status, out, err = run_script("""
        started = threading.Event()

        def consume():
            for piece in r.stream("And it came to pass", max_tokens=400, ignore_eos=True):
                started.set()

        threading.Thread(target=consume, daemon=True).start()
        started.wait()
        print("leaving")
    """)
    assert (status, out) == (0, ["leaving"]), err


def test_a_signal_handler_can_interrupt_the_wait_for_text():
    status, out, err = run_script("""
        import signal

        class Alarm(Exception):
            pass

        def ring(signum, frame):
            raise Alarm()

        signal.signal(signal.SIGALRM, ring)
        r.generate("And", max_tokens=1)  # warm up
        g = r.stream("And it came to pass", max_tokens=400, ignore_eos=True)
        next(g)
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        try:
            for piece in g:
                pass
            print("finished-first")
        except Alarm:
            print("interrupted")
        g.close()
        print("reusable", reusable())
    """)
    assert (status, out) == (0, ["interrupted", "reusable", "True"]), err


def test_a_stream_error_reaches_the_consumer_and_the_runner_stays_usable():
    status, out, err = run_script("""
        try:
            for piece in r.stream([10 ** 9], max_tokens=4):
                pass
        except hfstatic.UsageError as e:
            print("error")
        try:
            list(r.stream("And", max_tokens=4, on_text=print))
        except hfstatic.UsageError:
            print("on_text-refused")
        print("reusable", reusable())
    """)
    assert (status, out) == (0, ["error", "on_text-refused", "reusable", "True"]), err
