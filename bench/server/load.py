#!/usr/bin/env python3
"""Load check of a running `hfstatic serve` on this machine (loopback only).

Sends --requests completions from --concurrency client threads (bounded by --max-seconds),
then prints requests/s, generated tokens/s and latency percentiles (p50/p90/p99), plus with
--stream the time to the first token (the first event carrying text) and the time per output
token after it (each request's (last text event - first) / (tokens - 1)). --json prints the
same as one JSON object. Independent of hfstatic's build: Python 3 standard library only.

  hfstatic serve -m model.hfs --slots 4 --port 8080 &
  python3 bench/server/load.py --port 8080 --concurrency 8 --requests 200 --max-tokens 32
"""
import argparse
import http.client
import ipaddress
import json
import socket
import sys
import threading
import time


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def is_loopback(host):
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
    except (OSError, ValueError):
        return False


def one_request(args, i, conn_holder):
    body = {"prompt": args.prompts[i % len(args.prompts)], "max_tokens": args.max_tokens, "temperature": args.temperature,
            "ignore_eos": args.ignore_eos}
    if args.chat:
        body = {k: v for k, v in body.items() if k != "prompt"}
        body["messages"] = [{"role": "user", "content": args.prompts[i % len(args.prompts)]}]
    if args.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    path = "/v1/chat/completions" if args.chat else "/v1/completions"
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = "Bearer " + args.api_key
    if conn_holder[0] is None:
        conn_holder[0] = http.client.HTTPConnection(args.host, args.port, timeout=args.timeout)
    c = conn_holder[0]
    t0 = time.perf_counter()
    try:
        c.request("POST", path, body=json.dumps(body), headers=headers)
        r = c.getresponse()
        ttft = None
        last_text = None
        tokens = 0
        if args.stream and r.status == 200:
            while True:
                line = r.readline()
                if not line:
                    break
                if line.startswith(b"data: "):
                    data = line[6:].strip()
                    if data == b"[DONE]":
                        r.read()
                        break
                    obj = json.loads(data)
                    if obj.get("usage"):
                        tokens = obj["usage"]["completion_tokens"]
                    choice = (obj.get("choices") or [{}])[0]
                    if choice.get("text") or (choice.get("delta") or {}).get("content"):
                        last_text = time.perf_counter() - t0
                        if ttft is None:
                            ttft = last_text
        else:
            payload = r.read()
            if r.status == 200:
                tokens = json.loads(payload)["usage"]["completion_tokens"]
        tpot = (last_text - ttft) / (tokens - 1) if ttft is not None and tokens > 1 else None
        return r.status, time.perf_counter() - t0, ttft, tokens, tpot
    except (OSError, http.client.HTTPException) as e:
        c.close()
        conn_holder[0] = None
        return f"{type(e).__name__}", time.perf_counter() - t0, None, 0, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--api-key", default="")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--requests", type=int, default=100, help="at most 10000")
    ap.add_argument("--max-seconds", type=float, default=60, help="stop sending new requests after this long")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--ignore-eos", action="store_true", help="always generate max_tokens tokens")
    ap.add_argument("--chat", action="store_true", help="use /v1/chat/completions")
    ap.add_argument("--stream", action="store_true", help="stream (also measures time to first token)")
    ap.add_argument("--timeout", type=float, default=60, help="socket timeout of each request")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    ap.add_argument("--shared-prefix-words", type=int, default=0,
                    help="start every prompt with the same N words (a shared system prompt; at most 2000)")
    args = ap.parse_args()
    if not is_loopback(args.host):
        sys.exit(f"load.py: {args.host} is not a loopback address; this check only runs against this machine")
    args.requests = max(1, min(args.requests, 10000))
    args.concurrency = max(1, min(args.concurrency, 256))
    args.prompts = ["Once upon a time", "The quick brown fox jumps over", "In a galaxy far away", "Hello, my name is",
                    "The capital of France is", "def fibonacci(n):"]
    words = ["you", "are", "a", "helpful", "assistant", "who", "answers", "briefly", "and", "kindly"]
    prefix = " ".join(words[i % len(words)] for i in range(max(0, min(args.shared_prefix_words, 2000))))
    if prefix:
        args.prompts = [prefix + ". " + p for p in args.prompts]

    lock = threading.Lock()
    next_i = [0]
    results = []
    deadline = time.perf_counter() + args.max_seconds

    def worker():
        conn = [None]
        while True:
            with lock:
                if next_i[0] >= args.requests or time.perf_counter() > deadline:
                    break
                i = next_i[0]
                next_i[0] += 1
            res = one_request(args, i, conn)
            with lock:
                results.append(res)
        if conn[0] is not None:
            conn[0].close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0

    ok = [r for r in results if r[0] == 200]
    statuses = {}
    for r in results:
        statuses[str(r[0])] = statuses.get(str(r[0]), 0) + 1
    lat = [r[1] * 1000 for r in ok]
    ttft = [r[2] * 1000 for r in ok if r[2] is not None]
    tokens = sum(r[3] for r in ok)
    tpot = [r[4] * 1000 for r in ok if r[4] is not None]
    mode = ("chat" if args.chat else "completions") + (" stream" if args.stream else "")
    if args.json:
        def spread(values):
            return {f"p{p}": round(percentile(values, p), 2) for p in (50, 90, 99)} if values else None
        print(json.dumps({"mode": mode, "clients": args.concurrency, "requests": len(results), "statuses": statuses,
                          "max_tokens": args.max_tokens, "seconds": round(wall, 3),
                          "requests_per_s": round(len(ok) / wall, 2), "tokens_per_s": round(tokens / wall, 1),
                          "latency_ms": spread(lat), "ttft_ms": spread(ttft), "tpot_ms": spread(tpot)}))
        return 0 if len(ok) == len(results) else 1
    print(f"{mode}: {len(results)} requests ({statuses}) from {args.concurrency} clients in {wall:.2f} s, "
          f"max_tokens {args.max_tokens}")
    print(f"throughput: {len(ok) / wall:.1f} requests/s, {tokens / wall:.0f} generated tokens/s")
    print(f"latency ms: p50 {percentile(lat, 50):.1f}  p90 {percentile(lat, 90):.1f}  p99 {percentile(lat, 99):.1f}  "
          f"max {max(lat) if lat else float('nan'):.1f}")
    if ttft:
        print(f"time to first token ms: p50 {percentile(ttft, 50):.1f}  p90 {percentile(ttft, 90):.1f}  "
              f"p99 {percentile(ttft, 99):.1f}")
    if tpot:
        print(f"time per output token ms: p50 {percentile(tpot, 50):.1f}  p90 {percentile(tpot, 90):.1f}  "
              f"p99 {percentile(tpot, 99):.1f}")
    return 0 if len(ok) == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
