// A SmolLM2-1.7B-shaped Q4_K_M file (random weights in the real dimensions
// and llama.cpp's Q4_K_M types, SmolLM2's vocabulary: 1.1 GB, written by
// tests/make_random_model; tests/support/random_model.h) loads in headless
// the browser (Chromium or Firefox) and generates exactly what the native CLI generates from it.
// Natively the same file is held to llama.cpp's golden output
// (tests/golden/large/, test_golden_generation).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";

import { openPage, useBrowser } from "./harness.mjs";
import { repoRoot } from "./wasm-module.mjs";

const NAME = "smollm2-1.7b";
const PROMPT = "The capital of France is";
const TOKENS = 6;
const CONTEXT = 256;
const cli = path.join(repoRoot, "build", "native", "smolinfer");
const writer = path.join(repoRoot, "build", "native", "tests", "make_random_model");

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "smolinfer-large-"));
const file = path.join(dir, `${NAME}.gguf`);
execFileSync(writer, [NAME, file], { stdio: ["ignore", "ignore", "inherit"] });
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const h = useBrowser({ modelsDir: dir });

test("a SmolLM2-1.7B-shaped Q4_K_M file loads in the browser and generates what the native CLI does", { timeout: 900_000 }, async () => {
  const native = JSON.parse(
    execFileSync(cli, ["run", "-m", file, "-c", String(CONTEXT), "--temp", "0", "-n", String(TOKENS), "-p", PROMPT, "--json"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }),
  );
  const page = await openPage(h, "?autoload=0");
  const r = await page.evaluate(
    async ({ url, prompt, tokens, context }) => {
      const engine = window.smolinfer.engine;
      const info = await engine.load(url, { contextSize: context });
      let text = "";
      for await (const piece of engine.generate(prompt, { temperature: 0, maxTokens: tokens, repeatPenalty: 1 })) text += piece;
      return { info, text };
    },
    { url: `/models/${NAME}.gguf`, prompt: PROMPT, tokens: TOKENS, context: CONTEXT },
  );
  assert.equal(r.info.fileBytes, fs.statSync(file).size);
  assert.ok(r.info.fileBytes > 1.0e9, `${r.info.fileBytes} bytes`);
  assert.equal(r.info.architecture, "llama");
  assert.equal(r.info.quantization, "Q4_K_M");
  assert.equal(r.info.layers, 24);
  assert.equal(Math.round(r.info.parameters / 1e8), 17); // 1.71 B
  assert.equal(native.ids.length, TOKENS);
  assert.equal(r.text, native.text);
  await page.close();
});
