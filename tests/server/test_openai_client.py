#!/usr/bin/env python3
"""End-to-end test of `smolinfer serve` with the official `openai` Python client.

    SMOLINFER_MODEL=... python tests/server/test_openai_client.py [path/to/smolinfer]

Starts the server (port 0: it prints the port it chose), then checks what a
user of the OpenAI API relies on: listing models, chat and completions with
and without streaming, JSON-schema output, stop sequences, an OpenAI-style
error for each kind of bad request (the server still serving afterwards),
the API key, the bounded queue, a client that hangs up, SIGTERM, batch
invariance (16 concurrent streams each get exactly the text they get alone),
and prefix reuse (prompts on cached cells get a fresh server's tokens and
log-probabilities bit for bit).
Prints "server: N passed, N failed"; exits non-zero when anything failed.
"""
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import httpx
import openai
from openai import OpenAI

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build/native/smolinfer"
MODEL = os.environ.get("SMOLINFER_MODEL", str(Path.home() / ".cache/smolinfer/SmolLM2-135M-Instruct.Q4_1.gguf"))
CONTEXT = 512
MAX_BODY = 65536

passed = 0
failed = 0


def check(name, fn):
    global passed, failed
    t0 = time.monotonic()
    try:
        fn()
        passed += 1
        print(f"  ok   {name} ({time.monotonic() - t0:.1f} s)", flush=True)
    except Exception:
        failed += 1
        print(f"  FAIL {name}", flush=True)
        traceback.print_exc()


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


class Server:
    def __init__(self, *extra, model=None, context=CONTEXT, env=None):
        self.proc = subprocess.Popen(
            [str(BINARY), "serve", "-m", model or MODEL, "--port", "0", "-c", str(context), "--max-body", str(MAX_BODY),
             *extra],
            stdout=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        expect(line.startswith("smolinfer serve: listening on http://127.0.0.1:"), f"unexpected first line {line!r}")
        self.port = int(line.split("127.0.0.1:")[1].split()[0])
        self.url = f"http://127.0.0.1:{self.port}"
        # trust_env=False: no proxy from the environment for a local server.
        self.http = httpx.Client(base_url=self.url, trust_env=False, timeout=120)

    def client(self, key="none"):
        return OpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0,
                      http_client=httpx.Client(trust_env=False, timeout=120))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def greedy_chat(client, text, max_tokens=24, **kw):
    return client.chat.completions.create(
        model="any", messages=[{"role": "user", "content": text}], max_tokens=max_tokens, temperature=0, **kw)


