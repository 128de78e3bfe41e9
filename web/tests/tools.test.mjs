// Tool calling in the browser (Chromium, or Firefox with
// SMOLINFER_BROWSER=firefox), through the page's engine and its worker:
// SmolLM2-135M with each kind of chat template it can be given (llama.cpp's
// Qwen2.5 template: Hermes-style <tool_call> JSON; its Llama 3.2 template:
// bare JSON; SmolLM2's own: no tools at all), greedy, against `smolinfer
// serve` answering the same requests with the same template: every streamed
// delta equal but the ids. Streamed only: the whole answer is the same code
// (web/src/openai*.ts) over the same engine output, which node-tools.test.mjs
// holds to the server's whole and streamed answers in Node. Then the page's tools panel
// (tools-panel.ts): refused with words on SmolLM2's own template, loaded
// again with its tool template (web/demo/tool-template.jinja), a question
// the calculator answers: the call, its result and the final answer on the
// page are the server's for the same conversation, the result the
// arithmetic's.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { TEST_TIMEOUT, askInPage, modelPath, openPage, recordRequests, useBrowser } from "./harness.mjs";
import { ADD, ASK, LLAMA32_TEMPLATE, QWEN25_TEMPLATE, WEATHER, assertSameChunks, llamaTemplate, startServer, streamedCalls } from "./tool-cases.mjs";
import { repoRoot } from "./wasm-module.mjs";

const h = useBrowser();
const CONTEXT = 1024;
// The page's engine and the server both with 2 threads (the page's threaded build).
const THREADS = 2;
const modelUrl = `/models/${encodeURIComponent(path.basename(modelPath))}`;
const addCall = { messages: ASK, tools: [WEATHER, ADD], tool_choice: { type: "function", function: { name: "add" } }, max_tokens: 60, temperature: 0 };
const required = { messages: ASK, tools: [WEATHER, ADD], tool_choice: "required", max_tokens: 24, temperature: 0 };

// Loads the model in the page's engine with `template` (undefined: its own)
// and answers each request streamed, one after the other on the same
// engine as on the same server: { info, answers: [chunks] }. The requests
// of a format share their prompt, so the later ones read cached cells,
// which the engine keeps by the server's rule (a fresh run's arithmetic):
// the answers stay the server's.
function answersInPage(page, template, requests) {
  return page.evaluate(
    async ({ url, template, context, requests }) => {
      const engine = window.smolinfer.engine;
      const info = await engine.load(url, { contextSize: context, chatTemplate: template });
      const answers = [];
      for (const request of requests) {
        const chunks = [];
        for await (const c of await engine.chat.completions.create({ ...request, stream: true })) chunks.push(c);
        answers.push(chunks);
      }
      return { info, answers };
    },
    { url: modelUrl, template: template && fs.readFileSync(template, "utf8"), context: CONTEXT, requests },
  );
}

// The add schema checked by hand (not by smolinfer's grammar code), on a stream's chunks.
function assertAddCall(chunks) {
  assert.equal(chunks.at(-1).choices[0].finish_reason, "tool_calls");
  const calls = streamedCalls(chunks);
  assert.deepEqual(
    calls.map((c) => c.name),
    ["add"],
  );
  const args = JSON.parse(calls[0].arguments);
  assert.deepEqual(Object.keys(args).sort(), ["a", "b"]);
  assert.ok(Number.isInteger(args.a) && Number.isInteger(args.b), JSON.stringify(args));
}

// A named call for each template that writes calls; "required" (its
// grammar lets text come first: SmolLM2-135M writes text) on Qwen2.5's and
// on SmolLM2's own, whose template shows no tools.
const FORMATS = [
  { name: "llama.cpp's Qwen2.5 template (Hermes <tool_call> JSON)", template: llamaTemplate(QWEN25_TEMPLATE), toolCalls: "json", requests: [addCall, required] },
  { name: "llama.cpp's Llama 3.2 template (bare JSON calls)", template: llamaTemplate(LLAMA32_TEMPLATE), toolCalls: "json", requests: [addCall] },
  { name: "SmolLM2's own template (shows no tools)", template: undefined, toolCalls: "none", requests: [required] },
];

for (const format of FORMATS) {
  test(`${format.name}: the server's answers, streamed`, { timeout: TEST_TIMEOUT }, async () => {
    const server = await startServer(modelPath, { templatePath: format.template, contextSize: CONTEXT, threads: THREADS });
    try {
      // The server answers while the page does.
      const native = (async () => {
        const all = [];
        for (const request of format.requests) {
          const streamed = await server.post({ ...request, stream: true });
          assert.equal(streamed.status, 200, JSON.stringify(streamed.body));
          all.push(streamed.body);
        }
        return all;
      })();
      native.catch(() => {}); // awaited below, unless the page's part fails first
      const page = await openPage(h, `?autoload=0&threads=${THREADS}`);
      const { info, answers } = await answersInPage(page, format.template, format.requests);
      await page.close();
      assert.equal(info.threads, THREADS);
      assert.equal(info.toolCalls, format.toolCalls);
      for (const [i, theirs] of (await native).entries()) assertSameChunks(answers[i], theirs);
      const [first] = answers;
      if (format.toolCalls === "json") assertAddCall(first);
      else {
        // Tools are not shown to the model: no calls, as llama-server.
        assert.ok(first.every((c) => !c.choices[0].delta.tool_calls));
        assert.notEqual(first.at(-1).choices[0].finish_reason, "tool_calls");
      }
    } finally {
      server.stop();
    }
  });
}

