// The OpenAI-shaped API (engine.chat.completions.create,
// engine.completions.create) in headless Chromium, through the real worker:
// each response's and chunk's keys against OpenAI's field names, streaming
// and not, stop strings, logprobs, abort mid-stream, field errors, and the
// page's "JSON output" switch.
import assert from "node:assert/strict";
import { test } from "node:test";

import { openPage as open, recordRequests, TEST_TIMEOUT, useBrowser } from "./harness.mjs";

const h = useBrowser();
const openPage = (query) => open(h, query);
const messages = [{ role: "user", content: "What is the capital of France?" }];

test("chat.completions.create: OpenAI's keys, the text chat() gives, usage; streamed the same", { timeout: TEST_TIMEOUT }, async () => {
  const page = await openPage();
  const r = await page.evaluate(async (messages) => {
    const engine = window.smolinfer.engine;
    let viaChat = "";
    for await (const piece of engine.chat(messages, { maxTokens: 16, temperature: 0 })) viaChat += piece;
    const whole = await engine.chat.completions.create({ messages, max_tokens: 16, temperature: 0 });
    const chunks = [];
    for await (const c of await engine.chat.completions.create({ messages, max_tokens: 16, temperature: 0, stream: true, stream_options: { include_usage: true } })) {
      chunks.push(c);
    }
    const legacy = await engine.completions.create({ prompt: "The capital of France is", max_tokens: 4, temperature: 0 });
    return { viaChat, whole, chunks, legacy, promptTokens: engine.stats().promptTokens };
  }, messages);
  const keys = (o) => Object.keys(o).sort();
  assert.deepEqual(keys(r.whole), ["choices", "created", "id", "model", "object", "usage"]);
  assert.equal(r.whole.object, "chat.completion");
  assert.deepEqual(keys(r.whole.choices[0]), ["finish_reason", "index", "logprobs", "message"]);
  assert.deepEqual(r.whole.choices[0].message, { role: "assistant", content: r.viaChat, refusal: null });
  assert.equal(r.whole.choices[0].finish_reason, "length");
  assert.deepEqual(keys(r.whole.usage), ["completion_tokens", "prompt_tokens", "total_tokens"]);
  assert.equal(r.whole.usage.completion_tokens, 16);
  assert.equal(r.whole.usage.total_tokens, r.whole.usage.prompt_tokens + 16);

  const [first, ...rest] = r.chunks;
  const usageChunk = rest.pop();
  const finish = rest.pop();
  for (const c of r.chunks) {
    assert.deepEqual(keys(c), ["choices", "created", "id", "model", "object", "usage"]);
    assert.equal(c.object, "chat.completion.chunk");
    assert.equal(c.id, first.id);
  }
  assert.deepEqual(first.choices, [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]);
  for (const c of rest) {
    assert.deepEqual(keys(c.choices[0]), ["delta", "finish_reason", "index", "logprobs"]);
    assert.deepEqual(keys(c.choices[0].delta), ["content"]);
    assert.equal(c.usage, null);
  }
  assert.equal(rest.map((c) => c.choices[0].delta.content).join(""), r.viaChat);
  assert.deepEqual(finish.choices, [{ index: 0, delta: {}, logprobs: null, finish_reason: "length" }]);
  assert.deepEqual(usageChunk.choices, []);
  assert.deepEqual(usageChunk.usage, r.whole.usage);

  assert.deepEqual(keys(r.legacy), ["choices", "created", "id", "model", "object", "usage"]);
  assert.equal(r.legacy.object, "text_completion");
  assert.deepEqual(keys(r.legacy.choices[0]), ["finish_reason", "index", "logprobs", "text"]);
  assert.equal(r.legacy.usage.completion_tokens, 4);
  await page.close();
});

test("stop strings, logprobs, abort mid-stream and named field errors in the browser", { timeout: TEST_TIMEOUT }, async () => {
  const page = await openPage();
  const r = await page.evaluate(async (messages) => {
    const engine = window.smolinfer.engine;
    const full = (await engine.chat.completions.create({ messages, max_tokens: 16, temperature: 0 })).choices[0].message.content;
    const stop = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 3);
    const stopped = await engine.chat.completions.create({ messages, max_tokens: 16, temperature: 0, stop: [stop] });
    const streamedParts = [];
    for await (const c of await engine.chat.completions.create({ messages, max_tokens: 16, temperature: 0, stop, stream: true })) {
      if (c.choices[0]?.delta.content) streamedParts.push(c.choices[0].delta.content);
    }
    const withLogprobs = await engine.chat.completions.create({ messages, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 2 });

    const controller = new AbortController();
    let seen = 0;
    let aborted = "";
    try {
      for await (const _ of await engine.chat.completions.create({ messages, max_tokens: 200, temperature: 0, stream: true }, { signal: controller.signal })) {
        if (++seen === 3) controller.abort();
      }
    } catch (e) {
      aborted = e.code;
    }
    const after = await engine.chat.completions.create({ messages, max_tokens: 2, temperature: 0 });
    let bad = "";
    try {
      await engine.chat.completions.create({ messages, temperature: 7 });
    } catch (e) {
      bad = `${e.name} ${e.code}: ${e.message}`;
    }
    return { full, stop, stopped, streamedParts, withLogprobs, seen, aborted, after, bad };
  }, messages);
  const want = r.full.slice(0, r.full.indexOf(r.stop));
  assert.equal(r.stopped.choices[0].message.content, want);
  assert.equal(r.stopped.choices[0].finish_reason, "stop");
  let streamed = "";
  for (const part of r.streamedParts) {
    streamed += part;
    assert.ok(want.startsWith(streamed), `streamed ${JSON.stringify(streamed)} past ${JSON.stringify(want)}`);
  }
  assert.equal(streamed, want);
  const content = r.withLogprobs.choices[0].logprobs.content;
  assert.equal(content.length, 6);
  assert.equal(content.map((e) => e.token).join(""), r.withLogprobs.choices[0].message.content);
  for (const e of content) {
    assert.deepEqual(Object.keys(e).sort(), ["bytes", "logprob", "token", "top_logprobs"]);
    assert.equal(e.top_logprobs.length, 2);
    assert.equal(e.top_logprobs[0].logprob, e.logprob);
  }
  assert.equal(r.aborted, "aborted");
  assert.ok(r.seen - 3 <= 1, `${r.seen - 3} chunks after the abort`); // one may already be on its way
  assert.equal(r.after.usage.completion_tokens, 2);
  assert.equal(r.bad, "EngineError bad_input: chat.completions.create: 'temperature' must be a number in [0, 2]");
  await page.close();
});

