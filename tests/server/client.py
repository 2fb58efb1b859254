#!/usr/bin/env python3
"""HTTP client checks of a running `hfstatic serve` (tests/server/test_http.cpp runs them).

usage: client.py --port PORT CHECK [args...]
Each check prints one JSON line with what it saw and exits 0, or prints why it failed and
exits 1. Every network wait is bounded (socket timeouts), so a broken server fails the check.
"""
import argparse
import gzip
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

TIMEOUT = 30.0
ARGS = None


class CheckFailed(Exception):
    pass


def expect(cond, message):
    if not cond:
        raise CheckFailed(message)


def conn():
    return http.client.HTTPConnection(ARGS.host, ARGS.port, timeout=TIMEOUT)


def request(method, path, body=None, headers=None, raw=None):
    """Returns (status, headers dict, parsed JSON or raw text)."""
    c = conn()
    try:
        h = {"Content-Type": "application/json"}
        if ARGS.api_key:
            h["Authorization"] = "Bearer " + ARGS.api_key
        h.update(headers or {})
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode("utf-8")
        try:
            payload = json.loads(text)
        except ValueError:
            payload = text
        return r.status, dict(r.getheaders()), payload
    finally:
        c.close()


def check_error(status, payload, want_status, what):
    expect(status == want_status, f"{what}: status {status}, want {want_status}: {payload}")
    expect(isinstance(payload, dict) and isinstance(payload.get("error"), dict), f"{what}: no error object: {payload}")
    err = payload["error"]
    for key in ("message", "type", "param", "code"):
        expect(key in err, f"{what}: error has no '{key}': {payload}")
    expect(isinstance(err["message"], str) and err["message"], f"{what}: empty message")
    return err