test("the page's tools check their arguments and compute", { timeout: TEST_TIMEOUT }, async () => {
  const page = await openPage(h, "?autoload=0");
  const r = await page.evaluate(async () => {
    const { runTool } = await import("/tools-panel.js");
    const calc = (args) => runTool("calc", JSON.stringify(args));
    return {
      values: [calc({ a: 12, op: "*", b: 7 }), calc({ b: 7, a: 12, op: "-" }), calc({ a: 7, op: "/", b: 2 }), calc({ a: 0.5, op: "+", b: -2 })],
      errors: [
        calc({ a: 1, op: "/", b: 0 }),
        calc({ a: 1, op: "**", b: 2 }),
        calc({ a: "1", op: "+", b: 2 }),
        calc({ a: 1, op: "+", b: 2, c: 3 }),
        calc({ a: 1, op: "toString", b: 2 }),
        runTool("calc", "{a: 1"),
        runTool("calc", "[1]"),
        runTool("shell", "{}"),
        runTool("get_time", '{"zone": "UTC"}'),
      ],
      time: runTool("get_time", "{}"),
    };
  });
  assert.deepEqual(r.values, ["84", "5", "3.5", "-1.5"]);
  const usage = "error: calc takes a and b (numbers) and op (one of + - * /)";
  assert.deepEqual(r.errors, [
    "error: 1 / 0 is not a finite number",
    usage,
    usage,
    usage,
    usage,
    "error: the arguments are not JSON: {a: 1",
    "error: the arguments are not a JSON object",
    "error: there is no tool named 'shell'",
    "error: get_time takes no arguments",
  ]);
  // "Saturday, December 5, 2026 at 11:40 PM" (the words between date and time vary with the browser's ICU).
  assert.match(r.time, /^[A-Z][a-z]+day, [A-Z][a-z]+ \d{1,2}, \d{4}\D+\d{1,2}:\d\d\s[AP]M$/);
  await page.close();
});

test("the page's tools panel: the calculator's call, result and final answer are the server's", { timeout: TEST_TIMEOUT }, async () => {
  const site = path.join(repoRoot, "build", "web", "site");
  const server = await startServer(modelPath, { templatePath: path.join(site, "tool-template.jinja"), contextSize: 4096, threads: THREADS });
  try {
    const page = await openPage(h, `?threads=${THREADS}`);
    // The page loaded the file the server runs, with its threads.
    const sha256 = crypto.createHash("sha256").update(fs.readFileSync(modelPath)).digest("hex");
    assert.deepEqual(await page.evaluate(() => [window.smolinfer.engine.model.sha256, window.smolinfer.engine.stats().threads]), [sha256, THREADS]);
    await page.evaluate(() => (document.getElementById("tools-panel").open = true));

    // SmolLM2's own template: said, and nothing is sent.
    assert.match(await page.textContent("#tools-status"), /shows no tools/);
    assert.equal(await page.isVisible("#tools-template"), true);
    await page.check("#tools-on");
    await page.fill("#prompt", "What is 12 times 7?");
    await page.click("#send");
    await page.waitForFunction(() => /shows no tools/.test(document.getElementById("error").textContent));
    assert.equal(await page.locator(".message").count(), 0);

    // Loaded again with the tool template.
    await page.click("#tools-template");
    await page.waitForFunction(() => /Tool template/.test(document.getElementById("tools-status").textContent) && !document.getElementById("prompt").disabled, null, {
      timeout: 180_000,
    });
    assert.equal(await page.isVisible("#tools-template"), false);
    await page.selectOption("#tool-choice", "calc");
    await recordRequests(page);
    const answer = await askInPage(page, "What is 12 times 7?", { maxTokens: 60 });
    const shown = await page.evaluate(() => ({
      error: document.getElementById("error").textContent,
      tools: [...document.querySelectorAll(".message.tool")].map((n) => ({ call: n.querySelector(".call").textContent, result: n.querySelector(".result").textContent })),
      sent: window.sent,
    }));
    assert.equal(shown.error, "");

    // The first request: the server's call for it, shown with the arithmetic's result.
    const [first, ...rest] = shown.sent;
    assert.deepEqual(first.tool_choice, { type: "function", function: { name: "calc" } });
    const native = await server.post({ ...first, stream: false });
    assert.equal(native.status, 200, JSON.stringify(native.body));
    const calls = native.body.choices[0].message.tool_calls;
    assert.equal(calls.length, 1);
    assert.equal(calls[0].function.name, "calc");
    const { a, op, b } = JSON.parse(calls[0].function.arguments);
    assert.equal(shown.tools.length, 1);
    assert.equal(shown.tools[0].call, `calc(${calls[0].function.arguments})`);
    assert.equal(shown.tools[0].result, String({ "+": a + b, "-": a - b, "*": a * b, "/": a / b }[op]));

    // The round trip: the call and its result sent back, the final answer
    // asked without tools; the page's is the server's (the page's engine
    // reuses only the system prompt's start, read in the first request as a
    // fresh run reads it).
    assert.equal(rest.length, 1, "one more request, for the final answer");
    const [final] = rest;
    assert.equal(final.tools, undefined);
    const [callTurn, result] = final.messages.slice(-2);
    assert.deepEqual(callTurn.tool_calls.map((c) => c.function), [calls[0].function]);
    assert.deepEqual(result, { role: "tool", tool_call_id: callTurn.tool_calls[0].id, name: "calc", content: shown.tools[0].result });
    const theirs = await server.post({ ...final, stream: false });
    assert.equal(theirs.status, 200, JSON.stringify(theirs.body));
    assert.equal(theirs.body.choices[0].message.tool_calls, undefined);
    assert.ok(theirs.body.choices[0].message.content.length > 0);
    assert.equal(answer, theirs.body.choices[0].message.content);
    await page.close();
  } finally {
    server.stop();
  }
});
