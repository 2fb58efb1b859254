#!/usr/bin/env python3
"""Checks of prefix reuse, /metrics, readiness, drain and batching (tests/server/test_http.cpp runs them).

usage: client_ops.py --port PORT CHECK [args...], as client.py, whose helpers and options these
checks share.
"""
import json
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import client
from client import expect, request, stream

SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? '
                    r'([-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|Inf)|NaN)')


def parse_metrics(text):
    """A strict reading of the Prometheus text format: {family: type}, {sample key: value}."""
    types, samples, family = {}, {}, None
    expect(text.endswith("\n"), "the exposition does not end with a newline")
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        m = re.fullmatch(r"# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)", line)
        if m:
            expect(m.group(1) not in types, f"TYPE twice: {line}")
            family = m.group(1)
            types[family] = m.group(2)
            continue
        m = SAMPLE.fullmatch(line)
        expect(m is not None, f"not a sample line: {line!r}")
        name = m.group(1)
        expect(name == family or (types.get(family) == "histogram" and name in (family + "_bucket", family + "_sum", family + "_count")),
               f"{name} outside its family {family}")
        key = line.rsplit(" ", 1)[0]
        expect(key not in samples, f"sample twice: {key}")
        samples[key] = float(m.group(3).replace("Inf", "inf"))
    return types, samples


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


def c_metrics(a):
    """/metrics after a few requests parses and counts them."""
    usages = [client.completion("Once upon a time", a.max_tokens)["usage"], client.chat("Hello", a.max_tokens)["usage"],
              client.completion("Once upon a time, there", a.max_tokens)["usage"]]
    status, _, _ = request("GET", "/nowhere")
    expect(status == 404, f"/nowhere: {status}")
    # A request is counted once its answer is written (the server's access log hook), so the
    # client may see the 404 before the counter does: scrape until it is there (at most 5 s).
    for attempt in range(50):
        c = client.conn()
        try:
            c.request("GET", "/metrics")
            r = c.getresponse()
            text = r.read().decode("utf-8")
            expect(r.status == 200 and r.getheader("Content-Type", "").startswith("text/plain; version=0.0.4"),
                   f"/metrics: {r.status} {r.getheader('Content-Type')}")
        finally:
            c.close()
        types, samples = parse_metrics(text)
        if samples.get('hfstatic_http_requests_total{route="other",status="404"}') == 1 and \
                samples.get("hfstatic_slots_busy") == 0:
            break
        time.sleep(0.1)
    expect(types["hfstatic_http_requests_total"] == "counter", f"types {types}")
    expect(types["hfstatic_time_to_first_token_seconds"] == "histogram", f"types {types}")
    get = samples.get
    expect(get('hfstatic_http_requests_total{route="/v1/completions",status="200"}') == 2, text)
    expect(get('hfstatic_http_requests_total{route="/v1/chat/completions",status="200"}') == 1, text)
    expect(get('hfstatic_http_requests_total{route="other",status="404"}') == 1, text)
    expect(get("hfstatic_prompt_tokens_total") == sum(u["prompt_tokens"] for u in usages), text)
    expect(get("hfstatic_generated_tokens_total") == sum(u["completion_tokens"] for u in usages), text)
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    expect(get("hfstatic_prompt_tokens_cached_total") == cached and cached > 0, text)
    expect(get("hfstatic_prefix_reuse_hits_total") >= 1, text)
    expect(get("hfstatic_slots") == a.requests and get("hfstatic_slots_busy") == 0 and get("hfstatic_queue_length") == 0, text)
    buckets = [(k, v) for k, v in samples.items() if k.startswith("hfstatic_time_to_first_token_seconds_bucket")]
    values = [v for _, v in buckets]
    expect(values == sorted(values) and buckets[-1][0].endswith('le="+Inf"}'), f"buckets {buckets}")
    expect(values[-1] == get("hfstatic_time_to_first_token_seconds_count") == 3, f"buckets {buckets}")
    return {"families": len(types), "samples": len(samples)}


