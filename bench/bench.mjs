// `make bench` (through bench/run, which installs and builds what this needs):
// smolinfer next to llama.cpp natively (native.mjs) and next to wllama in
// headless Chromium (browser.mjs), on the same model files, with the same
// token counts and threads, plus the memory roofline for decoding
// (roofline.mjs), plus `smolinfer serve` next to llama-server under
// concurrent streams (serve_bench.mjs). Prints the report (report.mjs) and writes it to
// bench/results/<host class>.md (indexed in bench/RESULTS.md); the raw numbers go to build/bench/results.json. Exits
// 1 if any part failed (the report then says what is missing and why).
//
// Inputs (environment; bench/run sets the paths):
//   BENCH_MODELS      "Q4_1=/path.gguf,Q4_K_M=/path.gguf"
//   SMOLINFER_BIN     build/native/smolinfer
//   LLAMA_BENCH       llama.cpp's llama-bench
//   LLAMA_BENCH_AVX2  llama-bench built for AVX2 only (the avx2 part)
//   LLAMA_SERVER      llama.cpp's llama-server (the serve part)
//   BANDWIDTH_BIN     build/bench/bandwidth
//   BENCH_QUICK=1     a smoke run: one repetition, the report to build/bench/RESULTS-quick.md
//   BENCH_REPS        repetitions per measurement (default 5 native, 3 browser; the median is reported)
//   BENCH_THREADS     thread counts (default 1,2)
//   BENCH_PARTS       any of native,browser,roofline,serve,contention,depth,large,avx2,embeddings,embeddings-browser (default all)
//   BENCH_EMBEDDING_MODELS  the embeddings parts' "key=/path.gguf,..." (bench/run writes them)
//   BENCH_EMBEDDING_BROWSERS  the embeddings-browser part's browsers (default chromium)
//   LLAMA_EMBEDDING   llama.cpp's llama-embedding (the embeddings part)
//   BENCH_DEPTH       the depth part's context already filled (default 4096)
//   BENCH_LARGE_MODEL the large part's 1.7B-shaped file (bench/run makes it)
//   BENCH_PROMPT, BENCH_GEN   prefill and decode token counts (default 128, 128)
//   BENCH_WLLAMA_FA_AUTO=1    also run wllama with flash attention on ("auto", llama.cpp's default)
//   BENCH_BROWSERS    the browser part's browsers (default chromium,firefox)
//   BENCH_SETTLE_SECONDS      wait at most this long for the load average to fall below 0.5 first (default 120, quick 0)
//   BENCH_SERVE_*     the serve part's settings (serve_bench.mjs lists them; it runs on the first of BENCH_MODELS)
//   BENCH_OUT         where to write the report (default bench/results/<host class>[.<parts>].md, indexed
//                     in bench/RESULTS.md: results_store.mjs; quick: build/bench/RESULTS-quick.md)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { describeMachine, llamaBuild, loadavg } from "./machine.mjs";
import { envInt } from "./env_int.mjs";
import { runAvx2 } from "./avx2.mjs";
import { runContention } from "./contention.mjs";
import { runDepth } from "./depth.mjs";
import { runEmbeddings } from "./embeddings.mjs";
import { runLarge } from "./large.mjs";
import { runNative } from "./native.mjs";
import { report } from "./report.mjs";
import { reportFile, writeIndex } from "./results_store.mjs";
import { measureRoofline } from "./roofline.mjs";
import { runServe, serveConfig } from "./serve_bench.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const env = process.env;
const log = (...a) => console.error(...a);

// Every part, in the order they run (contention last: it loads every core on purpose).
const allParts = ["native", "browser", "roofline", "serve", "contention", "depth", "large", "avx2", "embeddings", "embeddings-browser"];

