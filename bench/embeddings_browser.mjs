// The browser half of the embeddings benchmark (issue 29: at least 2x
// wllama's createEmbedding in Chromium, at 1 and 2 threads): texts embedded
// per second by smolinfer's engine.embeddings.create and @wllama/wllama's
// createEmbedding, in the same headless browser, on the same random-weight
// encoders and texts as the native half (embeddings.mjs), every text of a
// count in one call to each. The in-page drivers are page/embeddings.js;
// the site and browsers are the browser part's (browser.mjs).
//
// Each (browser, model, engine, threads) case is one fresh page: load, an
// untimed warm-up embedding, then every count `reps` times; the time is the
// embedding call's alone. smolinfer at 1 thread runs its single-threaded
// build (what a page without cross-origin isolation gets), as in the
// browser part; everything else runs isolated. The two engines' vectors
// for the first text must agree (cosine >= 0.99): both are llama.cpp's
// arithmetic, so a lower cosine means one of them computes something else.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { launchBrowser } from "../web/tests/browsers.mjs";
import { browserVersion, executables, startServer } from "./browser.mjs";
import { EMBEDDING_COUNTS, embeddingTexts } from "./embeddings.mjs";
import { readGguf } from "./gguf.mjs";
import { median } from "./stats.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const MIN_COSINE = 0.99;
// Seconds a phase the page reports may last before the case fails (an
// EmbeddingGemma-shaped model embeds 32 texts in minutes at one thread in wasm).
const phaseLimitSeconds = { page: 60, load: 300, warmup: 300, run: 1800 };
const WARMUP_TEXT = "A short text to warm the engine up before the timed runs.";

/** The length of a vector the file makes: its last dense projection's output, else its embedding length. */
export function embeddingDimension(file) {
  const { metadata, tensors } = readGguf(file);
  const arch = metadata["general.architecture"];
  const dense = tensors.filter((t) => /^dense_\d+\.weight$/.test(t.name)).sort((a, b) => a.name.localeCompare(b.name, "en", { numeric: true }));
  const n = dense.length ? Number(dense.at(-1).dims[1]) : Number(metadata[`${arch}.embedding_length`]);
  if (!(n > 0)) throw new Error(`${file}: no ${arch}.embedding_length in its metadata`);
  return n;
}

export function cosine(a, b) {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
}

/** One case in a fresh page: the page driver's result, or { error }. */
async function runCase(context, origin, driver, args, isolated) {
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => m.type() === "error" && pageErrors.push(m.text()));
  let current = { name: "page", detail: "", since: Date.now() };
  let poller, timer;
  try {
    await page.goto(`${origin}/bench/index.html${isolated ? "" : "?isolation=off"}`);
    await page.waitForFunction(() => window.benchReady === true, null, { timeout: phaseLimitSeconds.page * 1000 });
    poller = setInterval(() => {
      page.evaluate(() => window.benchPhaseNow ?? null).then((p) => {
        if (p && (p.name !== current.name || p.detail !== current.detail)) current = { ...p, since: Date.now() };
      }, () => {});
    }, 1000);
    const stalled = new Promise((_, reject) => {
      timer = setInterval(() => {
        const limit = phaseLimitSeconds[current.name] ?? phaseLimitSeconds.run;
        if (Date.now() - current.since > limit * 1000) reject(new Error(`stalled: no progress for ${limit} s at "${current.name} ${current.detail}"`));
      }, 1000);
    });
    const work = page.evaluate(({ driver, args }) => window.bench[driver](args), { driver, args });
    work.catch(() => {}); // after a stall it rejects when the page closes
    return await Promise.race([work, stalled]);
  } catch (e) {
    const detail = pageErrors.length ? ` (page: ${pageErrors.slice(-3).join(" | ")})` : "";
    return { error: `${e.message.split("\n")[0]}${detail}` };
  } finally {
    clearInterval(timer);
    clearInterval(poller);
    await page.close().catch(() => {});
  }
}

/** Everything wrong with one engine's result, as sentences (empty: usable). */
function problems(out, threads, dimension) {
  const p = [];
  if (out.threads !== threads) p.push(`ran ${out.threads} threads, not ${threads}`);
  if (out.dimension !== dimension) p.push(`vectors of ${out.dimension} values, the file's are ${dimension}`);
  for (const r of out.results) if (r.seconds.some((s) => !(s > 0))) p.push(`${r.count} texts: no time`);
  return p;
}

/**
 * { reps, browsers: {name: version}, rows: [{ browser, model, threads, count,
 * tokens, ours, theirs, cosine, wllamaError }], agreement: [...] }: texts per
 * second, medians. Problems go to `errors`.
 */
