#!/usr/bin/env python3
"""Tool calling end to end with the official `openai` client against `smolinfer serve`.

    SMOLINFER_MODEL=... SMOLINFER_LLAMA_SRC=... python tests/server/test_tools.py [path/to/smolinfer]

SmolLM2-135M runs with its own template (no tool syntax: tools ignored, as by
llama-server) and with llama.cpp's Qwen2.5 and Llama 3.2 templates
(--chat-template-file). Checks: /apply-template equals llama.cpp's prompts
(tests/golden/tools/prompts.json); a named tool_choice yields exactly that
function with arguments valid under its schema; the round trip call -> tool
result -> answer works streamed and not, and the assembled stream equals the
whole answer; `smolinfer run --tools` prints the server's calls for the same
request; bad tools are 400s naming the tool.
Prints "tools: N passed, N failed"; exits non-zero when anything failed.
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_openai_client as base  # noqa: E402  (Server, check, expect)
from test_openai_client import Server, check, expect  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LLAMA_SRC = Path(os.environ.get("SMOLINFER_LLAMA_SRC", ""))
GOLDEN = json.loads((ROOT / "tests/golden/tools/prompts.json").read_text())

ADD = {"type": "function", "function": {"name": "add", "description": "Add two integers",
       "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                      "required": ["a", "b"]}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Get the weather",
           "parameters": {"type": "object", "properties": {"location": {"type": "string"},
                                                           "unit": {"type": "string", "enum": ["c", "f"]}},
                          "required": ["location"]}}}
ASK = [{"role": "user", "content": "What is 2+3? Use the add tool."}]


def valid_add_arguments(text):
    """The add schema checked by hand (not by smolinfer's grammar code)."""
    args = json.loads(text)
    return (isinstance(args, dict) and set(args) == {"a", "b"}
            and all(isinstance(args[k], int) and not isinstance(args[k], bool) for k in "ab"))


def collect_stream(stream):
    content, calls, finish = "", {}, None
    for chunk in stream:
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            e = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            e["id"] += tc.id or ""
            e["name"] += tc.function.name or ""
            e["arguments"] += tc.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    return content, [calls[i] for i in sorted(calls)], finish


def whole_and_streamed(client, **request):
    r = client.chat.completions.create(model="m", temperature=0, **request)
    choice = r.choices[0]
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
             for c in choice.message.tool_calls or []]
    content, s_calls, s_finish = collect_stream(client.chat.completions.create(model="m", temperature=0, stream=True,
                                                                               **request))
    expect(content == (choice.message.content or ""), f"streamed content {content!r} != {choice.message.content!r}")
    expect([(c["name"], c["arguments"]) for c in s_calls] == [(c["name"], c["arguments"]) for c in calls],
           f"streamed calls {s_calls} != {calls}")
    expect(s_finish == choice.finish_reason, f"streamed finish {s_finish} != {choice.finish_reason}")
    return choice, calls


def golden_prompts(server, name):
    tpl = next(t for t in GOLDEN["templates"] if t["name"] == name)
    compared = 0
    for c in tpl["cases"]:
        body = {"messages": c["messages"], "add_generation_prompt": c["add_generation_prompt"]}
        for key in ("tools", "tool_choice"):
            if c.get(key):
                body[key] = c[key]
        r = server.http.post("/apply-template", json=body)
        if "error" in c or any(not base_name_ok(t) for t in c.get("tools", [])):
            continue
        expect(r.status_code == 200, f"{c['name']}: {r.status_code} {r.text[:200]}")
        expected = c["prompt"]
        if tpl["bos_token"] == "<|begin_of_text|>":
            expected = expected.removeprefix("<|begin_of_text|>")  # the tokenizer adds it (llama-server strips it too)
        got = r.json()["prompt"]
        if "Today Date:" in expected:  # llama.cpp dated its prompt when the golden was made
            continue
        expect(got == expected, f"{c['name']}: prompt differs:\n{got!r}\n{expected!r}")
        compared += 1
    expect(compared >= 8, f"only {compared} prompts compared")


def base_name_ok(tool):
    # smolinfer takes OpenAI's function names (1-64 letters, digits, _ or -); llama.cpp also takes "do-it.now".
    name = tool["function"]["name"]
    return all(ch.isalnum() or ch in "_-" for ch in name)