function readConfig() {
  const quick = env.BENCH_QUICK === "1";
  const list = (s, fallback) => (s ? s.split(",").map((x) => x.trim()).filter(Boolean) : fallback);
  const positiveInt = (name, fallback) => envInt(env, name, fallback);
  const config = {
    quick,
    models: list(env.BENCH_MODELS, []).map((kv) => ({ key: kv.slice(0, kv.indexOf("=")), file: kv.slice(kv.indexOf("=") + 1) })),
    smolinfer: env.SMOLINFER_BIN ?? path.join(repo, "build", "native", "smolinfer"),
    llamaBench: env.LLAMA_BENCH ?? "",
    llamaBenchAvx2: env.LLAMA_BENCH_AVX2 ?? "",
    bandwidth: env.BANDWIDTH_BIN ?? path.join(repo, "build", "bench", "bandwidth"),
    nativeReps: positiveInt("BENCH_REPS", quick ? 1 : 5),
    browserReps: positiveInt("BENCH_REPS", quick ? 1 : 3),
    threads: list(env.BENCH_THREADS, ["1", "2"]).map(Number),
    parts: new Set(list(env.BENCH_PARTS, allParts)),
    embeddingBrowsers: list(env.BENCH_EMBEDDING_BROWSERS, ["chromium"]),
    embeddingModels: list(env.BENCH_EMBEDDING_MODELS, []).map((kv) => ({ key: kv.slice(0, kv.indexOf("=")), file: kv.slice(kv.indexOf("=") + 1) })),
    llamaEmbedding: env.LLAMA_EMBEDDING ?? "",
    depth: positiveInt("BENCH_DEPTH", 4096),
    largeModel: env.BENCH_LARGE_MODEL ?? "",
    prompt: positiveInt("BENCH_PROMPT", 128),
    gen: positiveInt("BENCH_GEN", 128),
    wllamaFaAuto: env.BENCH_WLLAMA_FA_AUTO === "1",
    browsers: list(env.BENCH_BROWSERS, ["chromium", "firefox"]),
    serve: serveConfig(env, quick),
    out: env.BENCH_OUT ?? (quick ? path.join(repo, "build", "bench", "RESULTS-quick.md") : ""),
  };
  if (!config.models.length) throw new Error("BENCH_MODELS is empty (run bench/run, or set BENCH_MODELS=Q4_1=/path/to/model.gguf)");
  for (const m of config.models) if (!m.key || !fs.existsSync(m.file)) throw new Error(`BENCH_MODELS: no model file for "${m.key}": ${m.file}`);
  if (config.threads.some((t) => !Number.isInteger(t) || t < 1)) throw new Error("BENCH_THREADS must be positive integers");
  // "grammar" is run by bench/run itself (bench/grammar_bench.cpp).
  config.parts.delete("grammar");
  for (const p of config.parts) if (!allParts.includes(p)) throw new Error(`BENCH_PARTS: unknown part "${p}"`);
  if (["native", "contention", "depth", "large"].some((p) => config.parts.has(p)) && !config.llamaBench) {
    throw new Error("LLAMA_BENCH is not set (bench/run builds it)");
  }
  if (config.parts.has("avx2") && !config.llamaBenchAvx2) throw new Error("LLAMA_BENCH_AVX2 is not set (bench/run builds it)");
  if (config.parts.has("serve") && !config.serve.llamaServer) throw new Error("LLAMA_SERVER is not set (bench/run builds it)");
  return config;
}

// Waits (at most BENCH_SETTLE_SECONDS, default 120; none in a quick run) for
// the 1-minute load average to fall below 0.5, so that the builds bench/run
// may just have done neither slow the first measurements nor get the run
// marked as busy.
async function settle(quick) {
  const limit = Number(env.BENCH_SETTLE_SECONDS ?? (quick ? 0 : 120));
  const load1 = () => Number(loadavg().split(" ")[0]);
  if (!(limit > 0) || load1() < 0.5) return;
  log(`bench: load average ${loadavg()}: waiting up to ${limit} s for it to fall below 0.5`);
  for (const t0 = Date.now(); Date.now() - t0 < limit * 1000 && load1() >= 0.5; ) await new Promise((r) => setTimeout(r, 5000));
}

