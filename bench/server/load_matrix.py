#!/usr/bin/env python3
"""Load figures of `hfstatic serve` with and without batched decode and prefix reuse.

For each of the four servers (batching on/off x prefix reuse on/off) started in turn on a free
loopback port, runs bench/server/load.py (streaming completions, ignore_eos) at each client
count and prints a Markdown table: requests/s, generated tokens/s, and the time to the first
token and per output token as the server measured them (its /metrics histograms, scraped before
and after each run: the mean, and p50 / p99 interpolated within the histogram's buckets as
Prometheus' histogram_quantile does). Runs with Debian's /usr/bin/python3 (standard library
only).

  python3 bench/server/load_matrix.py --hfstatic build/hfstatic -m q4.hfs --slots 4 \\
      --clients 1,2,4,8 --max-tokens 32 --shared-prefix-words 100
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, proc, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"load_matrix.py: the server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit(f"load_matrix.py: the server on port {port} was not ready in {seconds} s")


def scrape(port, family):
    """{le: cumulative count} and (sum, count) of a histogram family on the server's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    buckets, total = {}, [0.0, 0.0]
    for line in text.splitlines():
        if line.startswith(family + "_bucket{le=\""):
            le = line[len(family) + 12:line.index("\"}")]
            buckets[float("inf") if le == "+Inf" else float(le)] = float(line.split()[-1])
        elif line.startswith(family + "_sum "):
            total[0] = float(line.split()[-1])
        elif line.startswith(family + "_count "):
            total[1] = float(line.split()[-1])
    return buckets, total


def summary(before, after):
    """'mean / p50 / p99' in ms of the observations between two scrapes."""
    b0, t0 = before
    b1, t1 = after
    n = t1[1] - t0[1]
    if n <= 0:
        return "-"
    bounds = sorted(b1)
    counts = [b1[le] - b0.get(le, 0) for le in bounds]

    def quantile(q):
        rank, lower = q * n, 0.0
        for le, c, prev in zip(bounds, counts, [0.0] + counts):
            if c >= rank:
                if le == float("inf"):
                    return lower
                return lower + (le - lower) * (rank - prev) / max(c - prev, 1e-9)
            lower = le
        return lower

    return f"{1000 * (t1[0] - t0[0]) / n:.1f} / {1000 * quantile(0.5):.1f} / {1000 * quantile(0.99):.1f}"


def load(port, clients, args):
    cmd = [sys.executable, os.path.join(HERE, "load.py"), "--port", str(port), "--concurrency", str(clients),
           "--requests", str(max(args.min_requests, args.requests_per_client * clients)), "--max-tokens",
           str(args.max_tokens), "--ignore-eos", "--stream", "--json", "--max-seconds", str(args.max_seconds),
           "--shared-prefix-words", str(args.shared_prefix_words)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.max_seconds + 120)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if not lines:
        sys.exit(f"load_matrix.py: load.py printed no figures: {out.stderr.strip()}")
    return json.loads(lines[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hfstatic", default="build/hfstatic")
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--clients", default="1,2,4,8")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--requests-per-client", type=int, default=4)
    ap.add_argument("--min-requests", type=int, default=8)
    ap.add_argument("--max-seconds", type=float, default=120)
    ap.add_argument("--shared-prefix-words", type=int, default=100)
    ap.add_argument("--extra", default="", help="more `serve` flags for every server, space-separated")
    args = ap.parse_args()
    clients = [int(c) for c in args.clients.split(",")]
    modes = [("batching, reuse", ["--batching"]), ("batching, no reuse", ["--batching", "--no-prefix-reuse"]),
             ("no batching, reuse", []), ("no batching, no reuse", ["--no-prefix-reuse"])]
    ttft, tpot = "hfstatic_time_to_first_token_seconds", "hfstatic_time_per_output_token_seconds"
    print("| server | clients | requests/s | tokens/s | TTFT mean / p50 / p99 ms | TPOT mean / p50 / p99 ms |")
    print("|---|---|---|---|---|---|")
    for name, flags in modes:
        port = free_port()
        proc = subprocess.Popen([args.hfstatic, "serve", "-m", args.model, "--port", str(port), "--slots",
                                 str(args.slots), "--log-format", "none"] + flags + args.extra.split(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(port, proc)
            load(port, 1, argparse.Namespace(**{**vars(args), "requests_per_client": 2, "min_requests": 2}))  # warm-up
            for c in clients:
                before = scrape(port, ttft), scrape(port, tpot)
                r = load(port, c, args)
                after = scrape(port, ttft), scrape(port, tpot)
                print(f"| {name} | {c} | {r['requests_per_s']} | {r['tokens_per_s']} | "
                      f"{summary(before[0], after[0])} | {summary(before[1], after[1])} |", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
