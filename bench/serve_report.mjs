// The serving benchmark's part of bench/RESULTS.md: its targets (issue 13:
// smolinfer ≥ llama-server at every level; smolinfer at 8 streams ≥ 3× its
// single stream) and its table.
import path from "node:path";

import { OURS, THEIRS } from "./serve_engines.mjs";

const fmt = (x) => (Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x.toFixed(1)) : "—");
const ms = (x) => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : "—");
const ratio = (a, b) => (Number.isFinite(a / b) && b > 0 ? `${(a / b).toFixed(2)}x` : "—");
const level = (result, engine, c) => result?.engines[engine]?.levels.find((l) => l.concurrency === c);

/** [{ what, bar, got }] in the shape report.mjs lists targets. */
export function serveTargets(result) {
  if (!result) return [];
  const key = result.model.key;
  const out = result.settings.levels.map((c) => ({
    what: `${key} serving, ${c} concurrent stream(s), aggregate tokens/s vs llama-server`,
    bar: 1,
    got: level(result, OURS, c)?.tps / level(result, THEIRS, c)?.tps,
  }));
  out.push({
    what: `${key} serving: smolinfer at 8 streams vs its single stream`,
    bar: 3,
    got: level(result, OURS, 8)?.tps / level(result, OURS, 1)?.tps,
  });
  return out;
}

/** The markdown lines of the section. */
export function serveSection(result) {
  const lines = [];
  const L = (s = "") => lines.push(s);
  const s = result.settings;
  L(`## Serving: \`smolinfer serve\` vs llama.cpp's \`llama-server\``);
  L();
  if (result.skipped) {
    L(`**${result.skipped}.**`);
    L();
  }
  L(`${path.basename(result.model.file)}, ${s.threads} thread(s), --parallel ${s.parallel} on both, ${s.ctx} tokens of context per` +
    ` sequence (llama-server: -c ${s.ctx * s.parallel}, which its slots share), llama-server with -fa off and its default continuous` +
    ` batching. At each level, C streaming chat completions sent at once (no two requests of the run with the same user message), greedy, max_tokens` +
    ` ${s.maxTokens}${result.extras.ignoreEos ? ", end of generation ignored (ignore_eos)" : " (smolinfer serve does not take ignore_eos: both stop at end of generation)"};` +
    ` ${s.rounds} round(s) per level, the servers taking turns round by round, after one unmeasured round at the highest level; levels` +
    ` above --parallel queue. Tokens/s: all tokens the round's requests` +
    ` generated (${result.extras.includeUsage ? "usage.completion_tokens" : "counted as text chunks: smolinfer serve does not take stream_options"}) / the round's wall time from the first request sent to the last stream closed, prompt` +
    ` evaluation and queueing included; the median round. First token: from sending a request to its first text, over every request` +
    ` of every round. Per stream: a stream's own decode rate after its first token, the median.`);
  L();
  const engines = [OURS, THEIRS];
  L(`| streams | smolinfer tok/s | llama-server tok/s | ratio | first token median / p90: smolinfer | llama-server |` +
    ` per stream tok/s: smolinfer / llama-server | tokens per request: smolinfer / llama-server |`);
  L(`|---|---|---|---|---|---|---|---|`);
  for (const c of s.levels) {
    const [o, t] = engines.map((e) => level(result, e, c));
    const failed = (l) => (l?.errors.length ? ` (${l.errors.length} failed!)` : "");
    L(`| ${c} | ${fmt(o?.tps)}${failed(o)} | ${fmt(t?.tps)}${failed(t)} | ${ratio(o?.tps, t?.tps)}` +
      ` | ${ms(o?.ttftMedianMs)} / ${ms(o?.ttftP90Ms)} | ${ms(t?.ttftMedianMs)} / ${ms(t?.ttftP90Ms)}` +
      ` | ${fmt(o?.streamTps)} / ${fmt(t?.streamTps)} | ${o?.tokensPerRequest ?? "—"} / ${t?.tokensPerRequest ?? "—"} |`);
  }
  L();
  const scaling = engines.map((e) => `${e === OURS ? "smolinfer" : "llama-server"} ${ratio(level(result, e, 8)?.tps, level(result, e, 1)?.tps)}`);
  L(`Aggregate tokens/s at 8 streams / at 1 stream: ${scaling.join(", ")}.`);
  L();
  for (const e of engines) if (result.engines[e]) L(`- ${e === OURS ? "smolinfer" : "llama-server"}: \`${result.engines[e].command}\``);
  L();
  return lines;
}
