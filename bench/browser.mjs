// The browser half of `make bench`: smolinfer's WebAssembly builds and
// @wllama/wllama in headless Chromium and Firefox ESR (Debian's, started as
// the browser tests start them: web/tests/browsers.mjs), on the same model files, the same prompts (exactly P tokens, see
// prompts.mjs), the same number of generated tokens and threads. Each
// engine reports its own timings (page/bench.js); the counts each engine
// reports are checked against the benchmark's.
//
// The pages are served by the demo server, web/serve.mjs, from a site put
// together in build/bench/site: the smolinfer site (build/web/site), the
// benchmark page at /bench/ and wllama's ES module and wasm at /wllama/,
// with the model files under /models/.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { launchBrowser } from "../web/tests/browsers.mjs";
import { readGguf } from "./gguf.mjs";
import { makePrompts } from "./prompts.mjs";
import { bytesPerToken } from "./roofline.mjs";
import { median } from "./stats.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
export const executables = { chromium: process.env.CHROMIUM ?? "/usr/bin/chromium", firefox: process.env.FIREFOX ?? "/usr/bin/firefox-esr" };

function link(target, at) {
  if (!fs.existsSync(target)) throw new Error(`missing ${path.relative(repo, target)}`);
  fs.symlinkSync(target, at);
}

/** build/bench/site and build/bench/models, as symbolic links. */
function assembleSite(models) {
  const root = path.join(repo, "build", "bench");
  const site = path.join(root, "site");
  const modelDir = path.join(root, "models");
  fs.rmSync(site, { recursive: true, force: true });
  fs.rmSync(modelDir, { recursive: true, force: true });
  fs.mkdirSync(site, { recursive: true });
  fs.mkdirSync(modelDir, { recursive: true });
  const webSite = path.join(repo, "build", "web", "site");
  if (!fs.existsSync(path.join(webSite, "smolinfer.js"))) throw new Error("no build/web/site/smolinfer.js (make web)");
  for (const f of fs.readdirSync(webSite)) link(path.join(webSite, f), path.join(site, f));
  link(path.join(here, "page"), path.join(site, "bench"));
  link(path.join(here, "node_modules", "@wllama", "wllama", "esm"), path.join(site, "wllama"));
  for (const m of models) {
    const at = path.join(modelDir, path.basename(m.file));
    if (fs.existsSync(at)) throw new Error(`two models named ${path.basename(m.file)}`);
    link(path.resolve(m.file), at);
  }
  return { site, modelDir };
}

// The browser's content processes (a page and its workers live in one:
// Chromium's renderers, Firefox's web content processes) and their resident
// memory, from /proc. One page is open at a time, so the largest peak among
// them is that page's (the others are spares the browser keeps ready, and
// Firefox's driver page, which is on another site).
const contentMarks = { chromium: ["--type=renderer"], firefox: ["-contentproc", "-isForBrowser"] };
function rendererPids(browser) {
  const pids = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${d}/cmdline`, "utf8");
      if (contentMarks[browser].every((m) => cmdline.includes(m))) pids.push(d);
    } catch {
      // gone
    }
  }
  return pids;
}

function memory(pid, field) {
  try {
    const m = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`${field}:\\s+(\\d+) kB`));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}
const peakRss = (pid) => memory(pid, "VmHWM");

export function browserVersion(name, context) {
  if (name === "chromium") return context.browser()?.version() ?? "";
  try {
    return execFileSync(executables.firefox, ["--version"], { encoding: "utf8" }).trim().replace(/^Mozilla Firefox /, "");
  } catch {
    return "";
  }
}

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

export async function startServer(models) {
  const { site, modelDir } = assembleSite(models);
  const port = await freePort();
  const server = spawn(process.execPath, [path.join(repo, "web", "serve.mjs"), "--port", String(port), "--site", site,
    "--models", modelDir], { stdio: ["ignore", "ignore", "inherit"] });
  let exited = null;
  server.once("exit", (code, signal) => (exited = code ?? signal));
  const origin = `http://127.0.0.1:${port}`;
  for (const t0 = Date.now(); Date.now() - t0 < 60_000; await new Promise((r) => setTimeout(r, 200))) {
    if (exited !== null) throw new Error(`web/serve.mjs exited (${exited})`);
    try {
      if ((await fetch(`${origin}/bench/index.html`)).ok) return { server, origin };
    } catch {
      // not listening yet
    }
  }
  server.kill();
  throw new Error("web/serve.mjs did not answer within 60 s");
}