def main():
    expect(LLAMA_SRC.is_dir(), "SMOLINFER_LLAMA_SRC must point at llama.cpp's source (its templates)")
    own = Server()
    try:
        client = own.client()

        def smollm2_ignores_tools():
            golden_prompts(own, "smollm2")
            choice, calls = whole_and_streamed(client, messages=ASK, tools=[ADD], tool_choice="required", max_tokens=24)
            expect(calls == [] and choice.finish_reason in ("stop", "length"), f"SmolLM2 calls no tools: {calls}")

        check("SmolLM2's own template: prompts as llama.cpp's, tools ignored", smollm2_ignores_tools)

        def bad_tools():
            dup = own.http.post("/v1/chat/completions", json={"messages": ASK, "tools": [ADD, ADD]})
            expect(dup.status_code == 400 and "'add'" in dup.json()["error"]["message"], dup.text)
            refused = dict(ADD, function=dict(ADD["function"], name="odd",
                                              parameters={"type": "object", "properties": {"x": {"not": {}}}}))
            r = own.http.post("/v1/chat/completions", json={"messages": ASK, "tools": [refused]})
            expect(r.status_code == 400 and "'odd'" in r.json()["error"]["message"], r.text)

        check("a duplicate tool or a refused schema: 400 naming the tool", bad_tools)
    finally:
        expect(own.stop() == 0, "server exit code")

    qwen = Server("--chat-template-file", str(LLAMA_SRC / "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"))
    try:
        client = qwen.client()
        check("Qwen2.5 template: /apply-template equals llama.cpp's prompts", lambda: golden_prompts(qwen, "qwen2.5"))

        def named_round_trip():
            choice, calls = whole_and_streamed(client, messages=ASK, tools=[WEATHER, ADD],
                                               tool_choice={"type": "function", "function": {"name": "add"}},
                                               max_tokens=60)
            expect(choice.finish_reason == "tool_calls" and len(calls) == 1 and calls[0]["name"] == "add", str(calls))
            expect(valid_add_arguments(calls[0]["arguments"]), calls[0]["arguments"])
            args = json.loads(calls[0]["arguments"])
            history = ASK + [{"role": "assistant", "content": None, "tool_calls": [
                {"id": calls[0]["id"], "type": "function",
                 "function": {"name": "add", "arguments": calls[0]["arguments"]}}]},
                {"role": "tool", "tool_call_id": calls[0]["id"], "content": str(args["a"] + args["b"])}]
            final, more = whole_and_streamed(client, messages=history, tools=[WEATHER, ADD], max_tokens=24)
            expect(isinstance(final.message.content, str) and final.message.content, "a final answer")
            expect(final.finish_reason in ("stop", "length", "tool_calls"), final.finish_reason)

        check("named tool_choice: exactly add, valid arguments; tool result -> answer (streamed = whole)",
              named_round_trip)

        def cli_same_calls():
            # smolinfer run --tools: the same request from the command line gives the server's calls.
            choice, calls = whole_and_streamed(client, messages=ASK, tools=[WEATHER, ADD],
                                               tool_choice={"type": "function", "function": {"name": "add"}},
                                               max_tokens=60)
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump([WEATHER, ADD], f)
            try:
                out = subprocess.run([str(base.BINARY), "run", "-m", base.MODEL, "-c", str(base.CONTEXT),
                                      "--chat-template-file", str(LLAMA_SRC / "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
                                      "--tools", f.name, "--tool-choice", "add", "-p", ASK[0]["content"],
                                      "--temp", "0", "-n", "60", "--json"],
                                     capture_output=True, text=True, timeout=120)
            finally:
                os.unlink(f.name)
            expect(out.returncode == 0, out.stderr)
            got = json.loads(out.stdout)["tool_calls"]
            expect(got == [{"name": c["name"], "arguments": c["arguments"]} for c in calls], f"run --tools {got} != {calls}")

        check("run --tools prints the server's calls for the same request", cli_same_calls)
    finally:
        expect(qwen.stop() == 0, "server exit code")

    llama = Server("--chat-template-file", str(LLAMA_SRC / "models/templates/meta-llama-Llama-3.2-3B-Instruct.jinja"))
    try:
        client = llama.client()

        def llama_named():
            choice, calls = whole_and_streamed(client, messages=ASK, tools=[ADD, WEATHER],
                                               tool_choice={"type": "function", "function": {"name": "add"}},
                                               max_tokens=60)
            expect(choice.finish_reason == "tool_calls" and [c["name"] for c in calls] == ["add"], str(calls))
            expect(valid_add_arguments(calls[0]["arguments"]), calls[0]["arguments"])

        check("Llama 3.2 template: named tool_choice gives a valid add call", llama_named)
    finally:
        expect(llama.stop() == 0, "server exit code")

    print(f"tools: {base.passed} passed, {base.failed} failed")
    return 1 if base.failed else 0


if __name__ == "__main__":
    sys.exit(main())