def check_usage(resp):
    u = resp["usage"]
    expect(u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"], f"usage does not add up: {u}")
    expect(u["prompt_tokens"] > 0, f"no prompt tokens: {u}")


def completion(prompt, max_tokens=12, **extra):
    body = {"model": "m", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, **extra}
    status, _, resp = request("POST", "/v1/completions", body)
    expect(status == 200, f"completion: status {status}: {resp}")
    expect(resp["object"] == "text_completion", f"object {resp['object']}")
    expect(resp["id"].startswith("cmpl-"), f"id {resp['id']}")
    ch = resp["choices"][0]
    expect(ch["index"] == 0 and isinstance(ch["text"], str), f"choice {ch}")
    expect(ch["finish_reason"] in ("stop", "length"), f"finish_reason {ch['finish_reason']}")
    check_usage(resp)
    return resp


def chat(content, max_tokens=12, **extra):
    body = {"model": "m", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": content}],
            "max_tokens": max_tokens, "temperature": 0, **extra}
    status, _, resp = request("POST", "/v1/chat/completions", body)
    expect(status == 200, f"chat: status {status}: {resp}")
    expect(resp["object"] == "chat.completion", f"object {resp['object']}")
    expect(resp["id"].startswith("chatcmpl-"), f"id {resp['id']}")
    ch = resp["choices"][0]
    expect(ch["message"]["role"] == "assistant" and isinstance(ch["message"]["content"], str), f"choice {ch}")
    expect(ch["finish_reason"] in ("stop", "length"), f"finish_reason {ch['finish_reason']}")
    check_usage(resp)
    return resp


def stream(path, body):
    """Streams a request; checks the SSE framing; returns (text, finish_reason, usage, events)."""
    c = conn()
    try:
        c.request("POST", path, body=json.dumps({**body, "stream": True}),
                  headers={"Content-Type": "application/json", **({"Authorization": "Bearer " + ARGS.api_key} if ARGS.api_key else {})})
        r = c.getresponse()
        if r.status != 200:
            raise CheckFailed(f"stream: status {r.status}: {r.read()[:500]!r}")
        expect(r.getheader("Content-Type", "").startswith("text/event-stream"), f"content type {r.getheader('Content-Type')}")
        raw = r.read().decode("utf-8")
    finally:
        c.close()
    expect(raw.endswith("data: [DONE]\n\n"), f"stream does not end with [DONE]: {raw[-200:]!r}")
    events = [e for e in raw.split("\n\n") if e]
    text, finish, usage = "", None, None
    chat_mode = path.endswith("chat/completions")
    for i, e in enumerate(events):
        expect(e.startswith("data: ") and "\n" not in e, f"event {i} is not one data line: {e!r}")
        data = e[len("data: "):]
        if data == "[DONE]":
            expect(i == len(events) - 1, "[DONE] before the end")
            continue
        obj = json.loads(data)
        expect(obj["object"] == ("chat.completion.chunk" if chat_mode else "text_completion"), f"chunk object {obj['object']}")
        if "usage" in obj and obj["usage"] is not None:
            expect(obj["choices"] == [], "usage chunk with choices")
            usage = obj["usage"]
            continue
        ch = obj["choices"][0]
        expect(finish is None, "a chunk after the finish_reason chunk")
        if chat_mode:
            text += ch["delta"].get("content", "") or ""
            if i == 0:
                expect(ch["delta"].get("role") == "assistant", f"first delta {ch['delta']}")
        else:
            text += ch["text"]
        finish = ch["finish_reason"]
    expect(finish in ("stop", "length"), f"finish_reason {finish}")
    return text, finish, usage, events


def health():
    status, _, h = request("GET", "/health")
    expect(status == 200, f"health: {status} {h}")
    return h


def wait_for(pred, seconds, what):
    end = time.time() + seconds
    while time.time() < end:
        if pred():
            return
        time.sleep(0.01)
    raise CheckFailed(f"timed out after {seconds}s waiting for {what} (health: {health()})")


PROMPTS = ["Once upon a time", "The quick brown fox", "Hello, world", "In the beginning", "A B C D", "0123456789"]


# ---- checks -----------------------------------------------------------------------------------

def c_basic(a):
    status, _, models = request("GET", "/v1/models")
    expect(status == 200 and models["object"] == "list" and models["data"][0]["object"] == "model", f"models: {models}")
    h = health()
    expect(h["status"] == "ok", f"health {h}")
    out = {"completion": completion(a.prompt, a.max_tokens), "chat": chat(a.prompt, a.max_tokens), "model": models["data"][0]["id"]}
    # stop strings cut the text and report "stop"
    full = out["completion"]["choices"][0]["text"]
    if len(full) >= 4:
        stop = full[2:4]
        cut = completion(a.prompt, a.max_tokens, stop=[stop])
        expect(cut["choices"][0]["text"] == full[:full.find(stop)], f"stop string: {cut['choices'][0]['text']!r} vs {full!r}")
        expect(cut["choices"][0]["finish_reason"] == "stop", "stop string finish_reason")
    # a seeded sampled request repeats
    s1 = completion(a.prompt, a.max_tokens, temperature=0.9, top_p=0.95, seed=7)
    s2 = completion(a.prompt, a.max_tokens, temperature=0.9, top_p=0.95, seed=7)
    expect(s1["choices"][0]["text"] == s2["choices"][0]["text"], "same seed, different text")
    return out


def c_stream(a):
    out = {}
    for name, path, body in (
            ("completion", "/v1/completions", {"prompt": a.prompt, "max_tokens": a.max_tokens, "temperature": 0}),
            ("chat", "/v1/chat/completions",
             {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": a.prompt}],
              "max_tokens": a.max_tokens, "temperature": 0})):
        text, finish, usage, events = stream(path, {**body, "stream_options": {"include_usage": True}})
        whole = completion(a.prompt, a.max_tokens) if name == "completion" else chat(a.prompt, a.max_tokens)
        wtext = whole["choices"][0]["text"] if name == "completion" else whole["choices"][0]["message"]["content"]
        expect(text == wtext, f"{name}: streamed {text!r} != whole {wtext!r}")
        expect(finish == whole["choices"][0]["finish_reason"], f"{name}: finish {finish}")
        # The same but for the cached tokens: the second request reuses the first one's prompt.
        same = lambda u: {k: v for k, v in u.items() if k != "prompt_tokens_details"}  # noqa: E731
        expect(same(usage) == same(whole["usage"]), f"{name}: usage {usage} vs {whole['usage']}")
        text2, _, usage2, _ = stream(path, body)
        expect(text2 == text and usage2 is None, f"{name}: without include_usage")
        out[name] = {"events": len(events), "text": text}
    return out


def c_concurrent(a):
    def one(i):
        p = PROMPTS[i % len(PROMPTS)]
        if i % 3 == 0:
            return completion(p, a.max_tokens)["choices"][0]["text"]
        if i % 3 == 1:
            return chat(p, a.max_tokens)["choices"][0]["message"]["content"]
        return stream("/v1/completions", {"prompt": p, "max_tokens": a.max_tokens, "temperature": 0})[0]

    n = a.requests
    single = [one(i) for i in range(n)]
    results, errors = [None] * n, []

    def worker(i):
        try:
            results[i] = one(i)
        except Exception as e:  # noqa: BLE001
            errors.append(f"request {i}: {e!r}")

    peak = [0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], health()["slots_busy"])
            except Exception:  # noqa: BLE001
                pass
            time.sleep(0.005)

    w = threading.Thread(target=watch)
    w.start()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 2)
    stop.set()
    w.join()
    expect(not errors, "; ".join(errors))
    for i in range(n):
        expect(results[i] == single[i], f"request {i}: concurrent {results[i]!r} != single {single[i]!r}")
    return {"requests": n, "peak_slots_busy": peak[0], "texts": single}


