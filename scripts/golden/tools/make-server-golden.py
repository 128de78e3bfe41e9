#!/usr/bin/env python3
"""Tool calls as llama-server makes them, end to end: tests/golden/tools/server.json.

    SMOLINFER_MODEL=SmolLM2.Q4_1.gguf SMOLINFER_LLAMA_SRC=llama.cpp \\
        python3 scripts/golden/tools/make-server-golden.py [--llama-server BIN] [--random-model-tool BIN] [--out FILE]

For each setup (a model file and a chat template) it starts llama.cpp's
llama-server (`--jinja -fa off -np 1`, bench/build-llama-server builds it from
the source node-llama-cpp ships) and sends greedy chat requests with tools
under every tool_choice, recording the rendered prompt (/apply-template) and
the response (content, tool_calls, finish_reason, or the HTTP error).
tests/server/test_tools_llama_server.py sends the same requests to
`smolinfer serve` and compares.

Setups: the real SmolLM2-135M with its own template, with llama.cpp's Hermes 2
Pro tool-use template and with its Llama 3.2 template (--chat-template-file on
both servers); the random-weight qwen2 and llama3 family files
(tests/make_random_model, recorded by sha256) with the Qwen2.5 and Llama 3.2
templates.

Llama 3.x templates print today's date, which llama.cpp takes from the clock:
both servers run under libfaketime (Debian's `faketime`) at FAKE_TIME, so the
golden does not depend on the day it was made or checked.

llama.cpp must run its AVX-512 arithmetic (the one smolinfer reproduces): the
script refuses on a CPU without avx512f + avx512_vnni unless GOLDEN_ALLOW_AVX2=1.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FAKE_TIME = "2026-12-05 12:00:00"  # libfaketime's "@" start: the clock then runs from there
CONTEXT = 4096
MAX_TOKENS = 48

ADD = {"type": "function", "function": {"name": "add", "description": "Add two integers",
       "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                      "required": ["a", "b"]}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                          "required": ["city"]}}}
SEARCH = {"type": "function", "function": {"name": "search_notes", "description": "Search the user's notes",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"},
                                                          "limit": {"type": "integer", "minimum": 1, "maximum": 10},
                                                          "tags": {"type": "array", "items": {"type": "string"}}},
                         "required": ["query"]}}}

# Conversations: a plain question, one with a system message, and a second
# turn after a call and its result (the assistant's tool_calls and the tool
# message go back through the template).
CONVERSATIONS = {
    "weather": [{"role": "user", "content": "Is it raining in Lisbon right now?"}],
    "system_notes": [{"role": "system", "content": "You are a careful assistant with access to the user's notes."},
                     {"role": "user", "content": "Find my notes about the garden, at most three."}],
    "after_result": [
        {"role": "user", "content": "What is 17 plus 25?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_7", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 17, \"b\": 25}"}}]},
        {"role": "tool", "tool_call_id": "call_7", "content": "42"},
    ],
}


def requests():
    """(name, OpenAI request body) for every case."""
    out = []
    tool_sets = {"weather": [WEATHER, ADD], "system_notes": [SEARCH, WEATHER], "after_result": [ADD, WEATHER]}
    for conv, messages in CONVERSATIONS.items():
        tools = tool_sets[conv]
        first = tools[0]["function"]["name"]
        choices = [("auto", "auto"), ("required", "required"), ("none", "none"),
                   ("named", {"type": "function", "function": {"name": first}})]
        for label, choice in choices:
            for parallel in ([False, True] if label == "required" else [False]):
                body = {"messages": messages, "tools": tools, "tool_choice": choice,
                        "temperature": 0, "max_tokens": MAX_TOKENS}
                if parallel:
                    body["parallel_tool_calls"] = True
                out.append((f"{conv}/{label}{'/parallel' if parallel else ''}", body))
    return out


def setups(llama_src, smollm2, random_dir):
    tpl = lambda name: {"llama_source": f"models/templates/{name}"}
    return [
        {"name": "smollm2-own", "model": {"file": "SMOLINFER_MODEL"}, "template": None, "path": smollm2},
        {"name": "smollm2-hermes-2-pro", "model": {"file": "SMOLINFER_MODEL"},
         "template": tpl("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja"), "path": smollm2},
        {"name": "smollm2-llama-3.2", "model": {"file": "SMOLINFER_MODEL"},
         "template": tpl("meta-llama-Llama-3.2-3B-Instruct.jinja"), "path": smollm2},
        {"name": "random-qwen2", "model": {"random": "qwen2"}, "template": tpl("Qwen-Qwen2.5-7B-Instruct.jinja"),
         "path": random_dir / "qwen2.gguf"},
        {"name": "random-llama3", "model": {"random": "llama3"}, "template": tpl("meta-llama-Llama-3.2-3B-Instruct.jinja"),
         "path": random_dir / "llama3.gguf"},
    ]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def faketime_env():
    lib = next((p for p in ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                            "/usr/lib/faketime/libfaketime.so.1"] if os.path.exists(p)), None)
    if not lib:
        sys.exit("make-server-golden: libfaketime is missing (apt-get install faketime)")
    return dict(os.environ, LD_PRELOAD=lib, FAKETIME="@" + FAKE_TIME, TZ="UTC", FAKETIME_DONT_RESET="1")


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_setup(server_bin, llama_src, setup):
    port = free_port()
    args = [server_bin, "-m", str(setup["path"]), "--jinja", "-fa", "off", "-np", "1", "-c", str(CONTEXT), "-t", "2",
            "--host", "127.0.0.1", "--port", str(port), "--no-webui"]
    if setup["template"]:
        args += ["--chat-template-file", str(llama_src / setup["template"]["llama_source"])]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=faketime_env())
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                pass
            if proc.poll() is not None:
                log.seek(0)
                sys.exit(f"llama-server exited:\n{log.read().decode(errors='replace')[-3000:]}")
            time.sleep(0.2)
        cases = []
        for name, body in requests():
            status, prompt = post(port, "/apply-template", {k: body[k] for k in ("messages", "tools", "tool_choice")})
            # cache_prompt off: every answer computed from an empty cache, as its own truth.
            status, r = post(port, "/v1/chat/completions", dict(body, cache_prompt=False))
            case = {"name": name, "request": body, "prompt": prompt.get("prompt")}
            if status != 200:
                case["response"] = {"status": status, "error": r.get("error", {}).get("message", "")}
            else:
                msg = r["choices"][0]["message"]
                calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                         for c in msg.get("tool_calls") or []]
                case["response"] = {"status": 200, "content": msg.get("content"), "tool_calls": calls,
                                    "finish_reason": r["choices"][0]["finish_reason"],
                                    "completion_tokens": r["usage"]["completion_tokens"]}
            print(f"  {setup['name']} {name}: {json.dumps(case['response'])[:160]}", file=sys.stderr)
            cases.append(case)
        return cases
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-server")
    ap.add_argument("--random-model-tool", default=str(ROOT / "build/native/tests/make_random_model"))
    ap.add_argument("--out", default=str(ROOT / "tests/golden/tools/server.json"))
    a = ap.parse_args()
    flags = Path("/proc/cpuinfo").read_text()
    if not ("avx512f" in flags and "avx512_vnni" in flags) and os.environ.get("GOLDEN_ALLOW_AVX2") != "1":
        sys.exit("make-server-golden: no AVX-512 here: llama.cpp would run its AVX2 arithmetic, not the one "
                 "smolinfer reproduces (GOLDEN_ALLOW_AVX2=1 records it anyway)")
    llama_src = Path(os.environ.get("SMOLINFER_LLAMA_SRC", ""))
    smollm2 = os.environ.get("SMOLINFER_MODEL", "")
    if not (llama_src / "models/templates").is_dir() or not os.path.isfile(smollm2):
        sys.exit("make-server-golden: set SMOLINFER_LLAMA_SRC (llama.cpp's source) and SMOLINFER_MODEL (SmolLM2 Q4_1)")
    server_bin = a.llama_server or subprocess.run([str(ROOT / "bench/build-llama-server")], check=True,
                                                  capture_output=True, text=True).stdout.strip().splitlines()[-1]
    commit = subprocess.run(["git", "-C", str(llama_src), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        random_dir = Path(tmp)
        out = {"generator": "scripts/golden/tools/make-server-golden.py (llama-server --jinja -fa off -np 1)",
               "llama_cpp": commit, "fake_time": FAKE_TIME, "context": CONTEXT, "setups": []}
        for s in setups(llama_src, smollm2, random_dir):
            if "random" in s["model"]:
                subprocess.run([a.random_model_tool, s["model"]["random"], str(s["path"])], check=True,
                               stdout=subprocess.DEVNULL)
            print(f"make-server-golden: {s['name']}", file=sys.stderr)
            entry = {"name": s["name"], "model": dict(s["model"], sha256=sha256(s["path"])), "template": s["template"]}
            entry["cases"] = run_setup(server_bin, llama_src, s)
            out["setups"].append(entry)
    Path(a.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"make-server-golden: wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
