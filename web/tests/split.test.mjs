// Split models (llama.cpp's gguf-split layout) in headless Chromium: the
// real model cut into 3 parts by `smolinfer split` (whose parts are
// llama-gguf-split's bytes, test_split_model) loads from its first part's
// URL and from the three files picked together, answers exactly as the
// native CLI does with the single file, and says what it is (family,
// parameters, quantization). A model too big for WebAssembly is refused
// from its parts' sizes before any part is downloaded; a missing part is named.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";

import { askInPage, modelPath, openPage, storedFiles, TEST_TIMEOUT, useBrowser } from "./harness.mjs";
import { repoRoot } from "./wasm-module.mjs";

const PROMPT = "What is the capital of France?";
const cli = path.join(repoRoot, "build", "native", "smolinfer");

// The models this server offers: the single file (the fault endpoints serve
// slices of it), its 3-part split, and a 2-part split whose second part is missing.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "smolinfer-split-"));
execFileSync(cli, ["split", "--split-max-tensors", "100", modelPath, path.join(dir, "smol")], { stdio: "ignore" });
execFileSync(cli, ["split", "--split-max-tensors", "200", modelPath, path.join(dir, "gap")], { stdio: "ignore" });
fs.rmSync(path.join(dir, "gap-00002-of-00002.gguf"));
fs.symlinkSync(modelPath, path.join(dir, path.basename(modelPath)));
const parts = [1, 2, 3].map((i) => path.join(dir, `smol-0000${i}-of-00003.gguf`));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const h = useBrowser({ modelsDir: dir });

function cliAnswer(tokens) {
  const out = execFileSync(cli, ["run", "-m", modelPath, "--chat", "--temp", "0", "-n", String(tokens), "-p", PROMPT, "--json"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  return JSON.parse(out).text;
}

const sha256 = (file) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");

// What the engine says about the model, checked against the files themselves.
function checkInfo(info) {
  assert.equal(info.parts, 3);
  assert.equal(info.fileBytes, parts.reduce((n, p) => n + fs.statSync(p).size, 0));
  assert.equal(info.architecture, "llama");
  assert.equal(info.quantization, "Q4_1");
  assert.equal(info.fileType, "Q4_1");
  assert.equal(info.dominantType, "Q4_1");
  assert.equal(Math.round(info.parameters / 1e4), 13452); // llama.cpp: "model params = 134.52 M"
}

async function waitUntilLoaded(page) {
  await page.waitForFunction(() => !document.getElementById("load").disabled, null, { timeout: 180_000 });
  const error = await page.evaluate(() => (document.getElementById("error").hidden ? "" : document.getElementById("error").textContent));
  assert.equal(error, "");
}

test("the URL of a split model's first part loads every part; the answer equals the native CLI's on the single file", { timeout: TEST_TIMEOUT }, async () => {
  const page = await openPage(h, "?autoload=0");
  await page.selectOption("#source", "url");
  await page.fill("#url", `${h.origin}/models/smol-00001-of-00003.gguf`);
  await page.click("#load");
  await waitUntilLoaded(page);
  assert.match(await page.textContent("#model-status"), /· llama · 135M parameters · Q4_1 · .* in 3 parts · .*downloaded/);
  const info = await page.evaluate(() => window.smolinfer.engine.model);
  checkInfo(info);
  assert.deepEqual(info.partSha256, parts.map(sha256));
  assert.equal(info.sha256, sha256(parts[0]));
  assert.equal(await askInPage(page, PROMPT), cliAnswer(32));
  // Each part is saved for the next visit, which loads all of them from there.
  const stored = await storedFiles(page);
  assert.equal(stored.filter((n) => n.endsWith(".gguf")).length, 3, `stored: ${stored}`);
  const again = await page.evaluate(async () => {
    const info = await window.smolinfer.engine.load("/models/smol-00001-of-00003.gguf");
    return { fromCache: info.fromCache, parts: info.parts };
  });
  assert.deepEqual(again, { fromCache: true, parts: 3 });
  await page.close();
});

test("the three parts picked as files load as one model", { timeout: TEST_TIMEOUT }, async () => {
  const page = await openPage(h, "?autoload=0");
  await page.selectOption("#source", "file");
  await page.setInputFiles("#file", [parts[2], parts[0], parts[1]]); // any order
  assert.match(await page.textContent("#file-name"), /3 files/);
  await page.click("#load");
  await waitUntilLoaded(page);
  assert.match(await page.textContent("#model-status"), /llama · 135M parameters · Q4_1 · .* in 3 parts · .*from your file/);
  checkInfo(await page.evaluate(() => window.smolinfer.engine.model));
  assert.equal(await askInPage(page, PROMPT, { maxTokens: 12 }), cliAnswer(12));
  await page.close();
});

test("a split model too big for WebAssembly is refused from its parts' sizes, before any part downloads; a missing part is named", { timeout: TEST_TIMEOUT }, async () => {
  const page = await openPage(h, "?autoload=0");
  const r = await page.evaluate(async () => {
    const engine = window.smolinfer.engine;
    const outcome = (p) => p.then(() => "ok", (e) => `${e.code}: ${e.message}`);
    return {
      huge: await outcome(engine.load("/faults/huge-00001-of-00002.gguf")),
      later: await outcome(engine.load("/models/smol-00002-of-00003.gguf")),
      gap: await outcome(engine.load("/models/gap-00001-of-00002.gguf")),
      pickedTwoOfThree: await outcome(
        engine.load([new File([new Uint8Array(8)], "m-00001-of-00003.gguf"), new File([new Uint8Array(8)], "m-00003-of-00003.gguf")]),
      ),
    };
  });
  assert.equal(
    r.huge,
    "out_of_memory: the model is 5.00 GB in 2 parts (2.50 GB + 2.50 GB); WebAssembly can address at most 4.29 GB",
  );
  const { hugeDownloads } = await (await fetch(`${h.origin}/faults/open`)).json();
  assert.equal(hugeDownloads, 0, "a part of the refused model was downloaded");
  assert.match(r.later, /^bad_input: .*smol-00002-of-00003\.gguf is part 2 of 3 of a split model: load its first part, .*smol-00001-of-00003\.gguf$/);
  assert.match(r.gap, /^network: part 2 of 2 of the split model is missing: HTTP 404 for .*gap-00002-of-00002\.gguf$/);
  assert.match(r.pickedTwoOfThree, /^bad_input: .*part 2 of 3 is missing$/);
  // What the page shows.
  await page.selectOption("#source", "url");
  await page.fill("#url", `${h.origin}/faults/huge-00001-of-00002.gguf`);
  await page.click("#load");
  await page.waitForSelector("#error:not([hidden])");
  assert.match(await page.textContent("#error"), /the model is 5\.00 GB in 2 parts \(2\.50 GB \+ 2\.50 GB\)/);
  await page.close();
});
