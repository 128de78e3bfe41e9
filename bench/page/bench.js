// In-page drivers for the browser benchmark (bench/browser.mjs calls them
// through page.evaluate). Each loads one model into one engine with a given
// number of threads, runs an untimed warm-up generation, then one
// generation per prompt (each prompt starts with a different token, so no
// KV cache is reused) and returns the engine's own timings per run.
//
// Every run: the prompt's tokens evaluated as one batch (prefill), then
// maxTokens tokens generated greedily, end-of-generation tokens ignored.

import { smolinferEmbed, wllamaEmbed } from "./embeddings.js";

const now = () => performance.now();
// Tells bench/browser.mjs what the page is doing, so that a stall (a model
// that never loads, a generation that hangs) fails the case in minutes.
// bench/browser.mjs polls window.benchPhaseNow.
const phase = (name, detail = "") => (window.benchPhaseNow = { name, detail });

async function drain(stream) {
  let pieces = 0;
  for await (const _ of stream) pieces++;
  return pieces;
}

/**
 * smolinfer's public module (/smolinfer.js): its stats() after each
 * generation (prefillTps: prompt tokens / time of the prompt's forward pass;
 * decodeTps: forward passes / time of the generation loop, sampling included,
 * timed inside the engine's worker).
 */
async function smolinfer({ modelUrl, threads, simd, warmup, prompts, maxTokens, flashAttention }) {
  const loadOptions = { flashAttention: flashAttention ? "on" : "off" };
  phase("load", modelUrl);
  const { createEngine } = await import("/smolinfer.js");
  // First visit: download, save for offline use. Then the next visit, timed:
  // a new engine (worker, WebAssembly) loading the saved copy until ready.
  const first = await createEngine({ threads, simd });
  const t0 = now();
  await first.load(modelUrl, loadOptions);
  const loadSeconds = (now() - t0) / 1000;
  first.terminate();
  const t1 = now();
  const engine = await createEngine({ threads, simd });
  try {
    const info = await engine.load(modelUrl, loadOptions);
    const readySeconds = (now() - t1) / 1000;
    if (!info.fromCache) throw new Error("the second load did not come from the saved copy");
    const options = { maxTokens, temperature: 0, ignoreEos: true, repeatPenalty: 1 };
    phase("warmup");
    await drain(engine.generate(warmup.text, { ...options, maxTokens: 8 }));
    const runs = [];
    for (const [i, p] of prompts.entries()) {
      phase("run", `${i + 1} of ${prompts.length}`);
      const w0 = now();
      await drain(engine.generate(p.text, options));
      const s = engine.stats();
      runs.push({
        prefillTps: s.prefillTps,
        decodeTps: s.decodeTps,
        promptTokens: s.promptTokens,
        reusedTokens: s.reusedTokens,
        generatedTokens: s.generatedTokens,
        stop: s.stop,
        wallSeconds: (now() - w0) / 1000,
      });
    }
    const s = engine.stats();
    return {
      engine: "smolinfer",
      build: engine.build,
      exact: engine.exact,
      threads: s.threads,
      crossOriginIsolated,
      weightTypes: info.weightTypes,
      contextSize: info.contextSize,
      loadSeconds,
      readySeconds,
      memoryBytes: s.memoryBytes,
      runs,
    };
  } finally {
    engine.terminate();
  }
}

/**
 * @wllama/wllama (llama.cpp's server in wasm): createCompletion's `timings`
 * (llama-server's: prompt_n / prompt_per_second for the prefill,
 * predicted_n / predicted_ms for the decode).
 */
async function wllama({ modelUrl, threads, warmup, prompts, maxTokens, flashAttention }) {
  phase("load", modelUrl);
  const { Wllama, LoggerWithoutDebug } = await import("/wllama/index.js");
  const quiet = { ...LoggerWithoutDebug, log: () => {}, warn: () => {} };
  const w = new Wllama({ default: "/wllama/wasm/wllama.wasm" }, { logger: quiet, suppressNativeLog: true });
  try {
    const t0 = now();
    const response = await fetch(modelUrl);
    if (!response.ok) throw new Error(`${modelUrl}: HTTP ${response.status}`);
    const blob = await response.blob();
    // Ready: from the file in memory to a loaded model (what smolinfer's
    // readySeconds is measured against).
    const t1 = now();
    await w.loadModel([blob], {
      n_threads: threads,
      n_ctx: 512,
      n_gpu_layers: 0, // CPU (wasm SIMD) only, no WebGPU
      n_parallel: 1,
      flash_attn: flashAttention, // false: off (as llama-bench -fa 0 and smolinfer); true: llama.cpp's "auto"
    });
    const loadSeconds = (now() - t0) / 1000;
    const readySeconds = (now() - t1) / 1000;
    // The same prompt text as smolinfer's (wllama's completion takes text, not
    // ids; both tokenizers are llama.cpp's, and prompt_n is checked);
    // cache_prompt: false makes every run evaluate the whole prompt.
    const options = { max_tokens: maxTokens, temperature: 0, ignore_eos: true, cache_prompt: false, stream: false };
    phase("warmup");
    await w.createCompletion({ ...options, prompt: warmup.text, max_tokens: 8 });
    const runs = [];
    for (const [i, p] of prompts.entries()) {
      phase("run", `${i + 1} of ${prompts.length}`);
      const w0 = now();
      const r = await w.createCompletion({ ...options, prompt: p.text });
      const t = r.timings ?? {};
      runs.push({
        prefillTps: t.prompt_per_second,
        // Forward passes per second, as smolinfer counts them: the first
        // generated token comes from the prompt's logits, so predicted_ms
        // times predicted_n - 1 passes (some llama-server versions divide by
        // predicted_n in predicted_per_second; it is kept for reference).
        decodeTps: t.predicted_n > 1 && t.predicted_ms > 0 ? ((t.predicted_n - 1) * 1000) / t.predicted_ms : NaN,
        reportedDecodeTps: t.predicted_per_second,
        promptTokens: t.prompt_n,
        reusedTokens: t.cache_n,
        generatedTokens: t.predicted_n,
        completionTokens: r.usage?.completion_tokens,
        stop: r.choices?.[0]?.finish_reason,
        wallSeconds: (now() - w0) / 1000,
      });
    }
    return {
      engine: "wllama",
      build: w.isMultithread() ? "mt" : "st",
      threads: w.getNumThreads(),
      crossOriginIsolated,
      loadSeconds,
      readySeconds,
      runs,
    };
  } finally {
    await w.exit().catch(() => {});
  }
}

window.bench = { smolinfer, wllama, smolinferEmbed, wllamaEmbed };
window.benchReady = true;
