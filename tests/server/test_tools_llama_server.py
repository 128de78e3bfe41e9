#!/usr/bin/env python3
"""Tool calls of `smolinfer serve` against llama-server's, request for request.

    SMOLINFER_MODEL=... SMOLINFER_LLAMA_SRC=... python tests/server/test_tools_llama_server.py [path/to/smolinfer]

tests/golden/tools/server.json holds what llama-server (--jinja -fa off -np 1)
answered to greedy chat requests with tools, per model file and template
(scripts/golden/tools/make-server-golden.py). This sends each request to
`smolinfer serve` on the same file and template, at the same fake date (the
Llama 3.x templates print it; libfaketime), and checks:
- /apply-template gives llama-server's prompt;
- content, tool calls (names, arguments as parsed JSON) and finish_reason
  equal llama-server's, streamed (assembled) and not, except where
  llama-server is wrong and ours does better (README, "Tool calling"):
  - a named tool_choice: llama-server treats it as "auto"; ours calls exactly
    that function, with arguments valid under its schema (checked with the
    jsonschema package);
  - llama-server answers HTTP 500 when the output does not parse; ours
    answers 200 with the text as content;
  - a call cut off at max_tokens: llama-server returns it as a tool call (its
    arguments not JSON); ours returns no call.
Prints "tools vs llama-server: N passed, N failed"; exits non-zero on a failure.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_openai_client as base  # noqa: E402
from test_openai_client import Server, check, expect  # noqa: E402
from test_tools import collect_stream  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = json.loads((ROOT / "tests/golden/tools/server.json").read_text())
LLAMA_SRC = Path(os.environ.get("SMOLINFER_LLAMA_SRC", ""))
RANDOM_MODEL_TOOL = Path(base.BINARY).parent / "tests" / "make_random_model"


def faketime_env():
    lib = next((p for p in ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                            "/usr/lib/faketime/libfaketime.so.1"] if os.path.exists(p)), None)
    expect(lib is not None, "libfaketime is missing (scripts/install-deps installs faketime)")
    return dict(os.environ, LD_PRELOAD=lib, FAKETIME="@" + GOLDEN["fake_time"], TZ="UTC", FAKETIME_DONT_RESET="1")


def model_file(setup, tmp):
    m = setup["model"]
    if "random" in m:
        path = Path(tmp) / f"{m['random']}.gguf"
        if not path.exists():
            subprocess.run([str(RANDOM_MODEL_TOOL), m["random"], str(path)], check=True, stdout=subprocess.DEVNULL)
    else:
        path = Path(base.MODEL)
    h = hashlib.sha256(path.read_bytes()).hexdigest()
    expect(h == m["sha256"], f"{setup['name']}: {path} is not the file the golden was made from ({h})")
    return str(path)


def parsed(calls):
    out = []
    for c in calls:
        try:
            args = json.loads(c["arguments"])
        except json.JSONDecodeError:
            args = ("not JSON", c["arguments"])
        out.append((c["name"], args))
    return out


def named_function(request):
    choice = request["tool_choice"]
    return choice["function"]["name"] if isinstance(choice, dict) else None


def ours(server, request):
    """(status, content, calls, finish), whole; the stream assembled must agree."""
    r = server.http.post("/v1/chat/completions", json=request)
    if r.status_code != 200:
        return r.status_code, None, [], None
    choice = r.json()["choices"][0]
    msg = choice["message"]
    calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in msg.get("tool_calls") or []]
    content, s_calls, s_finish = collect_stream(server.client().chat.completions.create(model="m", stream=True, **request))
    expect(content == (msg.get("content") or ""), f"streamed content {content!r} != {msg.get('content')!r}")
    expect([(c["name"], c["arguments"]) for c in s_calls] == [(c["name"], c["arguments"]) for c in calls],
           f"streamed calls {s_calls} != {calls}")
    expect(s_finish == choice["finish_reason"], f"streamed finish {s_finish} != {choice['finish_reason']}")
    return 200, msg.get("content"), calls, choice["finish_reason"]


def compare_case(server, case, counts):
    request, theirs = case["request"], case["response"]
    got = server.http.post("/apply-template", json={k: request[k] for k in ("messages", "tools", "tool_choice")})
    expect(got.status_code == 200, got.text[:300])
    expect(got.json()["prompt"] == case["prompt"], f"prompt differs:\n{got.json()['prompt']!r}\n{case['prompt']!r}")
    status, content, calls, finish = ours(server, request)
    expect(status == 200, f"HTTP {status}")
    name = named_function(request)
    if name and name in case["prompt"]:
        # llama-server treats a named choice as "auto"; ours calls exactly that
        # function (a template that shows no tools, SmolLM2's own, calls none).
        # A random-weight model may still write one string until max_tokens:
        # a cut-off call is no call.
        tool = next(t for t in request["tools"] if t["function"]["name"] == name)
        if not calls:
            expect(finish == "length", f"named {name}: no call, finish {finish}")
            counts["named_cut_off"] += 1
            return
        expect([c["name"] for c in calls] == [name] and finish in ("tool_calls", "length"), f"named {name}: {calls} {finish}")
        jsonschema.validate(json.loads(calls[0]["arguments"]), tool["function"]["parameters"])
        counts["named"] += 1
        return
    if theirs["status"] != 200:
        # llama-server lost the text (HTTP 500: output that does not parse); ours keeps it as content.
        expect(not calls and isinstance(content, str), f"after llama-server's {theirs['status']}: {calls} {content!r}")
        counts["their_error"] += 1
        return
    their_calls = parsed(theirs["tool_calls"])
    if theirs["finish_reason"] == "length" and any(isinstance(a, tuple) for _, a in their_calls):
        # A call cut off at max_tokens: llama-server returns it anyway, ours returns none.
        expect(not calls and finish == "length", f"cut-off call: ours {calls} {finish}")
        counts["cut_off"] += 1
        return
    expect(parsed(calls) == their_calls, f"tool calls {parsed(calls)} != llama-server's {their_calls}")
    expect((content or None) == (theirs["content"] or None), f"content {content!r} != {theirs['content']!r}")
    expect(finish == theirs["finish_reason"], f"finish {finish} != {theirs['finish_reason']}")
    counts["equal"] += 1


def main():
    expect(LLAMA_SRC.is_dir(), "SMOLINFER_LLAMA_SRC must point at llama.cpp's source (its templates)")
    env = faketime_env()
    totals = {"equal": 0, "named": 0, "named_cut_off": 0, "their_error": 0, "cut_off": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for setup in GOLDEN["setups"]:
            extra = ["-fa", "off", "-t", "1"]  # one core: make test runs this suite beside others
            if setup["template"]:
                extra += ["--chat-template-file", str(LLAMA_SRC / setup["template"]["llama_source"])]
            server = Server(*extra, model=model_file(setup, tmp), context=GOLDEN["context"], env=env)
            try:
                for case in setup["cases"]:
                    check(f"{setup['name']} {case['name']}", lambda: compare_case(server, case, totals))
            finally:
                expect(server.stop() == 0, "server exit code")
    check("each kind of case was met", lambda: expect(
        totals["equal"] >= 30 and totals["named"] >= 2 and totals["their_error"] >= 1 and totals["cut_off"] >= 1,
        str(totals)))
    print(f"  compared: {totals['equal']} equal to llama-server's answer, {totals['named']} named choices "
          f"(ours calls that function; {totals['named_cut_off']} more cut off at max_tokens), "
          f"{totals['their_error']} where llama-server failed, {totals['cut_off']} calls llama-server returned cut off")
    print(f"tools vs llama-server: {base.passed} passed, {base.failed} failed")
    return 1 if base.failed else 0


if __name__ == "__main__":
    sys.exit(main())