def start_serve(a, *flags):
    """`hfstatic serve` on a free port; returns (process, port, stderr file)."""
    err = tempfile.TemporaryFile("w+")
    p = subprocess.Popen([a.cli, "serve", "-m", a.model, "--port", "0", "-t", "1", *flags],
                         stdout=subprocess.PIPE, stderr=err, text=True)
    line = p.stdout.readline()
    m = re.search(r"http://[^:]+:(\d+)", line)
    expect(m is not None, f"no port in {line!r}")
    client.ARGS.port = int(m.group(1))
    client.wait_for(lambda: request("GET", "/ready")[0] == 200, 30, "/ready")  # the port opens before the load
    return p, int(m.group(1)), err


def c_drain(a):
    """SIGTERM drains: /ready turns 503 and new requests get 503 at once, the requests in flight
    (generating, queued, streaming) finish whole, and the command exits 0; JSON access log lines."""
    p, port, err = start_serve(a, "--slots", "1", "--queue", "4", "--token-interval", "15", "--log-format", "json",
                               "--drain-timeout", "30")
    client.ARGS.port = port
    out = {}
    try:
        status, _, ready = request("GET", "/ready")
        expect(status == 200 and ready["status"] == "ready", f"/ready before: {status} {ready}")
        results = {}

        def whole(i):
            results[i] = request("POST", "/v1/completions", {"prompt": f"Request {i}", "max_tokens": 30,
                                                             "temperature": 0, "ignore_eos": True})

        def streamed():
            results["stream"] = stream("/v1/completions", {"prompt": "Streamed", "max_tokens": 30, "temperature": 0,
                                                           "ignore_eos": True, "stream_options": {"include_usage": True}})
        threads = [threading.Thread(target=whole, args=(i,)) for i in range(2)] + [threading.Thread(target=streamed)]
        for t in threads:
            t.start()
        client.wait_for(lambda: client.health()["slots_busy"] == 1 and client.health()["queue"] == 2, 10, "3 in flight")
        p.send_signal(signal.SIGTERM)
        t0 = time.time()
        client.wait_for(lambda: request("GET", "/ready")[0] == 503, 5, "/ready 503")
        status, _, body = request("POST", "/v1/completions", {"prompt": "late", "max_tokens": 2})
        expect(status == 503 and body["error"]["code"] == "server_shutting_down", f"late request: {status} {body}")
        out["refused_in_s"] = time.time() - t0
        for t in threads:
            t.join(60)
        for i in range(2):
            status, _, body = results[i]
            expect(status == 200 and body["usage"]["completion_tokens"] == 30, f"request {i}: {status} {body}")
        text, finish, usage, _ = results["stream"]
        expect(finish == "length" and usage["completion_tokens"] == 30, f"stream: {finish} {usage}")
        code = p.wait(30)
        expect(code == 0, f"exit {code}")
        out["exit"] = code
        out["drain_s"] = time.time() - t0
        err.seek(0)
        lines = [json.loads(l) for l in err.read().splitlines() if l.startswith("{")]
        gens = [l for l in lines if l["path"] == "/v1/completions" and l["status"] == 200]
        expect(len(gens) == 3 and all(l["completion_tokens"] == 30 and l["ms"] > 0 and l["method"] == "POST" for l in gens),
               f"access log: {lines}")
        expect(any(l["status"] == 503 for l in lines), f"no 503 in the access log: {lines}")
        out["log_lines"] = len(lines)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # A drain that outlasts --drain-timeout ends the generation and still exits 0.
    p, port, err = start_serve(a, "--token-interval", "20", "--drain-timeout", "1", "--log-format", "none")
    client.ARGS.port = port
    try:
        t = threading.Thread(target=lambda: request("POST", "/v1/completions", {"prompt": "long", "max_tokens": 200,
                                                                               "ignore_eos": True}))
        t.start()
        client.wait_for(lambda: client.health()["slots_busy"] == 1, 10, "a generation")
        t0 = time.time()
        p.send_signal(signal.SIGTERM)
        code = p.wait(20)
        out["bounded_exit"], out["bounded_s"] = code, time.time() - t0
        t.join(10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return out


def c_ready(a):
    """/ready says --state; /health is 200 whatever it is; completions wait for "ready"."""
    status, _, body = request("GET", "/ready")
    expect(body["status"] == a.state and status == (200 if a.state == "ready" else 503), f"/ready: {status} {body}")
    status, _, health = request("GET", "/health")
    expect(status == 200, f"/health: {status} {health}")
    status, _, resp = request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2, "temperature": 0})
    if a.state == "loading":
        err = client.check_error(status, resp, 503, "completion while loading")
        expect(err["code"] == "server_loading", f"error {err}")
    else:
        expect(status == 200, f"completion: {status} {resp}")
    return {"ready": body["status"], "completion": status}