// How long each phase the page reports (page/bench.js) may take before the
// case fails: generous for a slow, busy machine, short enough that an
// engine that hangs costs minutes, not the whole run.
const phaseLimitSeconds = { page: 60, load: 300, warmup: 300, run: 1200 };

// Content processes a browser keeps with no test page open (counted at its start).
const spareProcesses = {};

/** One (model, engine, threads) case in a fresh page; the engine's result or { error }. */
async function runCase(browser, context, origin, model, c, maxTokens) {
  // smolinfer at one thread: its single-threaded build, which a page that is
  // not cross-origin isolated gets. Everything else runs isolated.
  const isolated = !(c.engine === "smolinfer" && c.threads === 1);
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => m.type() === "error" && pageErrors.push(m.text()));
  // The page says what it is doing in window.benchPhaseNow (page/bench.js); polled.
  let current = { name: "page", detail: "", since: Date.now() };
  let poller;
  let timer;
  try {
    await page.goto(`${origin}/bench/index.html${isolated ? "" : "?isolation=off"}`);
    await page.waitForFunction(() => window.benchReady === true, null, { timeout: phaseLimitSeconds.page * 1000 });
    // Each process's memory before the engine: the page's own share.
    const before = new Map(rendererPids(browser).map((pid) => [pid, memory(pid, "VmRSS")]));
    poller = setInterval(() => {
      page.evaluate(() => window.benchPhaseNow ?? null).then((p) => {
        if (p && (p.name !== current.name || p.detail !== current.detail)) current = { ...p, since: Date.now() };
      }, () => {});
    }, 1000);
    const args = {
      modelUrl: `/models/${encodeURIComponent(path.basename(model.file))}`,
      threads: c.threads,
      warmup: model.warmup,
      prompts: model.prompts,
      maxTokens,
      flashAttention: c.flashAttention ?? false,
      simd: c.simd,
    };
    const timeout = new Promise((_, reject) => {
      timer = setInterval(() => {
        const limit = phaseLimitSeconds[current.name] ?? phaseLimitSeconds.run;
        if (Date.now() - current.since > limit * 1000) {
          reject(new Error(`stalled: no progress for ${limit} s at "${current.name}${current.detail ? ` ${current.detail}` : ""}"`));
        }
      }, 1000);
    });
    const work = page.evaluate(({ engine, args }) => window.bench[engine](args), { engine: c.engine, args });
    work.catch(() => {}); // after a stall it rejects when the page closes
    const out = await Promise.race([work, timeout]);
    const peaks = rendererPids(browser).map((pid) => [pid, peakRss(pid)]).filter(([, b]) => Number.isFinite(b));
    const [pid, peak] = peaks.reduce((a, b) => (b[1] > a[1] ? b : a), ["", -Infinity]);
    out.peakRendererBytes = peak;
    out.pageBytes = before.get(pid) ?? NaN;
    return out;
  } catch (e) {
    const detail = pageErrors.length ? ` (page: ${pageErrors.slice(-3).join(" | ")})` : "";
    return { error: `${e.message.split("\n")[0]}${detail}` };
  } finally {
    clearInterval(timer);
    clearInterval(poller);
    await page.close().catch(() => {});
    // Let the closed page's process exit before the next case measures.
    for (const t0 = Date.now(); rendererPids(browser).length > spareProcesses[browser] && Date.now() - t0 < 5000; ) {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * Every count an engine reported that is not the benchmark's. `lead`
 * tokens (a BOS every prompt starts with) may come from the cache.
 */
function countProblems(out, c, config, lead) {
  const problems = [];
  for (const [i, run] of out.runs.entries()) {
    if (run.promptTokens !== config.prompt) problems.push(`run ${i + 1}: ${run.promptTokens} prompt tokens`);
    if (run.reusedTokens > lead) problems.push(`run ${i + 1}: ${run.reusedTokens} prompt tokens reused from the cache`);
    if (run.generatedTokens !== config.gen) problems.push(`run ${i + 1}: ${run.generatedTokens} generated tokens`);
    if (!(run.prefillTps > 0) || !(run.decodeTps > 0)) problems.push(`run ${i + 1}: no timings`);
  }
  if (out.threads !== c.threads) problems.push(`ran ${out.threads} threads, not ${c.threads}`);
  return problems;
}

/** Fills results.browser (rows) and results.errors. */
export async function runBrowserPart(config, results, log) {
  for (const b of config.browsers) {
    if (!executables[b]) throw new Error(`BENCH_BROWSERS: no browser named ${b} (chromium, firefox)`);
    if (!fs.existsSync(executables[b])) throw new Error(`no ${b} at ${executables[b]} (scripts/install-deps)`);
  }
  const models = config.models.map((m) => {
    const prompts = makePrompts(config.smolinfer, m.file, config.browserReps + 1, config.prompt);
    return { ...m, warmup: prompts[0], prompts: prompts.slice(1), lead: prompts.lead };
  });
  const cases = config.threads.flatMap((threads) => [
    // flash attention off, as wllama fa=off (the targets' pair); on against wllama fa=auto.
    { engine: "smolinfer", name: "smolinfer", threads, flashAttention: false },
    // What a browser without relaxed SIMD gets (Safari): plain SIMD128, fast arithmetic.
    { engine: "smolinfer", name: "smolinfer simd128", threads, simd: "simd128", flashAttention: false },
    { engine: "wllama", name: "wllama fa=off", threads, flashAttention: false },
    ...(config.wllamaFaAuto
      ? [
          { engine: "smolinfer", name: "smolinfer fa=on", threads, flashAttention: true },
          { engine: "wllama", name: "wllama fa=auto", threads, flashAttention: true },
        ]
      : []),
  ]);
  const { server, origin } = await startServer(models);
  try {
    for (const browser of config.browsers) await runBrowser(browser, config, results, log, models, cases, origin);
  } finally {
    server.kill();
  }
}

async function runBrowser(browserName, config, results, log, models, cases, origin) {
  let browser;
  try {
    browser = await launchBrowser(browserName);
    const { context } = browser;
    results.browsers[browserName] = browserVersion(browserName, context);
    await new Promise((r) => setTimeout(r, 2000)); // the spare processes it starts with
    spareProcesses[browserName] = rendererPids(browserName).length;
    for (const model of models) {
      for (const c of cases) {
        const where = `${browserName} ${model.key} t=${c.threads}`;
        const out = await runCase(browserName, context, origin, model, c, config.gen);
        if (out.error) {
          results.errors.push(`${where} ${c.name}: ${out.error}`);
          log(`[${where}] ${c.name}: ERROR ${out.error}`);
          continue;
        }
        const problems = countProblems(out, c, config, model.lead ?? 0);
        // Seconds the engine's own timings account for, per run, over the wall time of the call.
        const timed = out.runs.map((r) => (config.prompt / r.prefillTps + (config.gen - 1) / r.decodeTps) / r.wallSeconds);
        const row = {
          browser: browserName,
          model: model.key,
          threads: c.threads,
          engine: c.name,
          build: out.build,
          exact: out.exact,
          readySeconds: out.readySeconds,
          peakRendererBytes: out.peakRendererBytes,
          pageBytes: out.pageBytes,
          // What the engine must hold: the file and (smolinfer) its f16 KV cache at the loaded context.
          fileBytes: fs.statSync(model.file).size,
          kvBytes: out.contextSize ? bytesPerToken(readGguf(model.file), 0).kvPerPosition * out.contextSize : NaN,
          pp: median(out.runs.map((r) => r.prefillTps)),
          tg: median(out.runs.map((r) => r.decodeTps)),
          wallSeconds: median(out.runs.map((r) => r.wallSeconds)),
          timedFraction: median(timed),
          loadSeconds: out.loadSeconds,
          runs: out.runs,
          problems,
        };
        results.browser.push(row);
        if (problems.length) results.errors.push(`${where} ${c.name}: counts differ from the benchmark's: ${problems.join("; ")}`);
        log(`[${where}] ${c.name} (${out.build} build): pp${config.prompt} ${row.pp.toFixed(1)}  tg${config.gen} ${row.tg.toFixed(1)} tok/s` +
          `, ${row.wallSeconds.toFixed(1)} s per run${problems.length ? `  COUNTS DIFFER: ${problems.join("; ")}` : ""}`);
      }
    }
  } finally {
    await browser?.close().catch(() => {});
  }
}
