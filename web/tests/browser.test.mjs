// The demo page in headless Chromium (Debian's, driven by playwright-core),
// served by web/serve.mjs with the real model: parity with the native CLI in
// both WebAssembly builds, the offline cache, responsiveness, stop, busy
// errors, and clear failures for broken downloads.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";

import { chromium } from "playwright-core";

import { repoRoot } from "./wasm-module.mjs";

const modelPath = process.env.SMOLINFER_MODEL;
if (!modelPath) throw new Error("SMOLINFER_MODEL is not set: run the tests with 'make test', which fetches the model");
const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const PROMPT = "What is the capital of France?";
const screenshotPath = path.join(repoRoot, "build", "web", "screenshot-chat.png");

let server;
let origin;
let context;
let profile;

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

before(async () => {
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  server = spawn(process.execPath, [path.join(repoRoot, "web", "serve.mjs"), "--port", String(port), "--faults", "--models", path.dirname(modelPath)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise((resolve, reject) => {
    server.stdout.once("data", resolve);
    server.once("exit", (code) => reject(new Error(`the demo server exited (${code})`)));
  });
  profile = fs.mkdtempSync(path.join(os.tmpdir(), "smolinfer-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1100, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await context?.close();
  server?.kill();
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
});

// What the native CLI prints for the same request.
function cliAnswer(tokens) {
  const cli = path.join(repoRoot, "build", "native", "smolinfer");
  const out = execFileSync(cli, ["run", "-m", modelPath, "--chat", "--temp", "0", "-n", String(tokens), "-p", PROMPT, "--json"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  return JSON.parse(out).text;
}

async function openPage(query = "") {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${origin}/${query}`);
  await page.waitForFunction(() => !document.getElementById("prompt").disabled, null, { timeout: 180_000 });
  assert.deepEqual(errors, []);
  return page;
}

async function askInPage(page, text, { maxTokens = 32, temperature = 0 } = {}) {
  await page.evaluate(() => (document.querySelector("details.settings").open = true));
  await page.fill("#temperature", String(temperature));
  await page.fill("#max-tokens", String(maxTokens));
  await page.fill("#repeat-penalty", "1");
  await page.fill("#seed", "7");
  const before = await page.locator(".message.assistant").count();
  await page.fill("#prompt", text);
  await page.click("#send");
  await page.waitForFunction((n) => document.querySelectorAll(".message.assistant .meta").length > n, before, { timeout: 180_000 });
  return page.evaluate(() => [...document.querySelectorAll(".message.assistant")].at(-1).firstChild.textContent);
}

// Lists the files the page's origin keeps in its private file system.
async function storedFiles(page) {
  return page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    const dir = await root.getDirectoryHandle("smolinfer-models", { create: true });
    const names = [];
    for await (const name of dir.keys()) names.push(name);
    return names.sort();
  });
}

test("multi-threaded build: greedy chat output equals the native CLI's", async () => {
  const page = await openPage();
  assert.equal(await page.evaluate(() => crossOriginIsolated), true);
  assert.equal(await page.evaluate(() => window.smolinfer.engine.build), "mt");
  assert.match(await page.textContent("#runtime"), /2 threads|[3-9] threads/);
  const answer = await askInPage(page, PROMPT);
  assert.equal(answer, cliAnswer(32));
  fs.mkdirSync(path.dirname(screenshotPath), { recursive: true });
  await page.screenshot({ path: screenshotPath, fullPage: true });
  const stored = await storedFiles(page);
  assert.equal(stored.filter((n) => n.endsWith(".gguf")).length, 1, `stored: ${stored}`);
  assert.equal(stored.filter((n) => n.endsWith(".json")).length, 1, `stored: ${stored}`);
  await page.close();
});

test("the next visit loads the model from the saved copy, without a network request for it", async () => {
  const page = await context.newPage();
  const modelRequests = [];
  page.on("request", (r) => {
    if (r.url().endsWith(".gguf")) modelRequests.push(r.url());
  });
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => !document.getElementById("prompt").disabled, null, { timeout: 120_000 });
  assert.match(await page.textContent("#model-status"), /from the saved copy/);
  assert.deepEqual(modelRequests, []);
  await page.close();
});

test("single-threaded build (page not isolated): the same output", async () => {
  const page = await openPage("?isolation=off");
  assert.equal(await page.evaluate(() => crossOriginIsolated), false);
  assert.equal(await page.evaluate(() => window.smolinfer.engine.build), "st");
  assert.match(await page.textContent("#runtime"), /1 thread/);
  const answer = await askInPage(page, PROMPT);
  assert.equal(answer, cliAnswer(32));
  await page.close();
});

test("the page stays responsive while the model generates", async () => {
  const page = await openPage();
  await page.evaluate(() => {
    window.gaps = [];
    let last = performance.now();
    window.timer = setInterval(() => {
      const now = performance.now();
      window.gaps.push(now - last);
      last = now;
    }, 20);
  });
  await askInPage(page, "Write a few sentences about the sea.", { maxTokens: 64 });
  const gaps = await page.evaluate(() => {
    clearInterval(window.timer);
    return window.gaps;
  });
  assert.ok(gaps.length > 20, `only ${gaps.length} timer ticks`);
  assert.ok(Math.max(...gaps) < 100, `the longest gap between timer ticks was ${Math.max(...gaps).toFixed(0)} ms`);
  await page.close();
});

test("stop ends a generation within one token; a second generation while one runs is refused", async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const engine = window.smolinfer.engine;
    const messages = [{ role: "user", content: "Tell me a long story about a lighthouse." }];
    const controller = new AbortController();
    let pieces = 0;
    let atStop = -1;
    let code = "";
    let busy = "";
    const first = (async () => {
      try {
        for await (const _ of engine.chat(messages, { maxTokens: 400, temperature: 0.8, seed: 3, signal: controller.signal })) {
          pieces++;
          if (pieces === 3) {
            try {
              for await (const _ of engine.generate("hello", { maxTokens: 4 })) break;
            } catch (e) {
              busy = `${e.code}: ${e.message}`;
            }
          }
          if (pieces === 8) {
            atStop = pieces;
            controller.abort();
          }
        }
      } catch (e) {
        code = e.code;
      }
    })();
    await first;
    return { pieces, atStop, code, busy, generated: engine.stats().generatedTokens };
  });
  assert.equal(r.code, "aborted");
  assert.match(r.busy, /^busy: a generation is already running/);
  assert.ok(r.pieces - r.atStop <= 1, `${r.pieces - r.atStop} pieces arrived after stop`);
  // And through the page: the stop button ends the answer, marked as stopped.
  await page.evaluate(() => (document.querySelector("details.settings").open = true));
  await page.fill("#max-tokens", "400");
  await page.fill("#prompt", "Tell me a long story.");
  await page.click("#send");
  await page.waitForFunction(() => (document.querySelector(".message.assistant.streaming")?.textContent.length ?? 0) > 20);
  await page.click("#stop");
  await page.waitForSelector(".message.assistant .meta", { timeout: 30_000 });
  assert.match(await page.textContent(".message.assistant .meta"), /^stopped/);
  await page.close();
});

test("a missing file, a non-GGUF file and a truncated download each show a clear error and leave the cache clean", async () => {
  const page = await openPage();
  const before = await storedFiles(page);
  const cases = [
    ["/faults/404", /download failed.*HTTP 404/],
    ["/faults/not-gguf.gguf", /not a model smolinfer can run.*not a GGUF file/],
    ["/faults/truncated.gguf", /download failed.*(truncated|failed after)/],
    ["/faults/short-length.gguf", /not a model smolinfer can run.*truncated GGUF file/],
  ];
  for (const [url, message] of cases) {
    await page.selectOption("#source", "url");
    await page.fill("#url", `${origin}${url}`);
    await page.click("#load");
    await page.waitForSelector("#error:not([hidden])", { timeout: 60_000 });
    assert.match(await page.textContent("#error"), message, url);
    await page.waitForFunction(() => !document.getElementById("load").disabled);
    assert.deepEqual(await storedFiles(page), before, `after ${url}`);
  }
  // The page still loads a good model afterwards.
  await page.selectOption("#source", { index: 0 });
  await page.click("#load");
  await page.waitForFunction(() => !document.getElementById("prompt").disabled, null, { timeout: 120_000 });
  await page.close();
});
