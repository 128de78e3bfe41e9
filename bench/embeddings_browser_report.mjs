// The report of the browser half of the embeddings benchmark
// (embeddings_browser.mjs measures): its section of bench/RESULTS.md and
// its targets (issue 29: at least 2x wllama, at 1 and 2 threads). Apart
// from the runner so that the report needs no browser packages.

const title = { chromium: "Chromium", firefox: "Firefox" };

export function embeddingsBrowserTargets(e) {
  if (!e) return [];
  return e.rows.map((r) => ({
    what: `${r.model} embeddings, ${r.count} text(s), ${r.threads} thread(s), ${title[r.browser]} (smolinfer vs wllama)`,
    bar: 2,
    // A row whose engines disagree measures nothing comparable.
    got: r.trusted ? r.ours / r.theirs : NaN,
  }));
}

export function embeddingsBrowserSection(e) {
  if (!e) return [];
  const versions = Object.entries(e.browsers).map(([b, v]) => `${title[b]} ${v || "?"}`).join(", ");
  const lines = [
    "## Embeddings in the browser",
    "",
    `Texts per second in ${versions} (headless): smolinfer's \`engine.embeddings.create({ input: texts })\` and wllama ${e.wllama}'s` +
      " `createEmbedding({ input: texts })` (loaded with `embeddings: true`, pooling from the file, a 2048-token physical batch)," +
      " each with its flash-attention default, on the native half's files and texts; the embedding call's time alone (after loading and" +
      ` an untimed warm-up embedding), median of ${e.reps} run(s). smolinfer at 1 thread runs its single-threaded build.`,
    "",
    "| browser | model | texts | tokens | threads | smolinfer | wllama | ratio |",
    "|---|---|---|---|---|---|---|---|",
  ];
  const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : "—");
  for (const r of e.rows) {
    const theirs = r.wllamaError ? r.wllamaError.replace(/\|/g, "\\|") : f(r.theirs);
    const ratio = Number.isFinite(r.ours / r.theirs) ? `${(r.ours / r.theirs).toFixed(2)}x${r.trusted ? "" : " (not trusted)"}` : "—";
    lines.push(`| ${title[r.browser]} | ${r.model} | ${r.count} | ${r.tokens ?? "—"} | ${r.threads} | ${f(r.ours)} | ${theirs} | ${ratio} |`);
  }
  lines.push("");
  const agree = e.agreement.filter((x) => Number.isFinite(x.cosine));
  if (agree.length) {
    lines.push(`The first text's vectors, smolinfer against wllama (cosine, both normalised; at least ${e.minCosine} wanted): ` +
      agree.map((x) => `${title[x.browser]} ${x.model} t=${x.threads} ${x.cosine.toFixed(6)}`).join("; ") + ".");
    lines.push("");
  }
  return lines;
}