def c_queue(a):
    """slots=1, queue=1 and paced generation: the third concurrent request gets 503."""
    results = {}

    def slow(name):
        try:
            results[name] = completion("slow " + name, a.max_tokens, ignore_eos=True)
        except Exception as e:  # noqa: BLE001
            results[name] = repr(e)

    t1 = threading.Thread(target=slow, args=("a",))
    t1.start()
    wait_for(lambda: health()["slots_busy"] == 1, 10, "the first request to take the slot")
    t2 = threading.Thread(target=slow, args=("b",))
    t2.start()
    wait_for(lambda: health()["queue"] == 1, 10, "the second request to queue")
    t0 = time.time()
    status, _, payload = request("POST", "/v1/completions", {"prompt": "third", "max_tokens": 4})
    rejected_in = time.time() - t0
    err = check_error(status, payload, 503, "past the queue")
    expect(err["type"] == "server_error", f"503 type {err['type']}")
    t1.join(TIMEOUT)
    t2.join(TIMEOUT)
    for name in ("a", "b"):
        expect(isinstance(results.get(name), dict), f"queued request {name}: {results.get(name)}")
        expect(results[name]["usage"]["completion_tokens"] == a.max_tokens, f"request {name}: {results[name]['usage']}")
    completion("after", 4)
    return {"rejected_in_s": round(rejected_in, 3), "code": err["code"]}


def c_disconnect(a):
    """A client that goes away mid-stream frees its slot at once."""
    s = socket.create_connection((ARGS.host, ARGS.port), timeout=TIMEOUT)
    body = json.dumps({"prompt": "never ending", "max_tokens": a.max_tokens, "temperature": 0, "ignore_eos": True, "stream": True})
    s.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
    got = b""
    while b"data: " not in got:
        chunk = s.recv(4096)
        expect(chunk, "connection closed before the first event")
        got += chunk
    expect(health()["slots_busy"] == 1, "the stream does not hold its slot")
    s.close()
    t0 = time.time()
    wait_for(lambda: health()["slots_busy"] == 0, 5, "the slot to be freed after the disconnect")
    freed_in = time.time() - t0
    t0 = time.time()
    completion("next", 4)
    return {"freed_in_s": round(freed_in, 3), "next_request_s": round(time.time() - t0, 3)}