export async function runEmbeddingsBrowser(config, errors, log) {
  const models = config.embeddingModels;
  if (!models.length) throw new Error("no embedding models (BENCH_EMBEDDING_MODELS; bench/run writes them)");
  const browsers = config.embeddingBrowsers;
  for (const b of browsers) {
    if (!executables[b]) throw new Error(`BENCH_EMBEDDING_BROWSERS: no browser named ${b} (chromium, firefox)`);
  }
  const reps = config.quick ? 1 : 3;
  const lists = EMBEDDING_COUNTS.map((n) => embeddingTexts(n));
  const wllama = JSON.parse(fs.readFileSync(path.join(here, "node_modules", "@wllama", "wllama", "package.json"), "utf8")).version;
  const out = { reps, minCosine: MIN_COSINE, wllama, browsers: {}, rows: [], agreement: [] };
  const { server, origin } = await startServer(models);
  try {
    for (const browserName of browsers) {
      // A browser per model: a case that takes the whole browser down (wllama
      // on the nomic-shaped file once did) costs only that model's rows.
      for (const m of models) {
        let browser;
        try {
          browser = await launchBrowser(browserName);
          out.browsers[browserName] = browserVersion(browserName, browser.context);
          const dimension = embeddingDimension(m.file);
          const args = { modelUrl: `/models/${encodeURIComponent(path.basename(m.file))}`, warmup: WARMUP_TEXT, lists, reps };
          for (const threads of config.threads) {
            const where = `${browserName} ${m.key} t=${threads}`;
            const a = await runCase(browser.context, origin, "smolinferEmbed", { ...args, threads }, threads !== 1);
            const b = await runCase(browser.context, origin, "wllamaEmbed", { ...args, threads }, true);
            out.agreement.push(compare(out, a, b, { browserName, m, threads, dimension, where }, errors, log));
          }
        } catch (e) {
          errors.push(`embeddings-browser ${browserName} ${m.key}: ${e.message}`);
          log(`[embeddings-browser ${browserName} ${m.key}] ERROR ${e.message}`);
        } finally {
          await browser?.close().catch(() => {});
        }
      }
    }
  } finally {
    server.kill();
  }
  return out;
}

// Checks one (browser, model, threads) pair of results, adds its rows, and
// says how the vectors compare.
function compare(out, a, b, { browserName, m, threads, dimension, where }, errors, log) {
  const fail = (what) => {
    errors.push(`embeddings-browser ${where}: ${what}`);
    log(`[embeddings-browser ${where}] ERROR ${what}`);
  };
  const wllamaError = b.loadError ? `wllama cannot load it: ${b.loadError}` : b.error ? `wllama: ${b.error}` : "";
  if (a.error) fail(`smolinfer: ${a.error}`);
  if (b.error) fail(`wllama: ${b.error}`);
  if (b.loadError) log(`[embeddings-browser ${where}] ${wllamaError}`);
  const bad = [...(a.error ? [] : problems(a, threads, dimension).map((p) => `smolinfer ${p}`)),
    ...(wllamaError ? [] : problems(b, threads, dimension).map((p) => `wllama ${p}`))];
  for (const p of bad) fail(p);
  let cos = NaN;
  if (!a.error && !wllamaError) {
    cos = cosine(a.firstVector, b.firstVector);
    if (!(cos >= MIN_COSINE)) fail(`the engines' vectors for the first text disagree: cosine ${cos.toFixed(6)} (at least ${MIN_COSINE} wanted)`);
  }
  for (const count of EMBEDDING_COUNTS) {
    const ours = a.results?.find((r) => r.count === count);
    const theirs = wllamaError ? undefined : b.results?.find((r) => r.count === count);
    if (ours && theirs && ours.tokens !== theirs.tokens) fail(`${count} texts: smolinfer counted ${ours.tokens} tokens, wllama ${theirs.tokens}`);
    const row = {
      browser: browserName, model: m.key, threads, count,
      tokens: ours?.tokens ?? theirs?.tokens,
      ours: ours ? count / median(ours.seconds) : NaN,
      theirs: theirs ? count / median(theirs.seconds) : NaN,
      oursRuns: ours?.seconds, theirsRuns: theirs?.seconds,
      build: a.build, wllamaError, trusted: bad.length === 0 && cos >= MIN_COSINE,
    };
    out.rows.push(row);
    log(`[embeddings-browser ${where} ${count} texts] ${row.tokens} tokens; smolinfer ${row.ours.toFixed(2)} texts/s (${a.build ?? "?"}), ` +
      (wllamaError ? wllamaError : `wllama ${row.theirs.toFixed(2)} texts/s (${(row.ours / row.theirs).toFixed(2)}x)`));
  }
  return { browser: browserName, model: m.key, threads, cosine: cos, dimension };
}
