// What the tool-calling tests share (node-tools.test.mjs: the JS API in
// Node; tools.test.mjs: the same in the browsers and the page's tools
// panel): the tools and question they ask, `smolinfer serve` (the native
// build) as the truth for the same requests, and the comparison of an
// answer, whole and streamed, with the server's.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import http from "node:http";
import path from "node:path";
import readline from "node:readline";

import { repoRoot } from "./wasm-module.mjs";

export const ADD = {
  type: "function",
  function: {
    name: "add",
    description: "Add two integers",
    parameters: { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, required: ["a", "b"] },
  },
};
export const WEATHER = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the weather",
    parameters: { type: "object", properties: { location: { type: "string" }, unit: { type: "string", enum: ["c", "f"] } }, required: ["location"] },
  },
};
export const ASK = [{ role: "user", content: "What is 2+3? Use the add tool." }];

/** llama.cpp's chat templates the tests run SmolLM2 with (SMOLINFER_LLAMA_SRC: llama.cpp's source). */
export function llamaTemplate(file) {
  const src = process.env.SMOLINFER_LLAMA_SRC;
  if (!src) throw new Error("SMOLINFER_LLAMA_SRC is not set: run the tests with 'make test', which unpacks llama.cpp's source");
  return path.join(src, "models", "templates", file);
}
export const QWEN25_TEMPLATE = "Qwen-Qwen2.5-7B-Instruct.jinja";
export const LLAMA32_TEMPLATE = "meta-llama-Llama-3.2-3B-Instruct.jinja";

const cli = path.join(repoRoot, "build", "native", "smolinfer");

/**
 * `smolinfer serve` on a free port, one sequence, with `templatePath` as
 * --chat-template-file (undefined: the file's own template):
 * { post(request), stop() }. post() resolves to { status, body }, the body
 * of a streamed answer being its chunks' JSON objects. `threads`: as the
 * engine compared with it runs (as in llama.cpp, the thread count is part
 * of the arithmetic: a greedy answer can differ at a near-tie).
 */
export async function startServer(modelPath, { templatePath, contextSize, threads = 1 }) {
  const args = ["serve", "-m", modelPath, "-t", String(threads), "-c", String(contextSize), "--port", "0", "--parallel", "1"];
  if (templatePath) args.push("--chat-template-file", templatePath);
  const server = spawn(cli, args, { stdio: ["ignore", "pipe", "inherit"] });
  const first = await new Promise((resolve, reject) => {
    readline.createInterface({ input: server.stdout }).once("line", resolve);
    server.once("exit", (code) => reject(new Error(`smolinfer serve exited with ${code}`)));
  });
  const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(first);
  assert.ok(m, `unexpected first line ${JSON.stringify(first)}`);
  const port = Number(m[1]);
  const post = (request) =>
    new Promise((resolve, reject) => {
      const body = JSON.stringify({ model: "m", ...request });
      const req = http.request({ host: "127.0.0.1", port, path: "/v1/chat/completions", method: "POST", headers: { "Content-Type": "application/json" } }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => {
          if (!request.stream || res.statusCode !== 200) return resolve({ status: res.statusCode, body: JSON.parse(text) });
          const chunks = text
            .split("\n\n")
            .filter((f) => f.startsWith("data: ") && f !== "data: [DONE]")
            .map((f) => JSON.parse(f.slice("data: ".length)));
          resolve({ status: res.statusCode, body: chunks });
        });
      });
      req.on("error", reject);
      req.end(body);
    });
  return { post, stop: () => server.kill("SIGTERM") };
}

// What must be equal: everything but the response ids, times and call ids.
const callIdPattern = /^call_[0-9A-Za-z]{24}$/;
export function withoutIds(choice) {
  const copy = structuredClone(choice);
  for (const c of copy.message?.tool_calls ?? copy.delta?.tool_calls ?? []) {
    assert.match(c.id, callIdPattern);
    c.id = "<id>";
  }
  return copy;
}

/** The server's answer to `request`, whole and streamed: { whole, chunks }. */
export async function serverAnswer(server, request) {
  const whole = await server.post(request);
  assert.equal(whole.status, 200, JSON.stringify(whole.body));
  const streamed = await server.post({ ...request, stream: true });
  assert.equal(streamed.status, 200, JSON.stringify(streamed.body));
  return { whole: whole.body, chunks: streamed.body };
}

/**
 * An answer from the JS API ({ whole, chunks }: a response and a stream's
 * chunks) equals the server's for the same request: the choice, usage and
 * every streamed delta, but the ids; streamed calls are numbered from 0.
 */
export function assertSameAnswer(js, native) {
  assert.deepEqual(withoutIds(js.whole.choices[0]), withoutIds(native.whole.choices[0]));
  assert.deepEqual(js.whole.usage, native.whole.usage);
  assertSameChunks(js.chunks, native.chunks);
}

/** A stream's chunks from the JS API equal the server's but the ids; its calls are numbered from 0. */
export function assertSameChunks(js, native) {
  assert.deepEqual(
    js.map((c) => withoutIds(c.choices[0])),
    native.map((c) => withoutIds(c.choices[0])),
  );
  const streamed = js.flatMap((c) => c.choices[0].delta.tool_calls ?? []);
  assert.deepEqual(
    streamed.map((c) => c.index),
    streamed.map((_, i) => i),
  );
}

/** The calls a stream's chunks make, assembled: [{ name, arguments }] (arguments as streamed text). */
export function streamedCalls(chunks) {
  const calls = [];
  for (const c of chunks.flatMap((c) => c.choices[0].delta.tool_calls ?? [])) {
    if (c.function.name !== undefined) calls[c.index] = { name: c.function.name, arguments: "" };
    calls[c.index].arguments += c.function.arguments ?? "";
  }
  return calls;
}
