// The depth part of `make bench` (issue 14): prefill and decode with 4,096
// tokens already in the context (llama-bench's -d), on the Q4_K_M model.
// smolinfer bench -d and llama-bench -d run the same file, token counts and
// threads; both fill the context untimed first, in 512-token micro-batches.
// Compared with flash attention off on both, and with each engine's default
// (llama.cpp -fa auto, on for the CPU; smolinfer -fa on, the same
// arithmetic), which the targets use: that is what a user of either gets.
import { llamaBench, smolinfer } from "./native.mjs";

const PROMPT = 128;
const GEN = 32;

/** { model, depth, rows: [{ threads, ours: {off, on}, theirs: {off, auto} }] } */
export function runDepth(config, log) {
  const model = config.models.find((m) => m.key === "Q4_K_M") ?? config.models[0];
  const depth = config.depth;
  const reps = config.quick ? 1 : 2;
  const rows = [];
  for (const threads of config.threads) {
    const counts = { prompt: PROMPT, gen: GEN, threads, reps, depth };
    const row = { threads, ours: {}, theirs: llamaBench(config.llamaBench, model.file, counts).fa };
    for (const fa of ["off", "on"]) row.ours[fa] = smolinfer(config.smolinfer, model.file, counts, fa);
    const f = (r) => `pp${PROMPT} ${r.pp.toFixed(1)} tg${GEN} ${r.tg.toFixed(1)}`;
    log(`[depth ${model.key} d=${depth} t=${threads}] smolinfer off: ${f(row.ours.off)}, on: ${f(row.ours.on)};` +
      ` llama.cpp off: ${f(row.theirs.off)}, auto: ${f(row.theirs.auto)}`);
    rows.push(row);
  }
  return { model: model.key, depth, reps, rows };
}

export function depthTargets(d) {
  if (!d) return [];
  return d.rows.flatMap((r) => ["pp", "tg"].map((test) => ({
    what: `${d.model} native ${test === "pp" ? "prefill" : "decode"} at depth ${d.depth}, ${r.threads} thread(s), defaults (smolinfer -fa on vs llama.cpp -fa auto)`,
    bar: 1.3,
    got: r.ours.on[test] / r.theirs.auto[test],
  })));
}

export function depthSection(d) {
  if (!d) return [];
  const f = (x) => x.toFixed(1);
  const x = (a, b) => `${(a / b).toFixed(2)}x`;
  const lines = [
    `## Long context: ${d.depth} tokens already in the context`,
    "",
    `${d.model}; \`smolinfer bench -d ${d.depth}\` and \`llama-bench -d ${d.depth}\`, pp${PROMPT} and tg${GEN} after an untimed fill, the median of ${d.reps} runs.`,
    "",
    "| threads | test | smolinfer -fa off | llama.cpp -fa off | ratio | smolinfer -fa on | llama.cpp -fa auto | ratio |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const r of d.rows) {
    for (const test of ["pp", "tg"]) {
      lines.push(`| ${r.threads} | ${test}${test === "pp" ? PROMPT : GEN} | ${f(r.ours.off[test])} | ${f(r.theirs.off[test])} | ${x(r.ours.off[test], r.theirs.off[test])}` +
        ` | ${f(r.ours.on[test])} | ${f(r.theirs.auto[test])} | ${x(r.ours.on[test], r.theirs.auto[test])} |`);
    }
  }
  lines.push("");
  return lines;
}
