// The native half of `make bench`: `smolinfer bench --json` and llama.cpp's
// llama-bench on the same file, the same token counts and threads. Both
// measure the same way: pp = one batch of P tokens from an empty cache,
// tg = G tokens one at a time from an empty cache (no sampling), each run
// timed by the engine itself; the median of R runs.
import { spawnSync } from "node:child_process";
import path from "node:path";

import { median } from "./stats.mjs";

/** Runs a benchmark binary to completion; its stdout, or an Error with the last lines of its stderr. */
export function run(cmd, args, env = process.env) {
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 64 << 20, env });
  if (r.error) throw new Error(`${path.basename(cmd)}: ${r.error.message}`);
  if (r.status !== 0) {
    const why = (r.stderr || "").trim().split("\n").slice(-3).join(" | ");
    throw new Error(`${path.basename(cmd)} ${args.join(" ")} failed (exit ${r.status ?? r.signal}): ${why}`);
  }
  return r.stdout;
}

// fa: "off" (the golden files' setting, as llama-bench -fa off) or "on"
// (llama.cpp's default arithmetic, as llama-bench -fa auto on the CPU).
// depth: tokens already in the context (-d), 0 by default.
// isa: SMOLINFER_ISA's cap ("avx2": what an AVX2-only host runs), or none.
export function smolinfer(cli, model, { prompt, gen, threads, reps, depth = 0, isa = "" }, fa) {
  const env = isa ? { ...process.env, SMOLINFER_ISA: isa } : process.env;
  const out = run(cli, ["bench", "-m", model, "-p", String(prompt), "-n", String(gen), "-t", String(threads),
    "-r", String(reps), "-d", String(depth), "-fa", fa, "--json"], env);
  const j = JSON.parse(out.trim().split("\n").at(-1));
  if (isa && j.kernels !== isa) throw new Error(`smolinfer bench ran the ${j.kernels} kernels, not ${isa}`);
  if (j.threads !== threads) throw new Error(`smolinfer bench ran ${j.threads} threads, not ${threads}`);
  if ((j.depth ?? 0) !== depth) throw new Error(`smolinfer bench ran at depth ${j.depth}, not ${depth}`);
  return { pp: median(j.prefill_tps_runs), tg: median(j.decode_tps_runs), ppRuns: j.prefill_tps_runs, tgRuns: j.decode_tps_runs,
    peakRss: j.peak_rss_bytes, kernels: j.kernels };
}

// Flash attention off (-fa off, i.e. -fa 0: smolinfer's exact mode and the
// golden files' setting) and auto (llama.cpp's default), in one invocation.
export function llamaBench(bin, model, { prompt, gen, threads, reps, depth = 0 }, fas = ["off", "auto"]) {
  const entries = JSON.parse(run(bin, ["-m", model, "-p", String(prompt), "-n", String(gen), "-t", String(threads),
    "-r", String(reps), "-d", String(depth), "-fa", fas.join(","), "-o", "json"]));
  const out = { commit: entries[0]?.build_commit ?? "", modelSize: entries[0]?.model_size, fa: {} };
  for (const e of entries) {
    if (e.n_threads !== threads) throw new Error(`llama-bench ran ${e.n_threads} threads, not ${threads}`);
    const fa = e.flash_attn === 0 || e.flash_attn === false ? "off" : "auto";
    const test = e.n_gen > 0 ? "tg" : "pp";
    const runs = e.samples_ts ?? [e.avg_ts];
    out.fa[fa] ??= {};
    out.fa[fa][test] = median(runs);
    out.fa[fa][`${test}Runs`] = runs;
  }
  for (const fa of fas) {
    if (!out.fa[fa]?.pp || !out.fa[fa]?.tg) throw new Error(`llama-bench printed no pp/tg result for -fa ${fa}`);
  }
  return out;
}

/** Fills results.native (rows) and results.errors; records llama.cpp's commit and model sizes. */
export function runNative(config, results, log) {
  const counts = { prompt: config.prompt, gen: config.gen, reps: config.nativeReps };
  const show = (r) => `pp${config.prompt} ${r.pp.toFixed(1)}  tg${config.gen} ${r.tg.toFixed(1)} tok/s`;
  for (const m of config.models) {
    for (const threads of config.threads) {
      const where = `native ${m.key} t=${threads}`;
      for (const fa of ["off", "on"]) {
        const engine = fa === "off" ? "smolinfer" : "smolinfer fa=on";
        try {
          const ours = smolinfer(config.smolinfer, m.file, { ...counts, threads }, fa);
          results.native.push({ model: m.key, threads, engine, ...ours });
          log(`[${where}] smolinfer -fa ${fa}: ${show(ours)}`);
        } catch (e) {
          results.errors.push(`${where} smolinfer -fa ${fa}: ${e.message}`);
          log(`[${where}] smolinfer -fa ${fa}: ERROR ${e.message}`);
        }
      }
      try {
        const theirs = llamaBench(config.llamaBench, m.file, { ...counts, threads });
        results.llamaCommit = theirs.commit;
        results.llamaModelSize[m.key] = theirs.modelSize;
        for (const [fa, r] of Object.entries(theirs.fa)) {
          results.native.push({ model: m.key, threads, engine: `llama.cpp fa=${fa}`, ...r });
          log(`[${where}] llama.cpp -fa ${fa}: ${show(r)}`);
        }
      } catch (e) {
        results.errors.push(`${where} llama-bench: ${e.message}`);
        log(`[${where}] llama-bench: ERROR ${e.message}`);
      }
    }
  }
}