test("chat() and generate() take stop, penalties, logitBias, grammar and responseFormat", { timeout: TEST_TIMEOUT }, async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const engine = window.smolinfer.engine;
    const text = async (it) => {
      let t = "";
      for await (const piece of it) t += piece;
      return t;
    };
    const error = async (make) => {
      try {
        await text(make());
        return "";
      } catch (e) {
        return `${e.code}: ${e.message}`;
      }
    };
    const prompt = "Count: one, two, three,";
    return {
      full: await text(engine.generate(prompt, { maxTokens: 12, temperature: 0 })),
      stopped: await text(engine.generate(prompt, { maxTokens: 12, temperature: 0, stop: ["ve, s"] })),
      stopReason: engine.stats().stop,
      penalized: await text(engine.generate(prompt, { maxTokens: 12, temperature: 0, frequencyPenalty: 2, presencePenalty: 2 })),
      badStop: await error(() => engine.generate(prompt, { stop: ["a", "b", "c", "d", "e"] })),
      badBias: await error(() => engine.generate(prompt, { logitBias: { 999999: 1 } })),
      both: await error(() => engine.chat([{ role: "user", content: "hi" }], { grammar: 'root ::= "a"', responseFormat: "json_object" })),
      grammar: await text(engine.chat([{ role: "user", content: "hi" }], { grammar: 'root ::= "a"', temperature: 0 })),
    };
  });
  assert.ok(r.full.startsWith(" four, five, six"), r.full);
  assert.equal(r.stopped, " four, fi");
  assert.equal(r.stopReason, "stop");
  assert.notEqual(r.penalized, r.full);
  assert.match(r.badStop, /^bad_input: stop must be a non-empty string or an array of up to 4/);
  assert.match(r.badBias, /^bad_input: .*logit bias token id 999999 is outside the vocabulary/);
  assert.equal(r.both, "bad_input: grammar must be left out when responseFormat is given (use one or the other)");
  assert.equal(r.grammar, "a");
  await page.close();
});

test("the page's JSON output switch sends the schema box as response_format", { timeout: TEST_TIMEOUT }, async () => {
  const page = await openPage();
  assert.equal(await page.isVisible("#schema"), false);
  await page.check("#json-mode");
  assert.equal(await page.isVisible("#schema"), true);
  const schema = JSON.parse(await page.inputValue("#schema"));
  assert.deepEqual(schema.required, ["answer", "confidence", "keywords"]);
  // Record what reaches the engine.
  await recordRequests(page);
  await page.evaluate(() => (document.querySelector("details.settings").open = true));
  await page.fill("#temperature", "0");
  await page.fill("#max-tokens", "80");
  await page.fill("#prompt", "What is the capital of France?");
  await page.click("#send");
  await page.waitForFunction(() => document.querySelector(".message.assistant .meta"), null, { timeout: 180_000 });
  const sent = await page.evaluate(() => window.sent);
  assert.equal(sent.length, 1);
  assert.deepEqual(sent[0].response_format, { type: "json_schema", json_schema: { name: "answer", schema, strict: true } });
  assert.equal(sent[0].stream, true);
  const error = await page.textContent("#error");
  const json = await page.$$eval(".message.assistant pre.json", (n) => n.map((x) => x.textContent));
  // The answer, pretty-printed, matching the schema.
  assert.equal(json.length, 1, `error: ${error}`);
  const value = JSON.parse(json[0]);
  assert.deepEqual(Object.keys(value).sort(), ["answer", "confidence", "keywords"]);
  assert.equal(json[0], JSON.stringify(value, null, 2));
  // A schema that is not JSON is named on the page, nothing is sent.
  await page.fill("#schema", "{ nope");
  await page.fill("#prompt", "Again?");
  await page.click("#send");
  await page.waitForFunction(() => /not valid JSON/.test(document.getElementById("error").textContent));
  assert.equal((await page.evaluate(() => window.sent)).length, 1);
  await page.close();
});
