// The large-model part of `make bench` (issue 14): a file with
// SmolLM2-1.7B's real dimensions (2048 embedding, 8192 feed-forward, 32
// heads, 24 layers, its vocabulary size) and random weights in Q4_K_M's
// types (tests/make_random_model smollm2-1.7b; bench/run makes it once and
// keeps it outside the repository). Here the weights dwarf every cache:
// decode is bound by memory, prefill by the K-quant kernels. smolinfer
// bench and llama-bench (-fa off) on the same file and threads; decode's
// share of the roofline for both; each process's peak resident memory
// (VmHWM, read from /proc while it runs: the same measure for both).
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { bytesPerToken } from "./roofline.mjs";
import { readGguf } from "./gguf.mjs";
import { median } from "./stats.mjs";

const PROMPT = 64;
const GEN = 32;

function vmHwm(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;  // exited between polls
  }
}

/** Runs cmd to completion: { stdout, peakRss } or throws with the end of its stderr. */
function runWithPeak(cmd, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "", stderr = "", peak = 0;
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const poll = setInterval(() => (peak = Math.max(peak, vmHwm(child.pid))), 50);
    child.on("error", (e) => {
      clearInterval(poll);
      reject(new Error(`${path.basename(cmd)}: ${e.message}`));
    });
    child.on("close", (code, signal) => {
      clearInterval(poll);
      if (code !== 0) {
        const why = stderr.trim().split("\n").slice(-3).join(" | ");
        reject(new Error(`${path.basename(cmd)} ${args.join(" ")} failed (exit ${code ?? signal}): ${why}`));
      } else {
        resolve({ stdout, peakRss: peak });
      }
    });
  });
}

// One repetition of each engine: { pp, tg, peakRss }.
async function oursOnce(config, file, threads) {
  const o = await runWithPeak(config.smolinfer, ["bench", "-m", file, "-p", String(PROMPT), "-n", String(GEN), "-t", String(threads),
    "-r", "1", "-fa", "off", "--json"]);
  const j = JSON.parse(o.stdout.trim().split("\n").at(-1));
  return { pp: median(j.prefill_tps_runs), tg: median(j.decode_tps_runs), peakRss: o.peakRss };
}
async function theirsOnce(config, file, threads) {
  const l = await runWithPeak(config.llamaBench, ["-m", file, "-p", String(PROMPT), "-n", String(GEN), "-t", String(threads),
    "-r", "1", "-fa", "off", "-o", "json"]);
  const entries = JSON.parse(l.stdout);
  const pick = (gen) => entries.find((e) => (e.n_gen > 0) === gen);
  if (!pick(true) || !pick(false)) throw new Error("llama-bench printed no pp/tg result for the 1.7B-shaped file");
  return { pp: pick(false).avg_ts, tg: pick(true).avg_ts, peakRss: l.peakRss };
}

// The repetitions are interleaved, one process of each engine per round,
// and the engine that goes first alternates: on a shared host the speed
// drifts by a third within minutes (and of two back-to-back smolinfer
// runs the second was slower in 10 of 12 pairs on an AVX2 Zen 3), so three
// runs of one engine and then three of the other measured the drift as
// much as the engines (1.28x and 0.96x decode in two runs hours apart on
// that host, with no change to the kernels this file uses).
/** { model, file, rows: [{ threads, ours, theirs }] } with pp, tg and peakRss each. */
export async function runLarge(config, log) {
  const file = config.largeModel;
  if (!file || !fs.existsSync(file)) throw new Error(`no 1.7B-shaped model file (BENCH_LARGE_MODEL: ${file || "unset"}; bench/run makes it)`);
  const reps = config.quick ? 1 : 3;
  const rows = [];
  for (const threads of config.threads) {
    const ourRuns = [], theirRuns = [];
    for (let i = 0; i < reps; i++) {
      if (i % 2 === 0) {
        ourRuns.push(await oursOnce(config, file, threads));
        theirRuns.push(await theirsOnce(config, file, threads));
      } else {
        theirRuns.push(await theirsOnce(config, file, threads));
        ourRuns.push(await oursOnce(config, file, threads));
      }
    }
    const summary = (runs) => ({ pp: median(runs.map((r) => r.pp)), tg: median(runs.map((r) => r.tg)),
      peakRss: Math.max(...runs.map((r) => r.peakRss)) });
    const ours = summary(ourRuns), theirs = summary(theirRuns);
    log(`[large t=${threads}] smolinfer pp${PROMPT} ${ours.pp.toFixed(1)} tg${GEN} ${ours.tg.toFixed(1)}; ` +
      `llama.cpp pp${PROMPT} ${theirs.pp.toFixed(1)} tg${GEN} ${theirs.tg.toFixed(1)} tok/s`);
    rows.push({ threads, ours, theirs });
  }
  const bytes = bytesPerToken(readGguf(file), (GEN + 1) / 2);
  return { file: path.basename(file), reps, bytes, rows };
}