const config = readConfig();
const invokedLoad = loadavg();
await settle(config.quick);
const machine = describeMachine(repo, here);
machine.loadInvoked = env.BENCH_LOAD_INVOKED || invokedLoad;
machine.llamaBuild = llamaBuild(config.llamaBench || (config.parts.has("serve") ? config.serve.llamaServer : ""));
log(`bench: ${machine.date}, ${machine.cpu}, ${machine.cores} cores, load average ${machine.loadStart}`);
if (Number(machine.loadStart.split(" ")[0]) > 0.5) log(`bench: the machine is busy (load average ${machine.loadStart}): the numbers will be noisy`);
const started = Date.now();
const results = { native: [], browser: [], errors: [], roofline: null, serve: null, contention: null, depth: null, large: null, avx2: null, embeddings: null, embeddingsBrowser: null,
  llamaModelSize: {}, llamaCommit: "", browsers: {}, sizes: null };

// Each part in turn; a part that fails leaves its rows out and says why.
const parts = {
  roofline: async () => (results.roofline = measureRoofline(config, log)),
  native: async () => runNative(config, results, log),
  browser: async () => (await import("./browser.mjs")).runBrowserPart(config, results, log), // playwright-core only when needed
  serve: async () => {
    results.serve = await runServe(config.serve, config.models[0], log);
    results.errors.push(...results.serve.errors);
    results.llamaCommit ||= results.serve.llamaCommit;
  },
  depth: async () => (results.depth = runDepth(config, log)),
  large: async () => (results.large = await runLarge(config, log)),
  avx2: async () => runAvx2(config, results, log),
  embeddings: async () => (results.embeddings = runEmbeddings(config, log)),
  "embeddings-browser": async () =>
    (results.embeddingsBrowser = await (await import("./embeddings_browser.mjs")).runEmbeddingsBrowser(config, results.errors, log)),
  // Last: it loads every core on purpose.
  contention: async () => (results.contention = await runContention(config, log)),
};
const partMinutes = {};
for (const [name, run] of Object.entries(parts)) {
  if (!config.parts.has(name)) continue;
  const t0 = Date.now();
  try {
    await run();
  } catch (e) {
    results.errors.push(`${name}: ${e.message}`);
    log(`[${name}] ERROR ${e.message}`);
  }
  partMinutes[name] = ((Date.now() - t0) / 60000).toFixed(1);
}
if (config.parts.has("browser")) {
  try {
    results.sizes = (await import("./sizes.mjs")).packageSizes(repo);
  } catch (e) {
    results.errors.push(`sizes: ${e.message}`);
  }
}
// The roofline's weight bytes (from the file's header) should be what llama.cpp counts.
for (const [key, size] of Object.entries(results.llamaModelSize)) {
  const ours = results.roofline?.bytes[key]?.tensorBytes;
  if (ours !== undefined && size !== ours) results.errors.push(`roofline ${key}: tensor bytes ${ours} but llama-bench's model_size is ${size}`);
}

machine.loadEnd = loadavg();
machine.minutes = ((Date.now() - started) / 60000).toFixed(1);
machine.partMinutes = partMinutes;
const text = report(config, results, machine);
const out = config.out || reportFile(here, machine, config.parts, allParts);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, text);
if (!config.out) writeIndex(here);
const raw = path.join(repo, "build", "bench", config.quick ? "results-quick.json" : "results.json");
fs.mkdirSync(path.dirname(raw), { recursive: true });
fs.writeFileSync(raw, JSON.stringify({ config: { ...config, parts: [...config.parts] }, machine, results }, null, 1));
console.log(text);
log(`bench: finished in ${machine.minutes} min; wrote ${path.relative(repo, out)}${config.out ? "" : " and bench/RESULTS.md"} (raw numbers: ${path.relative(repo, raw)})`);
if (results.errors.length) log(`bench: ${results.errors.length} problem(s):\n  ${results.errors.join("\n  ")}`);
process.exit(results.errors.length ? 1 : 0);
