// The embeddings part of `make bench` (issue 29): texts embedded per second
// by `smolinfer embed` and llama.cpp's `llama-embedding`, natively, on the
// same files, texts and threads. The files are random-weight encoders in
// real dimensions (tests/make_random_model --list-embedding-bench; bench/run
// writes them once): bge-small's (F16, 384 wide), nomic-embed's (F16, 768,
// gated), EmbeddingGemma's (Q8_0, 768, sliding window, dense projections).
//
// Each engine times itself, from after loading (and llama.cpp's warm-up)
// to the last vector: tokenizing included. smolinfer prints its time on
// stderr; for llama-embedding it is the time between its system_info line
// (printed after the warm-up, before tokenizing) and its perf summary (after
// the vectors are printed), from its log's timestamps. Both with their
// defaults otherwise: flash attention on (llama.cpp's auto); llama.cpp packs
// the texts into batches of up to 2048 tokens (attention across the whole
// batch, masked per text), smolinfer embeds one text at a time.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { median } from "./stats.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const textFile = path.join(here, "..", "tests", "golden", "perplexity.txt");

export const EMBEDDING_COUNTS = [1, 8, 32];

/**
 * `count` texts cut from tests/golden/perplexity.txt, 48-367 words each
 * (about 64-500 tokens: under bert's 512 positions), each from another place.
 */
export function embeddingTexts(count) {
  const words = fs.readFileSync(textFile, "utf8").split(/\s+/).filter(Boolean);
  const texts = [];
  for (let i = 0; i < count; i++) {
    const n = 48 + ((i * 131 + 150) % 320);
    const start = (i * 997) % (words.length - n);
    texts.push(words.slice(start, start + n).join(" "));
  }
  return texts;
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 256 << 20 });
  if (r.error) throw new Error(`${path.basename(cmd)}: ${r.error.message}`);
  if (r.status !== 0) {
    const why = (r.stderr || "").trim().split("\n").slice(-3).join(" | ");
    throw new Error(`${path.basename(cmd)} ${args.join(" ")} failed (exit ${r.status ?? r.signal}): ${why}`);
  }
  return r;
}

/** smolinfer embed: { seconds, tokens } from its stderr timing line. */
export function smolinferEmbed(cli, model, jsonl, threads, count) {
  const r = run(cli, ["embed", "-m", model, "--jsonl", jsonl, "-t", String(threads)]);
  const m = /embed: (\d+) texts?, (\d+) tokens in ([0-9.]+) s \(.*, (\d+) threads\)/.exec(r.stderr);
  if (!m) throw new Error(`smolinfer embed printed no timing line: ${r.stderr.trim().split("\n").at(-1)}`);
  if (Number(m[1]) !== count) throw new Error(`smolinfer embed embedded ${m[1]} texts, not ${count}`);
  if (Number(m[4]) !== threads) throw new Error(`smolinfer embed ran ${m[4]} threads, not ${threads}`);
  const vectors = r.stdout.trim().split("\n").length;
  if (vectors !== count) throw new Error(`smolinfer embed printed ${vectors} vectors, not ${count}`);
  return { seconds: Number(m[3]), tokens: Number(m[2]) };
}

// llama.cpp's log timestamps: minutes.seconds.milliseconds.microseconds.
function stamp(line) {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+) /.exec(line);
  return m ? Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) / 1e3 + Number(m[4]) / 1e6 : NaN;
}

