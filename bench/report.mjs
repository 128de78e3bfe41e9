// The benchmark's report (bench/RESULTS.md and the table `make bench` prints):
// tokens/s side by side, ratios smolinfer / the other engine, the targets
// of the speed issue and whether each is met, the roofline, any problem of
// the run, and the machine.
import fs from "node:fs";
import path from "node:path";

import { rooflineTps } from "./roofline.mjs";
import { avx2Section, avx2Targets } from "./avx2.mjs";
import { contentionSection, contentionTargets } from "./contention.mjs";
import { depthSection, depthTargets } from "./depth.mjs";
import { embeddingsSection, embeddingsTargets } from "./embeddings.mjs";
import { embeddingsBrowserSection, embeddingsBrowserTargets } from "./embeddings_browser_report.mjs";
import { largeSection, largeTargets } from "./large.mjs";
import { serveSection, serveTargets } from "./serve_report.mjs";

const fmt = (x) => (Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x.toFixed(1)) : "—");
const ratio = (a, b) => (Number.isFinite(a / b) && b > 0 ? `${(a / b).toFixed(2)}x` : "—");
const pct = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(0)}%` : "—");
const mb = (b) => `${(b / 1e6).toFixed(1)} MB`;
const busy = (load) => Number(load.split(" ")[0]) > 0.5;

// The targets, as (measured value, bar): decode and prefill against llama.cpp
// -fa off natively and against wllama -fa off in the browser, and the share
// of the decode roofline natively.
const browserTitle = { chromium: "Chromium", firefox: "Firefox" };

function targets(config, results) {
  const find = (table, model, t, engine, browser) =>
    table.find((r) => r.model === model && r.threads === t && r.engine === engine && (!browser || r.browser === browser));
  const out = [];
  for (const { key } of config.models) {
    for (const t of config.threads) {
      if (config.parts.has("native")) {
        const o = find(results.native, key, t, "smolinfer");
        const l = find(results.native, key, t, "llama.cpp fa=off");
        // Issue 14's bars.
        const want = t === 1 ? 1.5 : 2;
        out.push({ what: `${key} native decode, ${t} thread(s), vs llama.cpp -fa off`, bar: want, got: o?.tg / l?.tg });
        out.push({ what: `${key} native prefill, ${t} thread(s), vs llama.cpp -fa off`, bar: 1.2, got: o?.pp / l?.pp });
        if (config.parts.has("roofline")) {
          const roof = rooflineTps(results.roofline, key, t, "native");
          out.push({ what: `${key} native decode, ${t} thread(s), share of the roofline`, bar: 0.6, got: o?.tg / roof, share: true });
        }
      }
      for (const b of config.parts.has("browser") ? config.browsers : []) {
        // The browser-speed issue: at least 2x wllama with the relaxed-SIMD build (4x wanted).
        const o = find(results.browser, key, t, "smolinfer", b);
        const w = find(results.browser, key, t, "wllama fa=off", b);
        const bad = Boolean(o?.problems.length || w?.problems.length);
        const B = browserTitle[b];
        out.push({ what: `${key} ${B} decode, ${t} thread(s), vs wllama`, bar: 2, got: bad ? NaN : o?.tg / w?.tg });
        out.push({ what: `${key} ${B} prefill, ${t} thread(s), vs wllama`, bar: 2, got: bad ? NaN : o?.pp / w?.pp });
        out.push({
          what: `${key} ${B}, ${t} thread(s): ready from the saved copy vs wllama from memory (time ratio wllama / smolinfer)`,
          bar: 1,
          got: w?.readySeconds / o?.readySeconds,
        });
        out.push({
          what: `${key} ${B}, ${t} thread(s): peak renderer memory / (model file + KV cache)`,
          bar: 1.3,
          got: o?.peakRendererBytes / (o?.fileBytes + o?.kvBytes),
          atMost: true,
        });
      }
    }
  }
  if (config.parts.has("browser") && config.threads.includes(1) && config.threads.includes(2)) {
    for (const b of config.browsers) {
      for (const { key } of config.models) {
        const one = find(results.browser, key, 1, "smolinfer", b);
        const two = find(results.browser, key, 2, "smolinfer", b);
        out.push({ what: `${key} ${browserTitle[b]} decode, 2 threads vs 1`, bar: 1.7, got: two?.tg / one?.tg });
      }
    }
  }
  if (config.parts.has("serve")) out.push(...serveTargets(results.serve));
  if (config.parts.has("contention")) out.push(...contentionTargets(results.contention));
  if (config.parts.has("depth")) out.push(...depthTargets(results.depth));
  if (config.parts.has("large")) out.push(...largeTargets(results.large, results.roofline?.bandwidth));
  if (config.parts.has("avx2")) out.push(...avx2Targets(results.avx2));
  if (config.parts.has("embeddings")) out.push(...embeddingsTargets(results.embeddings));
  if (config.parts.has("embeddings-browser")) out.push(...embeddingsBrowserTargets(results.embeddingsBrowser));
  return out;
}

export function report(config, results, m) {
  const P = config.prompt;
  const G = config.gen;
  const lines = [];
  const L = (s = "") => lines.push(s);
  const find = (table, model, t, engine) => table.find((r) => r.model === model && r.threads === t && r.engine === engine);
  const roof = results.roofline;

  L(`# smolinfer benchmarks${config.quick ? " (BENCH_QUICK=1: one repetition, a smoke test, not a measurement)" : ""}`);
  L();
  const skipped = ["native", "browser", "roofline", "serve", "contention", "depth", "large", "avx2", "embeddings", "embeddings-browser"].filter((p) => !config.parts.has(p));
  if (skipped.length) {
    L(`**Partial run: ${skipped.join(", ")} not run (BENCH_PARTS); the targets that need it are not listed.**`);
    L();
  }
  if (results.errors.length) {
    L(`**INCOMPLETE: ${results.errors.length} problem(s) in this run (listed under "Problems"); "—" marks what was not measured.**`);
    L();
  }
  L(`Written by \`make bench\` (bench/run) on ${m.date}. Load average at start ${m.loadStart}, at end ${m.loadEnd} (${m.cores} cores)` +
    // Only the load before measuring tells of other work: at the end the
    // 1-minute average mostly counts the benchmark's own 2-thread runs.
    `${busy(m.loadStart) ? ": **the machine was busy, these numbers are noisy**" : ""}.`);
  L();
  const reps = [
    ...(config.parts.has("native") ? [`${config.nativeReps} run(s) natively`] : []),
    ...(config.parts.has("browser") ? [`${config.browserReps} in the browser`] : []),
  ];
  if (reps.length) {
    L(`Prefill (pp${P}): a batch of ${P} tokens. Decode (tg${G}): ${G} tokens one at a time. Tokens/s, the median of` +
      ` ${reps.join(" and ")}, each engine timing itself. Ratios are smolinfer / the other engine.`);
    L();
  }

  const goals = targets(config, results);
  if (goals.length) {
    L(`## Targets`);
    L();
    L(`| target | wanted | measured | met |`);
    L(`|---|---|---|---|`);
    for (const g of goals) {
      const shown = Number.isFinite(g.got) ? (g.share ? pct(g.got) : `${g.got.toFixed(2)}x`) : "—";
      const ok = g.atMost ? g.got <= g.bar : g.got >= g.bar;
      const met = Number.isFinite(g.got) ? (ok ? "yes" : "no") : "not measured";
      L(`| ${g.what} | ${g.atMost ? "≤" : "≥"} ${g.share ? pct(g.bar) : `${g.bar.toFixed(1)}x`} | ${shown} | ${met} |`);
    }
    L();
  }

  if (config.parts.has("native")) {
    L(`## Native: \`smolinfer bench\` vs llama.cpp's \`llama-bench\``);
    L();
    L(`Both: pp from an empty cache, tg from an empty cache without sampling, the same file and threads.` +
      ` llama-bench ${results.llamaCommit ? `(llama.cpp ${results.llamaCommit}, the source node-llama-cpp@${m.nodeLlamaCpp || "?"} ships)` : ""}` +
      ` with \`-fa off\` (= \`-fa 0\`: flash attention off; the targets use it) against smolinfer \`-fa off\`,` +
      ` and \`-fa auto\` (llama.cpp's default: flash attention on for the CPU) against smolinfer \`-fa on\` (its default, the same arithmetic).`);
    L();
    L(`| model | threads | test | smolinfer -fa off | llama.cpp -fa off | ratio | smolinfer -fa on | llama.cpp -fa auto | ratio | share of roofline: smolinfer / llama.cpp -fa off |`);
    L(`|---|---|---|---|---|---|---|---|---|---|`);
    for (const { key } of config.models) {
      for (const t of config.threads) {
        const ours = find(results.native, key, t, "smolinfer");
        const off = find(results.native, key, t, "llama.cpp fa=off");
        const auto = find(results.native, key, t, "llama.cpp fa=auto");
        const oursOn = find(results.native, key, t, "smolinfer fa=on");
        for (const test of ["pp", "tg"]) {
          const r = test === "tg" ? rooflineTps(roof, key, t, "native") : NaN;
          const share = Number.isFinite(r) ? `${pct(ours?.tg / r)} / ${pct(off?.tg / r)}` : "";
          L(`| ${key} | ${t} | ${test}${test === "pp" ? P : G} | ${fmt(ours?.[test])} | ${fmt(off?.[test])} | ${ratio(ours?.[test], off?.[test])}` +
            ` | ${fmt(oursOn?.[test])} | ${fmt(auto?.[test])} | ${ratio(oursOn?.[test], auto?.[test])} | ${share} |`);
        }
      }
    }
    L();
    const rss = config.models.flatMap(({ key }) => config.threads.map((t) => [key, t, find(results.native, key, t, "smolinfer")?.peakRss]))
      .filter(([, , b]) => Number.isFinite(b));
    if (rss.length) {
      L(`smolinfer's peak resident memory (the weights, read into memory, plus KV cache and scratch): ` +
        rss.map(([key, t, b]) => `${key} ${t}T ${(b / 2 ** 20).toFixed(0)} MiB`).join(", ") + ".");
      L();
    }
  }

  for (const browser of config.parts.has("browser") ? config.browsers : []) {
    const B = browserTitle[browser];
    const find = (table, model, t, engine) =>
      table.find((r) => r.model === model && r.threads === t && r.engine === engine && r.browser === browser);
    const others = ["smolinfer simd128", "wllama fa=off", ...(config.wllamaFaAuto ? ["smolinfer fa=on", "wllama fa=auto"] : [])];
    L(`## ${B}: smolinfer (WebAssembly) vs @wllama/wllama ${m.wllama}, headless ${B} ${results.browsers[browser] ?? "?"}`);
    L();
    L(`The same ${P}-token prompts (a different first token each run, so nothing is reused from a cache), then ${G} tokens generated` +
      ` greedily with end-of-generation ignored; one untimed warm-up generation first. smolinfer runs its single-threaded build at` +
      ` 1 thread (a page that is not cross-origin isolated) and its multi-threaded build at more, each in the build ${B} gets` +
      ` (relaxed SIMD, exact) and, as "smolinfer simd128", in the plain SIMD128 build a browser without relaxed SIMD gets (Safari;` +
      ` fast arithmetic, not bit-exact); its ratio column compares it with smolinfer's relaxed build. wllama runs on an isolated page with` +
      ` n_threads set, CPU only. Both with flash attention off${config.wllamaFaAuto ? ", and on (smolinfer -fa on, wllama -fa auto)" : ""}. Timings: smolinfer's \`engine.stats()\`;` +
      ` wllama's completion \`timings\` (llama-server's), decode as (predicted_n − 1) / predicted_ms, the forward passes smolinfer counts.` +
      ` "timed / wall": the share of each call's wall time (streaming to the page included) that the engine's own timings cover.`);
    L();
    L(`| model | threads | test | smolinfer (build) | ${others.map((e) => `${e.replace("fa=", "-fa ")} (build) | ratio`).join(" | ")}` +
      ` | simd128 vs wllama | share of roofline: smolinfer / wllama | timed / wall: smolinfer / wllama |`);
    L(`|---|---|---|---|${others.map(() => "---|---|").join("")}---|---|---|`);
    const cell = (r, test) => (r ? `${fmt(r[test])} (${r.build})${r.problems.length ? " (counts differ!)" : ""}` : "—");
    for (const { key } of config.models) {
      for (const t of config.threads) {
        const ours = find(results.browser, key, t, "smolinfer");
        const plain = find(results.browser, key, t, "smolinfer simd128");
        const w = find(results.browser, key, t, "wllama fa=off");
        for (const test of ["pp", "tg"]) {
          const cells = others.map((e) => {
            const theirs = find(results.browser, key, t, e);
            return `${cell(theirs, test)} | ${ratio(ours?.[test], theirs?.[test])}`;
          });
          const r = test === "tg" ? rooflineTps(roof, key, t, "browser") : NaN;
          const share = Number.isFinite(r) ? `${pct(ours?.tg / r)} / ${pct(w?.tg / r)}` : "";
          const timed = test === "tg" ? `${pct(ours?.timedFraction)} / ${pct(w?.timedFraction)}` : "";
          L(`| ${key} | ${t} | ${test}${test === "pp" ? P : G} | ${cell(ours, test)} | ${cells.join(" | ")}` +
            ` | ${ratio(plain?.[test], w?.[test])} | ${share} | ${timed} |`);
        }
      }
    }
    L();
    L(`Loading and memory. "Ready": smolinfer from creating an engine to a model loaded from the copy a first load saved` +
      ` (reading it back, checking its SHA-256, parsing); wllama from its model file, already in the page's memory, to loaded.` +
      ` "Peak": the page's content process's peak resident memory (VmHWM) over the whole case: both loads (the second in a new` +
      ` engine made right after terminating the first), every generation; "page": that process's resident memory with the page` +
      ` loaded, before any engine (the browser's, not the engine's); "file + KV": the model file and smolinfer's f16 KV cache at` +
      ` its default context; "engine's share" = (peak − page) / (file + KV).`);
    L();
    L(`| model | threads | ready: smolinfer / wllama | peak: smolinfer / simd128 / wllama | page | file + KV | peak / (file + KV) | engine's share |`);
    L(`|---|---|---|---|---|---|---|---|`);
    for (const { key } of config.models) {
      for (const t of config.threads) {
        const ours = find(results.browser, key, t, "smolinfer");
        const plain = find(results.browser, key, t, "smolinfer simd128");
        const w = find(results.browser, key, t, "wllama fa=off");
        const need = ours?.fileBytes + ours?.kvBytes;
        const sec = (x) => (Number.isFinite(x) ? `${x.toFixed(2)} s` : "—");
        const mib = (x) => (Number.isFinite(x) ? `${(x / 2 ** 20).toFixed(0)} MiB` : "—");
        L(`| ${key} | ${t} | ${sec(ours?.readySeconds)} / ${sec(w?.readySeconds)} | ${mib(ours?.peakRendererBytes)} / ` +
          `${mib(plain?.peakRendererBytes)} / ${mib(w?.peakRendererBytes)} | ${mib(ours?.pageBytes)} | ${mib(need)} | ` +
          `${ratio(ours?.peakRendererBytes, need)} | ${ratio(ours?.peakRendererBytes - ours?.pageBytes, need)} |`);
      }
    }
    L();
  }
  if (results.sizes) {
    const kb = (b) => `${(b / 1024).toFixed(0)} KiB`;
    L(`## Package size`);
    L();
    L(`\`make package\`'s tarball (${results.sizes.tarball}): ${kb(results.sizes.tarballBytes)} packed, ${kb(results.sizes.unpackedBytes)}` +
      ` unpacked, ${results.sizes.files} files. A browser fetches one WebAssembly build (and its glue):`);
    L();
    L(`| build | .wasm | gzipped | glue .js | gzipped |`);
    L(`|---|---|---|---|---|`);
    for (const b of results.sizes.builds) L(`| ${b.name} | ${kb(b.wasm)} | ${kb(b.wasmGz)} | ${kb(b.glue)} | ${kb(b.glueGz)} |`);
    L();
  }

  if (roof) {
    L(`## Roofline for decoding`);
    L();
    L(`Read bandwidth ${config.threads.map((t) => `${fmt(roof.bandwidth[t])} GB/s with ${t} thread(s)`).join(", ")}` +
      ` (bench/bandwidth.cpp: a SIMD sum over 1 GiB, best of ${roof.reps}). Bytes per decoded token: every tensor once` +
      ` (the tied token embedding is the output matrix) plus the f16 K and V cache of the positions attended on average` +
      ` (native: from an empty cache; browser: after the ${P}-token prompt; cache padding not counted). Roofline = bandwidth with` +
      ` the run's threads / bytes per token: no engine can decode faster; an engine's share = its decode tokens/s / roofline.`);
    L();
    L(`| model | tensor bytes | llama-bench model_size | KV bytes/position | bytes/token native | bytes/token browser |` +
      ` ${config.threads.map((t) => `roofline ${t}T native / browser`).join(" | ")} |`);
    L(`|---|---|---|---|---|---|${config.threads.map(() => "---|").join("")}`);
    for (const { key } of config.models) {
      const b = roof.bytes[key];
      const size = results.llamaModelSize[key];
      const roofs = config.threads.map((t) => `${fmt(rooflineTps(roof, key, t, "native"))} / ${fmt(rooflineTps(roof, key, t, "browser"))} tok/s`);
      L(`| ${key} | ${mb(b.tensorBytes)} | ${size ? `${mb(size)}${size === b.tensorBytes ? " (same)" : " (DIFFERS)"}` : "—"} | ${b.native.kvPerPosition} B` +
        ` | ${mb(b.native.total)} | ${mb(b.browser.total)} | ${roofs.join(" | ")} |`);
    }
    L();
  }

  if (config.parts.has("serve") && results.serve) for (const line of serveSection(results.serve)) L(line);
  if (config.parts.has("contention") && results.contention) for (const line of contentionSection(results.contention)) L(line);
  if (config.parts.has("depth") && results.depth) for (const line of depthSection(results.depth)) L(line);
  if (config.parts.has("large") && results.large) for (const line of largeSection(results.large, roof?.bandwidth)) L(line);
  if (config.parts.has("avx2") && results.avx2) for (const line of avx2Section(results.avx2)) L(line);
  if (config.parts.has("embeddings") && results.embeddings) for (const line of embeddingsSection(results.embeddings)) L(line);
  if (config.parts.has("embeddings-browser") && results.embeddingsBrowser) {
    for (const line of embeddingsBrowserSection(results.embeddingsBrowser)) L(line);
  }

  if (results.errors.length) {
    L(`## Problems`);
    L();
    for (const e of results.errors) L(`- ${e}`);
    L();
  }

  L(`## Machine`);
  L();
  L(`| | |`);
  L(`|---|---|`);
  L(`| CPU | ${m.cpu}, ${m.cores} logical cores (${m.threadsPerCore || "?"} per core), L3 ${m.l3 || "?"}${m.hypervisor ? `, virtual machine (${m.hypervisor})` : ""} |`);
  L(`| CPU flags | ${m.flags.join(" ")} |`);
  L(`| memory | ${m.memory} |`);
  L(`| OS | ${m.os} |`);
  L(`| load average | when bench/run started ${m.loadInvoked || "?"}; when measuring began ${m.loadStart}; at the end ${m.loadEnd} |`);
  L(`| smolinfer | ${m.smolinfer}; native built with ${m.compiler || "?"}; WebAssembly with Emscripten ${m.emcc || "?"} |`);
  if (config.parts.has("native") || config.parts.has("serve")) L(`| llama.cpp | ${results.llamaCommit || "?"} (node-llama-cpp ${m.nodeLlamaCpp || "?"}'s source), ${m.llamaBuild || "?"} |`);
  if (config.parts.has("browser")) {
    const names = config.browsers.map((b) => `${browserTitle[b]} ${results.browsers[b] || "?"}`).join(", ");
    L(`| browsers | ${names} (headless), @wllama/wllama ${m.wllama || "?"} |`);
  }
  L(`| node | ${m.node} |`);
  L(`| models | ${config.models.map((x) => `${x.key}: ${path.basename(x.file)} (${(fs.statSync(x.file).size / 1e6).toFixed(1)} MB)`).join("; ")} |`);
  L(`| settings | prompt ${P}, generate ${G}, threads ${config.threads.join(",")}, repetitions ${config.nativeReps} native / ${config.browserReps} browser, parts ${[...config.parts].join(",")} |`);
  L(`| duration | ${m.minutes} min (${Object.entries(m.partMinutes).map(([p, t]) => `${p} ${t}`).join(", ")}) |`);
  L();
  return lines.join("\n");
}
