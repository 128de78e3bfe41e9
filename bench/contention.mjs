// The contention part of `make bench` (issue 14): how much of its quiet
// decode speed each engine keeps while other processes keep every core
// busy, as on a user's machine that is rarely idle. smolinfer bench and
// llama-bench (-fa off) decode the same file with the same threads, taking
// turns: quiet, then with one busy process per core (a spinning node), then
// quiet again. Kept share = loaded tokens/s / quiet tokens/s (medians of the
// runs); the target is smolinfer's share ≥ llama.cpp's.
import { spawn } from "node:child_process";
import os from "node:os";

import { run } from "./native.mjs";
import { median } from "./stats.mjs";

const GEN = 64;  // decode tokens per run: long enough to see the scheduler, short enough to repeat

function oursTg(config, model, threads) {
  const out = run(config.smolinfer, ["bench", "-m", model, "-p", "0", "-n", String(GEN), "-t", String(threads), "-r", "3", "--json"]);
  return median(JSON.parse(out.trim().split("\n").at(-1)).decode_tps_runs);
}

function theirsTg(config, model, threads) {
  const entries = JSON.parse(run(config.llamaBench, ["-m", model, "-p", "0", "-n", String(GEN), "-t", String(threads), "-r", "3",
    "-fa", "off", "-o", "json"]));
  const tg = entries.find((e) => e.n_gen > 0);
  if (!tg) throw new Error("llama-bench printed no tg result");
  return median(tg.samples_ts ?? [tg.avg_ts]);
}

/** One spinning process per core; resolves to a function that stops them. */
function busyProcesses(n) {
  const children = Array.from({ length: n }, () =>
    spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
  return () => Promise.all(children.map((c) => new Promise((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    c.once("exit", resolve);
    c.kill("SIGKILL");
  })));
}

/**
 * Resolves to { model, threads, busy, rounds, ours: { quiet, loaded, kept },
 * theirs: { ... } } for the first model at the most threads of the run.
 */
export async function runContention(config, log) {
  const model = config.models[0];
  const threads = Math.max(...config.threads);
  const busy = os.cpus().length;
  const rounds = config.quick ? 1 : 2;
  const tps = { ours: { quiet: [], loaded: [] }, theirs: { quiet: [], loaded: [] } };
  const measure = (phase) => {
    for (let r = 0; r < rounds; r++) {
      tps.ours[phase].push(oursTg(config, model.file, threads));
      tps.theirs[phase].push(theirsTg(config, model.file, threads));
    }
    log(`[contention] ${phase}: smolinfer ${tps.ours[phase].map((x) => x.toFixed(1)).join(", ")} tok/s, ` +
      `llama.cpp ${tps.theirs[phase].map((x) => x.toFixed(1)).join(", ")} tok/s`);
  };
  measure("quiet");
  const stop = busyProcesses(busy);
  try {
    await new Promise((r) => setTimeout(r, 1000));  // let them take the cores
    measure("loaded");
  } finally {
    await stop();
  }
  measure("quiet");
  const summary = (e) => {
    const quiet = median(tps[e].quiet);
    const loaded = median(tps[e].loaded);
    return { quiet, loaded, kept: loaded / quiet, runs: tps[e] };
  };
  return { model: model.key, threads, busy, gen: GEN, ours: summary("ours"), theirs: summary("theirs") };
}

/** The target row, in the shape report.mjs lists targets. */
export function contentionTargets(c) {
  if (!c) return [];
  return [{
    what: `${c.model} native decode, ${c.threads} thread(s), under ${c.busy} busy processes: share of quiet speed kept, smolinfer / llama.cpp -fa off`,
    bar: 1,
    got: c.ours.kept / c.theirs.kept,
  }];
}

/** The report's section. */
export function contentionSection(c) {
  if (!c) return [];
  const f = (x) => x.toFixed(1);
  return [
    `## Under contention: decode with every core busy`,
    "",
    `${c.model}, ${c.threads} thread(s), tg${c.gen} (smolinfer bench -p 0; llama-bench -p 0 -fa off), 3 runs per call. The engines take turns: quiet, then with ${c.busy} spinning processes (one per core), then quiet again. Kept = median loaded tokens/s / median quiet tokens/s.`,
    "",
    "| engine | quiet tok/s | loaded tok/s | kept |",
    "|---|---|---|---|",
    `| smolinfer | ${f(c.ours.quiet)} | ${f(c.ours.loaded)} | ${c.ours.kept.toFixed(2)} |`,
    `| llama.cpp -fa off | ${f(c.theirs.quiet)} | ${f(c.theirs.loaded)} | ${c.theirs.kept.toFixed(2)} |`,
    "",
  ];
}