def streamed_text(client, text, max_tokens=24):
    stream = client.chat.completions.create(
        model="any", messages=[{"role": "user", "content": text}], max_tokens=max_tokens, temperature=0, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def chat_logprobs_of(client, messages, max_tokens=8):
    """Greedy tokens with their log-probabilities (and top 5): equal lists mean bit-identical floats."""
    r = client.chat.completions.create(model="any", messages=messages, max_tokens=max_tokens, temperature=0,
                                       logprobs=True, top_logprobs=5)
    return [(t.token, t.logprob, [(x.token, x.logprob) for x in t.top_logprobs]) for t in r.choices[0].logprobs.content]


# Prompts for the reuse check: REUSE_FIRST runs first on a fresh server (its
# truth), again once the server has cached other prompts with the same
# system prompt; REUSE_TURN (the conversation going on) runs on a server
# that cached its first turn, and first on a fresh server.
REUSE_FIRST = [{"role": "user", "content": "What color is the sky?"}]
REUSE_OPENING = [{"role": "user", "content": "Write a haiku about the sea."}]


def expect_error(server, status, err_type, body=None, method="POST", path="/v1/chat/completions", raw=None, headers=None,
                 message_part=None):
    if raw is not None:
        r = server.http.request(method, path, content=raw, headers=headers or {})
    elif body is not None:
        r = server.http.request(method, path, json=body, headers=headers or {})
    else:
        r = server.http.request(method, path, headers=headers or {})
    expect(r.status_code == status, f"{method} {path}: status {r.status_code}, expected {status}: {r.text[:200]}")
    e = r.json()["error"]
    expect(e["type"] == err_type, f"error type {e['type']!r}, expected {err_type!r}")
    expect(isinstance(e["message"], str) and e["message"], "an error message")
    expect("code" in e and "param" in e, "error.code and error.param present")
    if message_part:
        expect(message_part in e["message"], f"{message_part!r} not in {e['message']!r}")
    return r


def metric(server, name):
    text = server.http.get("/metrics", headers={"Authorization": "Bearer secret"}).text
    return int(text.split(f"\n{name} ")[1].split()[0])


def queue_length(server):
    return metric(server, "smolinfer_queue_length")


def generated_tokens(server):
    return metric(server, "smolinfer_generated_tokens_total")


def main():
    expect(BINARY.exists(), f"{BINARY} not built")
    expect(Path(MODEL).exists(), f"no model at {MODEL} (set SMOLINFER_MODEL)")
    print(f"server: openai {openai.__version__}, {BINARY}, {Path(MODEL).name}")

    server = Server("--parallel", "8")
    client = server.client()
    user = "user"

    def models():
        data = client.models.list().data
        expect([m.id for m in data] == [Path(MODEL).name], f"models {[m.id for m in data]}")
        expect(data[0].object == "model", "object model")
    check("models.list", models)

    def health():
        r = server.http.get("/health")
        expect(r.status_code == 200 and r.json() == {"status": "ok"}, r.text)
    check("GET /health", health)

    def embeddings():
        texts = ["The cat sat on the mat.", "Ein Hund läuft über die Straße, schnell."]
        # The CLI's vectors are the truth: the same engine, one process per text.
        want = [json.loads(subprocess.run([str(BINARY), "embed", "-m", MODEL, "-c", str(CONTEXT), "-p", t],
                                          capture_output=True, text=True, check=True).stdout) for t in texts]
        f32 = lambda v: [struct.unpack("<f", struct.pack("<f", x))[0] for x in v]
        # The client's default encoding is base64; both encodings give the CLI's floats.
        one = client.embeddings.create(model="m", input=texts[0])
        expect(len(one.data) == 1 and one.data[0].index == 0, "one input, one vector")
        expect(f32(one.data[0].embedding) == f32(want[0]), "base64 vector equals the CLI's")
        expect(one.usage.prompt_tokens == one.usage.total_tokens > 0, f"usage {one.usage}")
        many = client.embeddings.create(model="m", input=texts, encoding_format="float")
        expect([d.index for d in many.data] == [0, 1], "one vector per input, in order")
        for d, w in zip(many.data, want):
            expect(f32(d.embedding) == f32(w), f"input {d.index}: the float vector equals the CLI's")
        short = client.embeddings.create(model="m", input=texts[0], dimensions=64, encoding_format="float").data[0].embedding
        expect(len(short) == 64 and abs(sum(x * x for x in short) - 1) < 1e-5, "dimensions: 64 values, unit length")
        try:
            client.embeddings.create(model="m", input=["fine", ""])
            raise AssertionError("an empty input was accepted")
        except openai.BadRequestError as e:
            expect("empty string" in str(e) and "input[1]" in str(e), str(e))
    check("embeddings: base64 and float, one input and a list, equal to smolinfer embed", embeddings)

    # Nothing cached yet: the truth for the reuse check below.
    fresh_first = chat_logprobs_of(client, REUSE_FIRST)
    reused = {}

    def chat():
        r = greedy_chat(client, "What is the capital of France?")
        expect(r.object == "chat.completion" and r.id.startswith("chatcmpl-"), f"{r.object} {r.id}")
        c = r.choices[0]
        expect(c.message.role == "assistant" and c.message.content, f"message {c.message}")
        expect(c.finish_reason in ("stop", "length"), c.finish_reason)
        expect(r.usage.prompt_tokens > 0 and 0 < r.usage.completion_tokens <= 24, f"usage {r.usage}")
        expect(r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, "total_tokens")
        expect(r.model == "any", "the model field echoes the request")
        # Streaming gives the same text, role chunk first, usage last.
        stream = client.chat.completions.create(
            model="any", messages=[{"role": user, "content": "What is the capital of France?"}], max_tokens=24,
            temperature=0, stream=True, stream_options={"include_usage": True})
        chunks = list(stream)
        expect(chunks[0].choices[0].delta.role == "assistant", "role chunk first")
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        expect(text == c.message.content, f"stream {text!r} != {c.message.content!r}")
        finals = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        expect(finals == [c.finish_reason], f"finish reasons {finals}")
        expect(chunks[-1].choices == [] and chunks[-1].usage.total_tokens == r.usage.total_tokens, "usage chunk")
        expect(all(k.object == "chat.completion.chunk" and k.id == chunks[0].id for k in chunks), "chunk ids")
    check("chat: non-streaming and streaming agree", chat)

    def completions():
        r = client.completions.create(model="any", prompt="Once upon a time", max_tokens=12, temperature=0, logprobs=2)
        c = r.choices[0]
        expect(r.object == "text_completion" and c.text, f"{r}")
        expect(c.finish_reason == "length" and r.usage.completion_tokens == 12, f"{c.finish_reason} {r.usage}")
        expect(len(c.logprobs.tokens) == 12 and "".join(c.logprobs.tokens) == c.text, f"{c.logprobs.tokens}")
        expect(all(len(t) <= 2 for t in c.logprobs.top_logprobs), "top_logprobs")
        streamed = "".join(k.choices[0].text for k in client.completions.create(
            model="any", prompt="Once upon a time", max_tokens=12, temperature=0, stream=True))
        expect(streamed == c.text, f"{streamed!r} != {c.text!r}")
    check("completions: text, logprobs, streaming", completions)

    def chat_logprobs():
        r = greedy_chat(client, "Say hi", max_tokens=5, logprobs=True, top_logprobs=3)
        content = r.choices[0].logprobs.content
        expect(len(content) == r.usage.completion_tokens, "one entry per token")
        for t in content:
            expect(t.logprob <= 0 and len(t.top_logprobs) == 3, f"{t}")
            # Greedy: the sampled token is the most likely one.
            expect(t.top_logprobs[0].token == t.token and t.top_logprobs[0].logprob == t.logprob, f"{t}")
            expect(bytes(t.bytes).decode("utf-8", "replace") == t.token, "bytes")
    check("chat: logprobs", chat_logprobs)

    def json_schema():
        schema = {"type": "object",
                  "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer"}},
                  "required": ["name", "age"], "additionalProperties": False}
        r = client.chat.completions.create(
            model="any", messages=[{"role": "user", "content": "Describe a person as JSON."}], max_tokens=40,
            temperature=0, response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": schema}})
        value = json.loads(r.choices[0].message.content)
        expect(set(value) == {"name", "age"} and isinstance(value["age"], int), f"{value}")
        r = client.chat.completions.create(
            model="any", messages=[{"role": "user", "content": 'Reply with a JSON object like {"city": "Paris"}.'}],
            max_tokens=40, temperature=0,
            response_format={"type": "json_object"})
        expect(isinstance(json.loads(r.choices[0].message.content), dict), r.choices[0].message.content)
    check("response_format: json_schema and json_object parse", json_schema)

    def stop_sequences():
        full = greedy_chat(client, "Count from one to ten in words.", max_tokens=24).choices[0].message.content
        words = full.split()
        expect(len(words) > 4, f"too short to cut: {full!r}")
        stop = " " + words[3]
        r = greedy_chat(client, "Count from one to ten in words.", max_tokens=24, stop=[stop, "zzzz"])
        expect(r.choices[0].message.content == full[:full.index(stop)], f"{r.choices[0].message.content!r} vs {full!r}")
        expect(r.choices[0].finish_reason == "stop", r.choices[0].finish_reason)
    check("stop sequences", stop_sequences)

    def bad_requests():
        msgs = [{"role": "user", "content": "hi"}]
        expect_error(server, 400, "invalid_request_error", raw=b'{"messages": [', message_part="not valid JSON")
        expect_error(server, 400, "invalid_request_error", raw=b'[1, 2]')
        expect_error(server, 400, "invalid_request_error", {"messages": msgs, "temperature": "hot"}, message_part="'temperature'")
        expect_error(server, 400, "invalid_request_error", {"messages": msgs, "bogus": 1}, message_part="unknown field 'bogus'")
        expect_error(server, 400, "invalid_request_error", {"messages": msgs, "max_tokens": -1}, message_part="'max_tokens'")
        expect_error(server, 400, "invalid_request_error", {"messages": msgs, "max_tokens": 2 ** 40}, message_part="'max_tokens'")
        expect_error(server, 400, "invalid_request_error", {"messages": msgs, "n": 2})
        expect_error(server, 400, "invalid_request_error", {"messages": msgs, "grammar": "root ::= ("})
        long_prompt = "word " * (CONTEXT * 2)
        expect_error(server, 400, "invalid_request_error", {"prompt": long_prompt}, path="/v1/completions",
                     message_part="context")
        expect_error(server, 413, "invalid_request_error", raw=b'{"prompt": "' + b"a" * (MAX_BODY + 10) + b'"}',
                     path="/v1/completions")
        expect_error(server, 404, "invalid_request_error", {"x": 1}, path="/v1/images/generations")
        expect_error(server, 405, "invalid_request_error", method="GET", path="/v1/chat/completions")
        expect_error(server, 405, "invalid_request_error", method="POST", path="/health", raw=b"{}")
        # The official client raises the matching exception.
        try:
            client.chat.completions.create(model="any", messages=msgs, max_tokens=-5)
            raise AssertionError("accepted max_tokens -5")
        except openai.BadRequestError as e:
            expect(e.status_code == 400 and "max_tokens" in str(e), str(e))
        # Still serving.
        expect(greedy_chat(client, "Hi", max_tokens=3).usage.completion_tokens > 0, "a request after the errors")
    check("bad requests: status and OpenAI error, server still serves", bad_requests)

    def batch_invariance():
        prompts = [f"Tell me one fact about the number {i}." if i % 2 else f"Write a short line about topic {i}: rivers."
                   for i in range(16)]
        solo = [streamed_text(client, p) for p in prompts]
        together = [None] * 16
        errors = []

        def run(i):
            try:
                together[i] = streamed_text(client, prompts[i])
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"{i}: {e!r}")
        threads = [threading.Thread(target=run, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        expect(not errors, f"errors: {errors}")
        diff = [i for i in range(16) if together[i] != solo[i]]
        expect(not diff, "differ from their solo runs: " + "; ".join(f"{i}: {together[i]!r} vs {solo[i]!r}" for i in diff))
        expect(all(solo), "every answer has text")
    check("batch invariance: 16 concurrent streams (--parallel 8) equal their solo runs", batch_invariance)

    def reuse_on_a_warm_server():
        # Every chat prompt so far began with the template's system prompt:
        # this one reuses cached cells, and must still equal its fresh run.
        expect(chat_logprobs_of(client, REUSE_FIRST) == fresh_first, "differs from its run on the fresh server")
        # Again at once: all but its last tokens are cached now.
        expect(chat_logprobs_of(client, REUSE_FIRST) == fresh_first, "sent twice, differs from its fresh run")
        opening = client.chat.completions.create(model="any", messages=REUSE_OPENING, max_tokens=10, temperature=0)
        reused["turn"] = REUSE_OPENING + [{"role": "assistant", "content": opening.choices[0].message.content},
                                          {"role": "user", "content": "Another one."}]
        reused["warm"] = chat_logprobs_of(client, reused["turn"])
    check("prefix reuse: a prompt on cached cells equals its fresh run bit for bit", reuse_on_a_warm_server)

    def metrics():
        text = server.http.get("/metrics").text
        expect('smolinfer_requests_total{endpoint="/v1/chat/completions",status="200"}' in text, text[:300])
        expect('status="400"' in text, "400s counted")
        for name in ("smolinfer_prompt_tokens_total", "smolinfer_generated_tokens_total", "smolinfer_queue_length",
                     "smolinfer_running_sequences", "smolinfer_decode_tokens_per_second"):
            expect(f"\n{name} " in text, f"{name} missing")
        generated = int(text.split("\nsmolinfer_generated_tokens_total ")[1].split()[0])
        expect(generated > 16 * 20, f"generated tokens {generated}")
    check("GET /metrics", metrics)

    def sigterm_ends_streams():
        done = {}
        streaming = threading.Event()

        def stream():
            with server.http.stream("POST", "/v1/completions",
                                    json={"prompt": "Once upon a time", "max_tokens": 400, "stream": True}) as r:
                lines = []
                for line in r.iter_lines():
                    if line:
                        lines.append(line)
                        streaming.set()
                done["lines"] = lines
        t = threading.Thread(target=stream)
        t.start()
        expect(streaming.wait(timeout=60), "the stream started")
        code = server.stop()
        t.join(timeout=30)
        expect(code == 0, f"exit code {code}")
        lines = done.get("lines", [])
        expect(lines and lines[-1] == "data: [DONE]", f"stream ended with {lines[-2:]}")
        expect('"finish_reason":"stop"' in lines[-2], f"last chunk {lines[-2]}")
    check("SIGTERM: in-flight stream ends with [DONE], exit 0", sigterm_ends_streams)

    # A server with an API key, one sequence and a queue of one.
    keyed = Server("--parallel", "1", "--queue", "1", "--api-key", "secret")

    def conversation_reuse():
        expect("warm" in reused, "the warm run failed")
        fresh = chat_logprobs_of(keyed.client("secret"), reused["turn"])  # its first request: nothing cached
        expect(reused["warm"] == fresh, "a conversation going on, on the first turn's cells, differs from a fresh run")
    check("prefix reuse: a conversation going on equals a fresh server's run bit for bit", conversation_reuse)

    def api_key():
        try:
            keyed.client("wrong").models.list()
            raise AssertionError("accepted a wrong key")
        except openai.AuthenticationError as e:
            expect(e.status_code == 401, str(e))
        expect_error(keyed, 401, "authentication_error", method="GET", path="/v1/models")
        expect(keyed.http.get("/health").status_code == 200, "/health needs no key")
        expect(greedy_chat(keyed.client("secret"), "Hi", max_tokens=3).choices[0].message.content, "the right key works")
    check("API key: 401 for a wrong or missing key", api_key)

    def queue_full_and_disconnect():
        auth = {"Authorization": "Bearer secret"}
        generated_before = generated_tokens(keyed)
        body = {"prompt": "Once upon a time", "max_tokens": 480, "stream": True}
        first = keyed.http.stream("POST", "/v1/completions", json=body, headers=auth)
        r1 = first.__enter__()
        lines = r1.iter_lines()
        expect(next(lines).startswith("data: "), "the first stream runs")
        waiting = {}
        t = threading.Thread(target=lambda: waiting.update(
            r=keyed.http.post("/v1/completions", json={"prompt": "Hi", "max_tokens": 2}, headers=auth)))
        t.start()
        deadline = time.monotonic() + 30
        while queue_length(keyed) != 1:  # the second request waits in the queue now
            expect(time.monotonic() < deadline, "the second request never queued")
            time.sleep(0.05)
        r3 = expect_error(keyed, 503, "server_error", {"prompt": "Hi", "max_tokens": 2}, path="/v1/completions", headers=auth)
        expect(r3.headers.get("Retry-After") == "1", "Retry-After: 1")
        # The first client hangs up: its sequence ends at once, so the queued one runs.
        # (Counted from the hang-up: how many tokens came before it depends
        # on the machine's speed and load, 52 once in CI.)
        at_hangup = generated_tokens(keyed) - generated_before
        expect(at_hangup < 400, f"the first stream was nearly done ({at_hangup} tokens) before the test hung up")
        first.__exit__(None, None, None)
        t.join(timeout=60)
        expect(not t.is_alive() and waiting["r"].status_code == 200, "the queued request ran after the disconnect")
        # The first stream's sequence ended when its client left, not after its 480 tokens.
        after = generated_tokens(keyed) - generated_before - at_hangup
        expect(after < 40, f"{after} tokens generated after the hang-up: the disconnected stream was not cancelled")
    check("queue bound (503 + Retry-After) and a disconnect frees the sequence", queue_full_and_disconnect)
    expect(keyed.stop() == 0, "keyed server exit code")

    print(f"server: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:
        traceback.print_exc()
        print(f"server: {passed} passed, {failed + 1} failed")
        sys.exit(1)