def metrics_samples(port):
    saved = client.ARGS.port
    client.ARGS.port = port
    try:
        status, _, text = request("GET", "/metrics")
    finally:
        client.ARGS.port = saved
    expect(status == 200, f"/metrics: {status}")
    return parse_metrics(text)


def c_batching(a):
    """Concurrent greedy requests (completions, chat, streams; prompts of one to several chunks,
    runs of different lengths) against a batching server (--port) answer as the same requests one
    at a time against a server whose slots step alone (--plain-port); /metrics counts decode
    steps of several rows. Rounds repeat (at most 5) until one step had more than one row."""
    n = a.requests
    prompts = [client.PROMPTS[i % len(client.PROMPTS)] * (1 + 3 * (i % 3)) for i in range(n)]

    def one(i, port):
        saved = client.ARGS.port
        client.ARGS.port = port
        try:
            max_tokens = a.max_tokens - 9 * i  # sequences leave at different steps
            extra = {"ignore_eos": True}
            if i % 3 == 0:
                return client.completion(prompts[i], max_tokens, **extra)["choices"][0]["text"]
            if i % 3 == 1:
                return client.chat(prompts[i], max_tokens, **extra)["choices"][0]["message"]["content"]
            body = {"prompt": prompts[i], "max_tokens": max_tokens, "temperature": 0, **extra}
            return stream("/v1/completions", body)[0]
        finally:
            client.ARGS.port = saved

    single = [one(i, a.plain_port) for i in range(n)]
    _, plain = metrics_samples(a.plain_port)
    expect(plain.get("hfstatic_decode_batch_rows_count", 0) == 0, "the server without batching batched")
    rounds, samples = 0, {}
    while rounds < 5 and samples.get("hfstatic_batched_decode_steps_total", 0) == 0:
        rounds += 1
        results, errors = [None] * n, []

        def worker(i):
            try:
                results[i] = one(i, a.port)
            except Exception as e:  # noqa: BLE001
                errors.append(f"request {i}: {e!r}")

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(client.TIMEOUT * 2)
        expect(not errors, "; ".join(errors))
        for i in range(n):
            expect(results[i] == single[i], f"round {rounds} request {i}: batched {results[i]!r} != alone {single[i]!r}")
        types, samples = metrics_samples(a.port)
    expect(types.get("hfstatic_decode_batch_rows") == "histogram", f"types {types}")
    steps = samples["hfstatic_decode_batch_rows_count"]
    one_row = samples['hfstatic_decode_batch_rows_bucket{le="1"}']
    batched = samples["hfstatic_batched_decode_steps_total"]
    expect(batched == steps - one_row, f"{batched} batched steps, {steps} steps of which {one_row} of one row")
    expect(samples["hfstatic_decode_batch_rows_sum"] > steps, f"rows {samples['hfstatic_decode_batch_rows_sum']} in {steps} steps")
    return {"rounds": rounds, "decode_steps": steps, "batched_steps": batched,
            "rows": samples["hfstatic_decode_batch_rows_sum"]}


CHECKS = {"ready": c_ready, "prefix_reuse": c_prefix_reuse, "metrics": c_metrics, "drain": c_drain,
          "batching": c_batching}

if __name__ == "__main__":
    client.CHECKS.update(CHECKS)
    sys.exit(client.main())
