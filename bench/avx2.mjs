// The AVX2 part of `make bench` (issue 32): what an AVX2-only host gets,
// measured on any x86 host. smolinfer with SMOLINFER_ISA=avx2 (its AVX2
// kernels, whatever the CPU has) against llama-bench built for AVX2 only
// (LLAMA_CPU=avx2 bench/build-llama-tool: AVX2, FMA, F16C, no AVX-512),
// both with flash attention off, on the 135M files and, when the large
// part's 1.7B-shaped file is there, on it. Interleaved: each repetition
// runs smolinfer then llama.cpp, so that both see the same machine; the
// median of the repetitions' medians. Targets: decode >= 1.3x, prefill >= 1.2x.
import { llamaBench, smolinfer } from "./native.mjs";
import { median } from "./stats.mjs";

export const AVX2_TARGETS = { tg: 1.3, pp: 1.2 };

/** results.avx2 = { llamaCommit, rows: [{ model, threads, ours: {pp, tg}, theirs: {pp, tg} }] }. */
export function runAvx2(config, results, log) {
  const models = config.models.filter((m) => m.key === "Q4_1" || m.key === "Q4_K_M");  // the 135M files
  if (config.largeModel) models.push({ key: "1.7B-shape", file: config.largeModel, large: true });
  const out = { llamaCommit: "", rows: [] };
  const rounds = Math.max(1, config.quick ? 1 : 3);
  for (const m of models) {
    // The 1.7B shape's runs are long: fewer tokens, as the large part does.
    const counts = m.large ? { prompt: 64, gen: 32, reps: 1 } : { prompt: config.prompt, gen: config.gen, reps: 1 };
    for (const threads of config.threads) {
      const where = `avx2 ${m.key} t=${threads}`;
      const ours = { pp: [], tg: [] };
      const theirs = { pp: [], tg: [] };
      try {
        for (let r = 0; r < rounds; r++) {
          const a = smolinfer(config.smolinfer, m.file, { ...counts, threads, isa: "avx2" }, "off");
          const b = llamaBench(config.llamaBenchAvx2, m.file, { ...counts, threads }, ["off"]);
          out.llamaCommit = b.commit;
          ours.pp.push(a.pp); ours.tg.push(a.tg);
          theirs.pp.push(b.fa.off.pp); theirs.tg.push(b.fa.off.tg);
        }
        const row = { model: m.key, threads, prompt: counts.prompt, gen: counts.gen,
          ours: { pp: median(ours.pp), tg: median(ours.tg) }, theirs: { pp: median(theirs.pp), tg: median(theirs.tg) } };
        out.rows.push(row);
        log(`[${where}] smolinfer (avx2) pp${counts.prompt} ${row.ours.pp.toFixed(1)} tg${counts.gen} ${row.ours.tg.toFixed(1)} tok/s; ` +
            `llama.cpp (AVX2 build) pp ${row.theirs.pp.toFixed(1)} tg ${row.theirs.tg.toFixed(1)}; ` +
            `ratio pp ${(row.ours.pp / row.theirs.pp).toFixed(2)}x tg ${(row.ours.tg / row.theirs.tg).toFixed(2)}x`);
      } catch (e) {
        results.errors.push(`${where}: ${e.message}`);
        log(`[${where}] ERROR ${e.message}`);
      }
    }
  }
  results.avx2 = out;
}

export function avx2Targets(avx2) {
  if (!avx2) return [];
  return avx2.rows.flatMap((r) => [
    { what: `AVX2 path ${r.model} decode, ${r.threads} thread(s), vs llama.cpp's AVX2 build -fa off`, bar: AVX2_TARGETS.tg, got: r.ours.tg / r.theirs.tg },
    { what: `AVX2 path ${r.model} prefill, ${r.threads} thread(s), vs llama.cpp's AVX2 build -fa off`, bar: AVX2_TARGETS.pp, got: r.ours.pp / r.theirs.pp },
  ]);
}

/** The report's section: one row per (model, threads). */
export function avx2Section(avx2) {
  if (!avx2) return [];
  const lines = ["## AVX2 path (SMOLINFER_ISA=avx2 against llama.cpp built for AVX2 only)", "",
    `llama.cpp ${avx2.llamaCommit.slice(0, 7)} built with -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON, no AVX-512; ` +
    `flash attention off in both; tokens per second, medians of interleaved repetitions. Targets: decode >= ${AVX2_TARGETS.tg}x, prefill >= ${AVX2_TARGETS.pp}x.`, "",
    "| model | threads | smolinfer pp / tg | llama.cpp pp / tg | prefill ratio | decode ratio |", "|---|---|---|---|---|---|"];
  for (const r of avx2.rows) {
    const pp = r.ours.pp / r.theirs.pp, tg = r.ours.tg / r.theirs.tg;
    lines.push(`| ${r.model} | ${r.threads} | ${r.ours.pp.toFixed(1)} / ${r.ours.tg.toFixed(1)} | ${r.theirs.pp.toFixed(1)} / ${r.theirs.tg.toFixed(1)} | ` +
      `${pp.toFixed(2)}x | ${tg.toFixed(2)}x |`);
  }
  lines.push("");
  return lines;
}