// Issue 32's bars: decode and prefill at 1.2x llama.cpp, decode at 70% (1
// thread) / 80% (2 threads) of the roofline when the roofline part ran,
// peak RSS at most llama.cpp's.
export function largeTargets(r, bandwidth) {
  if (!r) return [];
  return r.rows.flatMap((row) => {
    const bw = bandwidth?.[row.threads];
    const out = [
      { what: `1.7B-shaped Q4_K_M native decode, ${row.threads} thread(s), vs llama.cpp -fa off`, bar: 1.2, got: row.ours.tg / row.theirs.tg },
      { what: `1.7B-shaped Q4_K_M native prefill, ${row.threads} thread(s), vs llama.cpp -fa off`, bar: 1.2, got: row.ours.pp / row.theirs.pp },
      { what: `1.7B-shaped Q4_K_M peak resident memory, ${row.threads} thread(s), smolinfer / llama.cpp`, bar: 1,
        got: row.ours.peakRss / row.theirs.peakRss, atMost: true },
    ];
    if (bw) {
      out.push({ what: `1.7B-shaped Q4_K_M native decode, ${row.threads} thread(s), share of the roofline`,
        bar: row.threads === 1 ? 0.7 : 0.8, got: (row.ours.tg * r.bytes.total) / (bw * 1e9), share: true });
    }
    return out;
  });
}

export function largeSection(r, bandwidth) {
  if (!r) return [];
  const f = (x) => (Number.isFinite(x) ? x.toFixed(1) : "—");
  const pct = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(0)}%` : "—");
  const mib = (b) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  const lines = [
    `## A 1.7B-shaped model`,
    "",
    `${r.file}: SmolLM2-1.7B's dimensions, random weights in Q4_K_M's types; ${(r.bytes.total / 1e9).toFixed(2)} GB read per decoded token.` +
      ` pp${PROMPT} and tg${GEN} from an empty cache, flash attention off on both, the median of ${r.reps} interleaved runs. Roofline share:` +
      ` decode tokens/s × bytes per token / the read bandwidth of the roofline part (when it ran). Peak RSS: VmHWM of each process.`,
    "",
    "| threads | test | smolinfer | llama.cpp | ratio | roofline share: smolinfer / llama.cpp | peak RSS: smolinfer / llama.cpp |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const row of r.rows) {
    const bw = bandwidth?.[row.threads];
    const share = (tg) => (bw ? (tg * r.bytes.total) / (bw * 1e9) : NaN);
    lines.push(`| ${row.threads} | pp${PROMPT} | ${f(row.ours.pp)} | ${f(row.theirs.pp)} | ${(row.ours.pp / row.theirs.pp).toFixed(2)}x | | |`);
    lines.push(`| ${row.threads} | tg${GEN} | ${f(row.ours.tg)} | ${f(row.theirs.tg)} | ${(row.ours.tg / row.theirs.tg).toFixed(2)}x` +
      ` | ${pct(share(row.ours.tg))} / ${pct(share(row.theirs.tg))} | ${mib(row.ours.peakRss)} / ${mib(row.theirs.peakRss)} |`);
  }
  lines.push("");
  return lines;
}
