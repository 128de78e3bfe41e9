// What the browser tests share: the demo server (web/serve.mjs with its
// fault endpoints and the real model), a headless browser with a fresh
// profile (browsers.mjs: Chromium, or Firefox with SMOLINFER_BROWSER=firefox),
// and helpers for the demo page.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { after, before } from "node:test";

import { BROWSER, launchBrowser } from "./browsers.mjs";
import { repoRoot } from "./wasm-module.mjs";

export const modelPath = process.env.SMOLINFER_MODEL;
if (!modelPath) throw new Error("SMOLINFER_MODEL is not set: run the tests with 'make test', which fetches the model");
export { BROWSER };

/** A test that has not ended after this long has hung (an await nothing will settle): fail it. */
export const TEST_TIMEOUT = 300_000;

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts the server and the browser before the file's tests and stops them
 * after; returns an object whose `origin` and `context` are set by then.
 * The server offers the models in `modelsDir` (default: the real model's directory).
 */
export function useBrowser({ modelsDir = path.dirname(modelPath) } = {}) {
  const h = { origin: "", context: null, server: null, browser: null };
  before(async () => {
    const port = await freePort();
    h.origin = `http://127.0.0.1:${port}`;
    h.server = spawn(
      process.execPath,
      [path.join(repoRoot, "web", "serve.mjs"), "--port", String(port), "--faults", "--models", modelsDir],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise((resolve, reject) => {
      h.server.stdout.once("data", resolve);
      h.server.once("exit", (code) => reject(new Error(`the demo server exited (${code})`)));
    });
    h.browser = await launchBrowser(BROWSER);
    h.context = h.browser.context;
  });
  after(async () => {
    await h.browser?.close();
    h.server?.kill();
  });
  return h;
}

/** Opens the demo page and waits until it can chat (or, with autoload=0, until the engine runs). */
export async function openPage(h, query = "") {
  const page = await h.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${h.origin}/${query}`);
  if (query.includes("autoload=0")) {
    await page.waitForFunction(() => window.smolinfer?.engine && !document.getElementById("load").disabled, null, { timeout: 60_000 });
  } else {
    await page.waitForFunction(() => !document.getElementById("prompt").disabled, null, { timeout: 180_000 });
  }
  assert.deepEqual(errors, []);
  return page;
}

/** Sends one chat message through the page's controls; returns the answer's text. */
export async function askInPage(page, text, { maxTokens = 32, temperature = 0 } = {}) {
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

/** From now on the page's engine.chat.completions.create records each request in window.sent (as JSON). */
export async function recordRequests(page) {
  await page.evaluate(() => {
    const create = window.smolinfer.engine.chat.completions.create;
    window.sent = [];
    window.smolinfer.engine.chat.completions.create = (request, options) => {
      window.sent.push(JSON.parse(JSON.stringify(request)));
      return create(request, options);
    };
  });
}

/** The files the page's origin keeps in its private file system, sorted. */
export async function storedFiles(page) {
  return page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    const dir = await root.getDirectoryHandle("smolinfer-models", { create: true });
    const names = [];
    for await (const name of dir.keys()) names.push(name);
    return names.sort();
  });
}

/** Asserts that the store holds only complete entries (a record and its file, nothing else). */
export function assertOnlyComplete(names, what) {
  const keys = new Set(names.map((n) => n.replace(/\.[^.]*$/, "")));
  for (const key of keys) {
    assert.ok(names.includes(`${key}.json`) && names.includes(`${key}.gguf`), `${what}: incomplete entry ${key} in ${names}`);
  }
  assert.equal(names.length, 2 * keys.size, `${what}: unexpected files in ${names}`);
}
