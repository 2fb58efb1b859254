#!/usr/bin/env python3
"""Time to first token of each turn of a multi-turn chat against a running `hfstatic serve`.

Each of --repeat conversations is a system prompt, then --turns user messages of --words words,
each followed by a scripted assistant reply of --reply-words words (so that a model of random
weights, whose tokens may have no text, still builds a long history). Each turn asks for one
greedy token: the time from sending it to the whole answer is its TTFT (prefill, one sample
and the HTTP round trip). Prints, per turn, the prompt
tokens, the tokens the server reused (usage.prompt_tokens_details.cached_tokens) and the median
TTFT; with --cold-port, the same against a second server (started with --no-prefix-reuse) side
by side. Python 3 standard library only; loopback only.

  hfstatic serve -m model.hfs --port 8080 &
  hfstatic serve -m model.hfs --port 8081 --no-prefix-reuse &
  python3 bench/server/chat_turns.py --port 8080 --cold-port 8081 --turns 10 --repeat 5
"""
import argparse
import http.client
import json
import statistics
import sys
import time

WORDS = ("river stone lantern orchard copper meadow signal harbor velvet summit thicket "
         "ember quarry willow beacon canyon saddle prism tundra glacier").split()


def first_token(port, messages, timeout):
    """One greedy token after the conversation; returns (seconds, usage)."""
    body = {"messages": messages, "max_tokens": 1, "temperature": 0, "ignore_eos": True}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        t0 = time.perf_counter()
        c.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        payload = r.read()
        seconds = time.perf_counter() - t0
        if r.status != 200:
            raise RuntimeError(f"status {r.status}: {payload[:300]!r}")
        return seconds, json.loads(payload)["usage"]
    finally:
        c.close()


def conversation(port, args, seed):
    """One conversation; per turn (prompt tokens, cached tokens, ttft ms)."""
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    rows = []
    def words(n, at):
        return " ".join(WORDS[(at + i * 3) % len(WORDS)] for i in range(n))

    for turn in range(args.turns):
        messages.append({"role": "user", "content": f"Chat {seed}, Q{turn + 1}: "
                                                    f"{words(args.words, seed * 7 + turn)}?"})
        ttft, usage = first_token(port, messages, args.timeout)
        rows.append((usage["prompt_tokens"], usage.get("prompt_tokens_details", {}).get("cached_tokens", 0), ttft * 1e3))
        messages.append({"role": "assistant", "content": words(args.reply_words, seed + turn * 5) + "."})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True, help="the server that reuses prefixes")
    ap.add_argument("--cold-port", type=int, default=0, help="a server started with --no-prefix-reuse")
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3, help="conversations per server (medians over them)")
    ap.add_argument("--words", type=int, default=4, help="words of each user message")
    ap.add_argument("--reply-words", type=int, default=8, help="words of each scripted assistant reply")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    if not (1 <= args.turns <= 100 and 1 <= args.repeat <= 50):
        sys.exit("--turns must be 1..100 and --repeat 1..50")
    servers = [("reuse", args.port)] + ([("cold", args.cold_port)] if args.cold_port else [])
    results = {}
    for name, port in servers:
        runs = [conversation(port, args, seed) for seed in range(args.repeat)]
        results[name] = [[run[t] for run in runs] for t in range(args.turns)]
    head = "turn  prompt  " + "  ".join(f"{n} cached  {n} ttft ms" for n, _ in servers)
    print(head)
    for t in range(args.turns):
        cells = []
        for name, _ in servers:
            rows = results[name][t]
            cells.append(f"{statistics.median(r[1] for r in rows):>{len(name) + 7}.0f}  "
                         f"{statistics.median(r[2] for r in rows):>{len(name) + 8}.1f}")
        print(f"{t + 1:>4}  {statistics.median(r[0] for r in results[servers[0][0]][t]):>6.0f}  " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