/** llama-embedding: { seconds, tokens } from its log (see the top). */
export function llamaEmbed(bin, model, textsFile, threads, count) {
  const r = run(bin, ["-m", model, "-f", textsFile, "-t", String(threads), "--verbosity", "4"]);
  const lines = r.stderr.split("\n");
  const start = lines.find((l) => l.includes("system_info:"));
  const end = lines.find((l) => l.includes("llama_perf_context_print:") && l.includes("total time"));
  if (!start || !end) throw new Error("llama-embedding's log has no system_info or perf summary line");
  if (!new RegExp(`n_threads = ${threads} `).test(start)) throw new Error(`llama-embedding did not run ${threads} threads: ${start}`);
  const seconds = stamp(end) - stamp(start);
  if (!(seconds > 0)) throw new Error(`llama-embedding's log timestamps are unreadable: ${start.slice(0, 30)} / ${end.slice(0, 30)}`);
  const tokens = lines.filter((l) => l.includes("batch_decode: n_tokens")).reduce((s, l) => s + Number(/n_tokens = (\d+)/.exec(l)[1]), 0);
  const seqs = lines.filter((l) => l.includes("batch_decode: n_tokens")).reduce((s, l) => s + Number(/n_seq = (\d+)/.exec(l)[1]), 0);
  if (seqs !== count) throw new Error(`llama-embedding embedded ${seqs} texts, not ${count}`);
  return { seconds, tokens };
}

/** { reps, rows: [{ model, count, threads, tokens, ours, theirs }] }: texts per second, medians. */
export function runEmbeddings(config, log) {
  const models = config.embeddingModels;
  if (!models.length) throw new Error("no embedding models (BENCH_EMBEDDING_MODELS; bench/run writes them)");
  if (!config.llamaEmbedding) throw new Error("LLAMA_EMBEDDING is not set (bench/run builds it)");
  const reps = config.quick ? 1 : 3;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "smolinfer-embed-bench-"));
  const rows = [];
  try {
    for (const count of EMBEDDING_COUNTS) {
      const texts = embeddingTexts(count);
      const jsonl = path.join(dir, `texts-${count}.jsonl`);
      const plain = path.join(dir, `texts-${count}.txt`);
      fs.writeFileSync(jsonl, texts.map((t) => JSON.stringify(t)).join("\n") + "\n");
      fs.writeFileSync(plain, texts.join("\n"));
      for (const m of models) {
        for (const threads of config.threads) {
          const ours = [], theirs = [];
          let tokens = 0, theirTokens = 0;
          for (let i = 0; i < reps; i++) {  // interleaved
            const a = smolinferEmbed(config.smolinfer, m.file, jsonl, threads, count);
            const b = llamaEmbed(config.llamaEmbedding, m.file, plain, threads, count);
            ours.push(count / a.seconds);
            theirs.push(count / b.seconds);
            tokens = a.tokens;
            theirTokens = b.tokens;
          }
          if (tokens !== theirTokens) throw new Error(`${m.key}, ${count} texts: smolinfer counted ${tokens} tokens, llama.cpp ${theirTokens}`);
          const row = { model: m.key, count, threads, tokens, ours: median(ours), theirs: median(theirs), oursRuns: ours, theirsRuns: theirs };
          log(`[embeddings ${m.key} ${count} texts t=${threads}] ${tokens} tokens; smolinfer ${row.ours.toFixed(2)} texts/s, ` +
            `llama.cpp ${row.theirs.toFixed(2)} texts/s (${(row.ours / row.theirs).toFixed(2)}x)`);
          rows.push(row);
        }
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return { reps, rows };
}

export function embeddingsTargets(e) {
  if (!e) return [];
  return e.rows.map((r) => ({
    what: `${r.model} embeddings, ${r.count} text(s), ${r.threads} thread(s), native (smolinfer vs llama-embedding)`,
    bar: 1.5,
    got: r.ours / r.theirs,
  }));
}

export function embeddingsSection(e) {
  if (!e) return [];
  const lines = [
    "## Embeddings",
    "",
    "Texts per second, `smolinfer embed --jsonl` and `llama-embedding -f` on the same random-weight files in real dimensions" +
      ` and the same texts (about 64-500 tokens each), each engine's own timing from after loading to the last vector, median of ${e.reps} interleaved runs.`,
    "",
    "| model | texts | tokens | threads | smolinfer | llama.cpp | ratio |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const r of e.rows) {
    lines.push(`| ${r.model} | ${r.count} | ${r.tokens} | ${r.threads} | ${r.ours.toFixed(2)} | ${r.theirs.toFixed(2)} | ${(r.ours / r.theirs).toFixed(2)}x |`);
  }
  lines.push("");
  return lines;
}