def c_bad(a):
    long_prompt = "word " * (a.max_context + 10)
    cases = [
        ("malformed json", "/v1/completions", None, "{not json", 400),
        ("not an object", "/v1/completions", [1, 2], None, 400),
        ("empty body", "/v1/completions", None, "", 400),
        ("missing prompt", "/v1/completions", {"max_tokens": 4}, None, 400),
        ("prompt of wrong type", "/v1/completions", {"prompt": 5}, None, 400),
        ("max_tokens of wrong type", "/v1/completions", {"prompt": "x", "max_tokens": "ten"}, None, 400),
        ("max_tokens fractional", "/v1/completions", {"prompt": "x", "max_tokens": 1.5}, None, 400),
        ("max_tokens negative", "/v1/completions", {"prompt": "x", "max_tokens": -1}, None, 400),
        ("max_tokens past the context", "/v1/completions", {"prompt": "x", "max_tokens": a.max_context + 1}, None, 400),
        ("temperature of wrong type", "/v1/completions", {"prompt": "x", "temperature": "hot"}, None, 400),
        ("temperature out of range", "/v1/completions", {"prompt": "x", "temperature": 3}, None, 400),
        ("top_p out of range", "/v1/completions", {"prompt": "x", "top_p": 1.5}, None, 400),
        ("seed of wrong type", "/v1/completions", {"prompt": "x", "seed": "s"}, None, 400),
        ("stop of wrong type", "/v1/completions", {"prompt": "x", "stop": 5}, None, 400),
        ("too many stops", "/v1/completions", {"prompt": "x", "stop": ["a", "b", "c", "d", "e"]}, None, 400),
        ("stream of wrong type", "/v1/completions", {"prompt": "x", "stream": "yes"}, None, 400),
        ("n > 1", "/v1/completions", {"prompt": "x", "n": 2}, None, 400),
        ("several prompts", "/v1/completions", {"prompt": ["x", "y"]}, None, 400),
        ("unknown field", "/v1/completions", {"prompt": "x", "frobnicate": 1}, None, 400),
        ("echo", "/v1/completions", {"prompt": "x", "echo": True}, None, 400),
        ("logprobs", "/v1/completions", {"prompt": "x", "logprobs": 2}, None, 400),
        ("prompt past the context", "/v1/completions", {"prompt": long_prompt}, None, 400),
        ("missing messages", "/v1/chat/completions", {"max_tokens": 4}, None, 400),
        ("messages of wrong type", "/v1/chat/completions", {"messages": "hi"}, None, 400),
        ("empty messages", "/v1/chat/completions", {"messages": []}, None, 400),
        ("message without role", "/v1/chat/completions", {"messages": [{"content": "hi"}]}, None, 400),
        ("unknown role", "/v1/chat/completions", {"messages": [{"role": "wizard", "content": "hi"}]}, None, 400),
        ("content of wrong type", "/v1/chat/completions", {"messages": [{"role": "user", "content": 5}]}, None, 400),
        ("chat n > 1", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "n": 3}, None, 400),
        ("chat past the context", "/v1/chat/completions", {"messages": [{"role": "user", "content": long_prompt}]}, None, 400),
        ("body over 1 MiB", "/v1/completions", None, json.dumps({"prompt": "x" * (1 << 20)}), 413),
        ("tool without a name", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}],
                                                         "tools": [{"type": "function", "function": {}}]}, None, 400),
        ("tool message without an id", "/v1/chat/completions",
         {"messages": [{"role": "tool", "content": "18 C"}]}, None, 400),
    ]
    seen = {}
    for name, path, body, raw, want in cases:
        status, _, payload = request("POST", path, body=body, raw=raw)
        err = check_error(status, payload, want, name)
        seen[name] = {"status": status, "param": err["param"], "code": err["code"]}
    for name, method, path, want in (("unknown path", "GET", "/v1/nothing", 404), ("wrong method", "GET", "/v1/completions", 404)):
        status, _, payload = request(method, path)
        check_error(status, payload, want, name)
        seen[name] = {"status": status}
    # Tools, a tool round trip and template arguments render (the template ignores what it does not read).
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    messages = [{"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "18 C"}]
    status, _, resp = request("POST", "/v1/chat/completions",
                              {"messages": messages, "tools": [tool], "tool_choice": "auto", "max_tokens": 2,
                               "documents": [{"text": "d"}], "chat_template_kwargs": {"enable_thinking": False}})
    expect(status == 200, f"chat with tools: status {status}: {resp}")
    seen["chat with tools"] = {"status": status}
    # still serving
    completion("still alive", 4)
    return seen


def c_huge_prompt(a):
    """Prompts of megabytes: tokenized only until they pass the context, then refused."""
    text = "word " * (a.prompt_bytes // 5)
    seen = {}
    for name, path, body in (("completion", "/v1/completions", {"prompt": text, "max_tokens": 4}),
                             ("chat", "/v1/chat/completions",
                              {"messages": [{"role": "user", "content": text}], "max_tokens": 4})):
        t0 = time.time()
        status, _, payload = request("POST", path, body=body)
        seconds = time.time() - t0
        err = check_error(status, payload, 400, name)
        seen[name] = {"status": status, "code": err["code"], "param": err["param"], "message": err["message"],
                      "seconds": round(seconds, 3)}
    seen["health"] = health()["status"]
    completion("still alive", 4)
    return seen


def c_framing(a):
    """Bodies whose size the server cannot bound before reading them, and errors that never echo a body."""
    seen = {}
    c = conn()
    try:
        chunks = (b"x" * 4096 for _ in range(16))
        c.request("POST", "/v1/completions", body=chunks, headers={"Content-Type": "application/json"}, encode_chunked=True)
        r = c.getresponse()
        payload = json.loads(r.read().decode("utf-8"))
        err = check_error(r.status, payload, 411, "chunked body")
        seen["chunked"] = {"status": r.status, "code": err["code"]}
    finally:
        c.close()
    bomb = gzip.compress(json.dumps({"prompt": "x" * (20 << 20)}).encode())
    expect(len(bomb) < 64 << 10, f"the gzip body is {len(bomb)} bytes")
    status, _, payload = request("POST", "/v1/completions", raw=bomb, headers={"Content-Encoding": "gzip"})
    err = check_error(status, payload, 415, "gzip body")
    seen["gzip"] = {"status": status, "code": err["code"]}
    status, _, payload = request("POST", "/v1/completions", raw='{"prompt": ' + "y" * 500000)
    err = check_error(status, payload, 400, "malformed json with a long token")
    expect(len(err["message"]) < 400 and "y" * 300 not in err["message"], f"the error echoes the body: {err['message'][:500]}")
    seen["long token"] = {"status": status, "message_length": len(err["message"])}
    completion("still alive", 4)
    return seen


def c_slow_clients(a):
    """Clients that send a header byte at a time: each connection is dropped once its request
    has taken the server's read timeout, so /health still answers while they trickle."""
    dropped = []

    def trickle():
        s = socket.create_connection((a.host, a.port), timeout=5)
        try:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
            for _ in range(120):  # at most 30 s
                time.sleep(0.25)
                s.sendall(b"X")
        except OSError:
            dropped.append(1)
        finally:
            s.close()

    threads = [threading.Thread(target=trickle) for _ in range(40)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    start = time.monotonic()
    h = health()
    waited = time.monotonic() - start
    for t in threads:  # each ends when the server drops it, or after 30 s
        t.join()
    return {"health": h.get("status"), "health_wait_s": round(waited, 2), "dropped": len(dropped)}


def c_slow_flood(a):
    """Many connections that send half a header, then a byte a second, and reconnect when
    dropped: /health and a completion still answer at once, probed for `--seconds`."""
    half = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le"
    socks, opened, stop = [], [0], threading.Event()

    def connect():
        s = socket.create_connection((a.host, a.port), timeout=2)
        s.sendall(half)
        opened[0] += 1
        return s

    def flood():
        socks.extend(connect() for _ in range(a.requests))
        while not stop.wait(1.0):
            for i, s in enumerate(socks):
                try:
                    try:
                        gone = s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
                    except BlockingIOError:
                        gone = False
                    if gone:
                        raise ConnectionResetError
                    s.sendall(b"n")
                except OSError:  # dropped by the server: come back
                    s.close()
                    try:
                        socks[i] = connect()
                    except OSError:
                        pass

    t = threading.Thread(target=flood)
    t.start()
    try:
        wait_for(lambda: opened[0] >= a.requests, 30, f"{a.requests} connections")
        worst, probes, end = 0.0, 0, time.monotonic() + a.seconds
        while time.monotonic() < end:
            start = time.monotonic()
            expect(health()["status"] == "ok", "health")
            worst = max(worst, time.monotonic() - start)
            probes += 1
            time.sleep(0.2)
        start = time.monotonic()
        completion("still served", 2)
        completion_s = time.monotonic() - start
    finally:
        stop.set()
        t.join()
        for s in socks:
            s.close()
    return {"connections": opened[0], "probes": probes, "worst_health_s": round(worst, 3),
            "completion_s": round(completion_s, 3)}


def c_auth(a):
    saved = ARGS.api_key
    ARGS.api_key = ""
    try:
        status, _, payload = request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
        check_error(status, payload, 401, "no key")
        status, _, payload = request("GET", "/v1/models", headers={"Authorization": "Bearer wrong"})
        check_error(status, payload, 401, "wrong key")
        expect(health()["status"] == "ok", "health needs no key")
    finally:
        ARGS.api_key = saved
    completion("with key", 2)
    status, _, _ = request("GET", "/v1/models")
    expect(status == 200, "models with the key")
    return {"ok": True}


def c_cli(a):
    """Runs `hfstatic serve --port 0` itself, talks to it, stops it with SIGTERM."""
    cmd = [a.cli, "serve", "--port", "0", "--slots", "2", "-t", "1"] + (["-m", a.model] if a.model else [])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        timer = threading.Timer(30, p.kill)
        timer.start()
        line = p.stdout.readline()
        timer.cancel()
        expect("http://127.0.0.1:" in line, f"no address line: {line!r}")
        ARGS.port = int(line.split("http://127.0.0.1:")[1].split()[0])
        h = health()
        expect(h["slots"] == 2 and h["queue_max"] == 4, f"health {h}")
        wait_for(lambda: request("GET", "/ready")[0] == 200, 30, "/ready")  # the port opens before the load
        text = completion("Once upon a time", 6)["choices"][0]["text"]
        chat("Hi", 6)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=20)
        expect(rc == 0, f"exit code {rc}: {p.stderr.read()}")
        both = subprocess.run([a.cli, "serve", "--port", "0", "--lookup", "2", "--draft", a.model or "x.hfs"],
                              capture_output=True, text=True, timeout=30)
        expect(both.returncode != 0 and "only one of --lookup and --draft" in both.stderr,
               f"--lookup with --draft: {both.returncode} {both.stderr!r}")
        usage = subprocess.run([a.cli, "serve", "--help"], capture_output=True, text=True, timeout=30)
        expect("--lookup K" in usage.stdout + usage.stderr and "--draft FILE" in usage.stdout + usage.stderr,
               f"serve --help: {usage.stdout!r}")
        return {"port": ARGS.port, "text": text, "exit": rc}
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def c_speculative(a):
    """Greedy text of a server with a drafter (a.port) equals its "speculative": false text and that of a
    server without one (a.plain_port), whole and streamed; a non-boolean "speculative" is a 400."""
    prompt = "A B C A B C A B C A B"
    out = {}
    for name in ("completion", "chat"):
        def text(port, **extra):
            ARGS.port = port
            if name == "completion":
                return completion(prompt, a.max_tokens, **extra)["choices"][0]["text"]
            return chat(prompt, a.max_tokens, **extra)["choices"][0]["message"]["content"]
        plain = text(a.plain_port)
        expect(plain == text(a.plain_port, speculative=True), f"{name}: 'speculative' changed a server without drafter")
        for extra in ({}, {"speculative": True}, {"speculative": False}):
            got = text(a.port, **extra)
            expect(got == plain, f"{name} {extra}: {got!r} != {plain!r}")
        out[name] = plain
    ARGS.port = a.port
    streamed, _, _, _ = stream("/v1/completions", {"prompt": prompt, "max_tokens": a.max_tokens, "temperature": 0})
    expect(streamed == out["completion"], f"streamed {streamed!r} != {out['completion']!r}")
    for bad in ("yes", 1, [True]):
        status, _, resp = request("POST", "/v1/completions", {"prompt": "x", "speculative": bad})
        err = check_error(status, resp, 400, f"speculative {bad!r}")
        expect(err["param"] == "speculative" and "speculative" in err["message"], f"error {err}")
    out["bad_param"] = err["param"]
    return out


def c_nan(a):
    """A program whose logits are NaN: each request gets a 500 naming the position, and the server goes on."""
    messages = []
    for _ in range(2):
        body = {"model": "m", "prompt": a.prompt, "max_tokens": 4, "temperature": 0}
        status, _, resp = request("POST", "/v1/completions", body)
        err = check_error(status, resp, 500, "completion of NaN logits")
        expect("are NaN" in err["message"] and "predicting position" in err["message"], f"message: {err['message']}")
        messages.append(err["message"])
        health()
    return {"messages": messages}


CHECKS = {"nan": c_nan, "basic": c_basic, "stream": c_stream, "concurrent": c_concurrent, "queue": c_queue, "disconnect": c_disconnect,
          "bad": c_bad, "huge_prompt": c_huge_prompt, "framing": c_framing, "slow_clients": c_slow_clients, "slow_flood": c_slow_flood,
          "auth": c_auth, "cli": c_cli, "speculative": c_speculative}


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=sorted(CHECKS))
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--plain-port", type=int, default=0)
    ap.add_argument("--api-key", default="")
    ap.add_argument("--prompt", default="Once upon a time")
    ap.add_argument("--max-tokens", type=int, default=12)
    ap.add_argument("--max-context", type=int, default=512)
    ap.add_argument("--requests", type=int, default=6)
    ap.add_argument("--prompt-bytes", type=int, default=2 << 20)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--cli", default="")
    ap.add_argument("--model", default="")
    ap.add_argument("--state", default="ready", help="the /ready state the ready check expects")
    ARGS = ap.parse_args()
    try:
        out = CHECKS[ARGS.check](ARGS)
    except CheckFailed as e:
        print(f"check {ARGS.check} failed: {e}")
        return 1
    except Exception as e:  # noqa: BLE001
        print(f"check {ARGS.check} failed: {e!r}")
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
