#!/usr/bin/env python3
"""Connection soak of `smolinfer serve` with the official `openai` client (make bench, not CI).

    SMOLINFER_MODEL=... build/venv-server/bin/python tests/server/soak.py [path/to/smolinfer] [--minutes M]

A user's traffic, not a benchmark: a server with --parallel 8 on two engine
threads gets rounds of 1, 4, 8 and 16 concurrent streaming chats, each
stream from a new client (a new connection) while the clients of earlier
rounds stay alive with their connections idle, bad requests in between,
and a long-lived client that comes back after idling about as long as the
server keeps an idle connection (the moment a server may close it as the
client reuses it). No request may fail: every stream ends with its finish
chunk, every bad request gets its 4xx. Prints "soak: N requests, N failed"
and exits non-zero on any failure.
"""
import argparse
import os
import sys
import threading
import time
import traceback
from pathlib import Path

import httpx
from openai import OpenAI

ROOT = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?", default=str(ROOT / "build/native/smolinfer"))
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--extra", default="", help="more serve flags, space separated")
    args = ap.parse_args()
    model = os.environ.get("SMOLINFER_MODEL", str(Path.home() / ".cache/smolinfer/SmolLM2-135M-Instruct.Q4_1.gguf"))

    import subprocess
    proc = subprocess.Popen([args.binary, "serve", "-m", model, "--port", "0", "-c", "2048", "--parallel", "8",
                             "-t", "2", *args.extra.split()], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on http://127.0.0.1:" not in line:
        print(f"soak: the server did not start: {line!r}")
        return 1
    url = "http://127.0.0.1:" + line.split("127.0.0.1:")[1].split()[0]

    def client():
        # max_retries=0: a connection error is a failure, not something to paper over.
        return OpenAI(base_url=url + "/v1", api_key="none", max_retries=0,
                      http_client=httpx.Client(trust_env=False, timeout=120))

    lock = threading.Lock()
    counts = {"requests": 0, "failed": 0}
    idle_clients = []  # kept alive: their connections stay open, idle

    def record(ok, what):
        with lock:
            counts["requests"] += 1
            if not ok:
                counts["failed"] += 1
                print(f"  FAIL {what}", flush=True)

    def stream_chat(c, text, max_tokens, where):
        """One greedy streamed chat; it must end with its finish chunk."""
        try:
            stream = c.chat.completions.create(model="any", messages=[{"role": "user", "content": text}],
                                               max_tokens=max_tokens, temperature=0, stream=True)
            finish = [ch.choices[0].finish_reason for ch in stream if ch.choices and ch.choices[0].finish_reason]
            record(finish in (["stop"], ["length"]), f"{where}: finish {finish}")
        except Exception as e:  # noqa: BLE001 - every kind of failure counts
            record(False, f"{where}: {type(e).__name__}: {e}")

    def stream_one(i, r):
        c = client()
        with lock:
            idle_clients.append(c)
        stream_chat(c, f"Round {r}, stream {i}: name a color.", 16, f"round {r} stream {i}")

    def bad_requests(r):
        c = client()
        idle_clients.append(c)
        # A body over --max-body (1 MiB by default): a 413, not a reset.
        try:
            c.chat.completions.create(model="any", messages=[{"role": "user", "content": "x" * (3 << 20)}])
            record(False, f"round {r}: an oversized body was accepted")
        except Exception as e:  # noqa: BLE001
            record(getattr(e, "status_code", 0) == 413, f"round {r}: oversized body: {type(e).__name__}: {e}")
        # A client that hangs up in the middle of a stream.
        try:
            stream = client().chat.completions.create(
                model="any", messages=[{"role": "user", "content": "Count to fifty."}], max_tokens=64, stream=True)
            next(iter(stream))
            stream.close()
            record(True, "")
        except Exception as e:  # noqa: BLE001
            record(False, f"round {r}: hang-up: {type(e).__name__}: {e}")
        for body in ({"model": "any", "messages": []}, {"model": "any", "messages": [{"role": "user", "content": "x"}],
                                                         "max_tokens": -1}):
            try:
                c.chat.completions.create(**body)
                record(False, f"round {r}: a bad request was accepted")
            except Exception as e:  # noqa: BLE001
                record(getattr(e, "status_code", 0) == 400, f"round {r}: bad request: {type(e).__name__}: {e}")

    long_lived = client()

    def pooled_stream(i, r):
        stream_chat(long_lived, f"Round {r}, pooled {i}: name a fruit.", 8,
                    f"round {r} pooled {i} (a connection idle ~5 s)")

    deadline = time.monotonic() + args.minutes * 60
    r = 0
    try:
        while time.monotonic() < deadline:
            r += 1
            for n in (1, 4, 8, 16):
                threads = [threading.Thread(target=stream_one, args=(i, r)) for i in range(n)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                bad_requests(r)
            # The long-lived client comes back with 8 streams on its 8 pooled
            # connections after idling near the keep-alive time of the server
            # (and of httpx's pool, 5 s): a request may meet the server closing.
            time.sleep(4.6 + (r % 9) * 0.1)
            threads = [threading.Thread(target=pooled_stream, args=(i, r)) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if len(idle_clients) > 400:
                for c in idle_clients[:200]:
                    c.close()
                del idle_clients[:200]
            print(f"soak: round {r}: {counts['requests']} requests, {counts['failed']} failed, "
                  f"{len(idle_clients)} idle clients", flush=True)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        counts["failed"] += 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"soak: {counts['requests']} requests, {counts['failed']} failed")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
