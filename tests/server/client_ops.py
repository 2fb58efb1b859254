#!/usr/bin/env python3
"""Checks of prefix reuse, /metrics, readiness and drain (tests/server/test_http.cpp runs them).

usage: client_ops.py --port PORT CHECK [args...], as client.py, whose helpers and options these
checks share.
"""
import sys

import client
from client import CheckFailed, expect, request, stream


def chat_turn(port, messages, max_tokens, **extra):
    """A greedy chat completion against `port`; returns (content, usage)."""
    saved = client.ARGS.port
    client.ARGS.port = port
    try:
        status, _, resp = request("POST", "/v1/chat/completions",
                                  {"messages": messages, "max_tokens": max_tokens, "temperature": 0, **extra})
    finally:
        client.ARGS.port = saved
    expect(status == 200, f"chat: status {status}: {resp}")
    return resp["choices"][0]["message"]["content"], resp["usage"]


def c_prefix_reuse(a):
    """A multi-turn chat and its variants against a server that reuses prefixes (--port) and one
    that does not (--plain-port): the same text and prompt_tokens, cached_tokens only on the first."""
    out = {"cached": []}

    def both(messages, what, **extra):
        warm, wu = chat_turn(a.port, messages, a.max_tokens, **extra)
        cold, cu = chat_turn(a.plain_port, messages, a.max_tokens, **extra)
        expect(warm == cold, f"{what}: reused {warm!r} != cold {cold!r}")
        expect(wu["prompt_tokens"] == cu["prompt_tokens"], f"{what}: usage {wu} vs {cu}")
        expect(cu["prompt_tokens_details"]["cached_tokens"] == 0, f"{what}: the plain server reused {cu}")
        return warm, wu["prompt_tokens_details"]["cached_tokens"]

    system = {"role": "system", "content": "Be brief."}
    messages = [system]
    for turn in range(a.requests):
        messages.append({"role": "user", "content": f"Q{turn}: {turn * 7}+1?"})
        reply, cached = both(messages, f"turn {turn + 1}")
        out["cached"].append(cached)
        messages.append({"role": "assistant", "content": reply})
    expect(out["cached"][0] == 0, f"the first turn reused {out['cached'][0]} tokens")
    expect(all(c > 0 for c in out["cached"][1:]), f"later turns reused nothing: {out['cached']}")
    # The first turn again (shorter than what the slot holds), another system prompt, another
    # conversation in between, then the first one continued.
    _, out["shorter"] = both(messages[:2], "shorter")
    _, out["other_system"] = both([{"role": "system", "content": "Be kind."}, messages[1]], "other system")
    both([{"role": "user", "content": "Hi."}], "other conversation")
    messages.append({"role": "user", "content": "And then?"})
    _, out["continued"] = both(messages, "continued")
    # Completions, streamed with usage, report it too.
    for prompt in ("Once upon a time, in a land", "Once upon a time, in a land far away"):
        body = {"prompt": prompt, "max_tokens": a.max_tokens, "temperature": 0}
        text, _, usage, _ = stream("/v1/completions", {**body, "stream_options": {"include_usage": True}})
        client.ARGS.port, port = a.plain_port, a.port
        try:
            status, _, cold = request("POST", "/v1/completions", body)
        finally:
            client.ARGS.port = port
        expect(status == 200 and cold["choices"][0]["text"] == text, f"stream {text!r} != cold {cold}")
    expect(usage["prompt_tokens_details"]["cached_tokens"] > 0, f"stream usage {usage}")
    out["stream_cached"] = usage["prompt_tokens_details"]["cached_tokens"]
    return out


CHECKS = {"prefix_reuse": c_prefix_reuse}

if __name__ == "__main__":
    client.CHECKS.update(CHECKS)
    sys.exit(client.main())
