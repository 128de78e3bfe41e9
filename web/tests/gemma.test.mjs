// Gemma 3 270M (the real file, 253 MB; scripts/fetch-model gemma-3-270m) in
// the headless browser (Chromium or Firefox): the page, cross-origin isolated on one origin, loads
// the model from another origin (a plain file server that allows it by
// CORS, as a model hub does) and prints, for a raw prompt, the text the
// native CLI prints, with one thread and with two. Natively the same file
// is held to llama.cpp's golden output (tests/golden/gemma-3-270m/).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { after, before, test } from "node:test";

import { openPage, useBrowser } from "./harness.mjs";
import { repoRoot } from "./wasm-module.mjs";

const gemma = process.env.SMOLINFER_MODEL_GEMMA_3_270M;
if (!gemma) throw new Error("SMOLINFER_MODEL_GEMMA_3_270M is not set: run the tests with 'make test', which fetches it");
const PROMPT = "The three primary colors are";
const TOKENS = 16;
const CONTEXT = 512;
const cli = path.join(repoRoot, "build", "native", "smolinfer");

// The other origin: GET and HEAD of the one file, with CORS, nothing else.
let other = null;
let otherOrigin = "";
before(async () => {
  other = http.createServer((req, res) => {
    if (req.url !== "/gemma.gguf" || (req.method !== "GET" && req.method !== "HEAD")) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {
      "Content-Type": "application/octet-stream",
      "Content-Length": fs.statSync(gemma).size,
      "Access-Control-Allow-Origin": "*",
    });
    if (req.method === "HEAD") res.end();
    else fs.createReadStream(gemma).pipe(res);
  });
  await new Promise((resolve) => other.listen(0, "127.0.0.1", resolve));
  otherOrigin = `http://localhost:${other.address().port}`;
});
after(() => other?.close());

const h = useBrowser();

function nativeText(threads) {
  const out = execFileSync(
    cli,
    ["run", "-m", gemma, "-t", String(threads), "-c", String(CONTEXT), "--temp", "0", "-n", String(TOKENS), "-p", PROMPT, "--json"],
    { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
  );
  return JSON.parse(out);
}

test("Gemma 3 270M from another origin prints the native CLI's text, with 1 and 2 threads", { timeout: 900_000 }, async () => {
  const page = await openPage(h, "?autoload=0");
  assert.notEqual(new URL(otherOrigin).origin, h.origin);
  for (const threads of [1, 2]) {
    const native = nativeText(threads);
    assert.equal(native.ids.length, TOKENS);
    const r = await page.evaluate(
      async ({ url, prompt, tokens, context, threads }) => {
        const { createEngine } = await import("/smolinfer.js");
        const engine = await createEngine({ threads, exact: true });
        try {
          const info = await engine.load(url, { contextSize: context });
          let text = "";
          for await (const piece of engine.generate(prompt, { temperature: 0, maxTokens: tokens, repeatPenalty: 1 })) {
            text += piece;
          }
          // A base model: chat is refused with words, not guessed.
          let chatError = "";
          try {
            await engine.chat.completions.create({ messages: [{ role: "user", content: "Hi" }], max_tokens: 2 });
          } catch (e) {
            chatError = String(e?.message ?? e);
          }
          return { info, text, chatError };
        } finally {
          engine.terminate();
        }
      },
      { url: `${otherOrigin}/gemma.gguf`, prompt: PROMPT, tokens: TOKENS, context: CONTEXT, threads },
    );
    assert.equal(r.info.architecture, "gemma3");
    assert.equal(r.info.fileBytes, fs.statSync(gemma).size);
    assert.equal(r.text, native.text, `${threads} thread(s)`);
    assert.match(r.chatError, /no chat template/);
  }
  await page.close();
});
