// The memory roofline for decoding: a decoded token has to read every weight
// matrix once plus the K and V cache so far, so no engine can decode faster
// than (read bandwidth) / (bytes per token). Bandwidth from
// bench/bandwidth.cpp; bytes from the model file's header (bench/gguf.mjs).
import { spawnSync } from "node:child_process";

import { readGguf } from "./gguf.mjs";

/**
 * Bytes read per decoded token at an average of `positions` cached tokens:
 * every tensor once, except that an untied token embedding is only looked up
 * (one row; when the output matrix is the tied embedding, the whole matrix is
 * read once as the output), plus the f16 K and V cache of every layer for
 * the positions actually attended (neither engine's padding counted, which
 * makes the roofline higher, never lower).
 */
export function bytesPerToken(g, positions) {
  const arch = g.metadata["general.architecture"] ?? "llama";
  const m = (k) => g.metadata[`${arch}.${k}`];
  const layers = m("block_count");
  const heads = m("attention.head_count");
  const kvHeads = m("attention.head_count_kv") ?? heads;
  const embd = m("embedding_length");
  const headDim = m("attention.key_length") ?? embd / heads;
  if (![layers, heads, kvHeads, embd, headDim].every((x) => Number.isInteger(x) && x > 0)) {
    throw new Error(`the model's ${arch}.* dimensions are missing or not integers`);
  }
  const tokenEmbd = g.tensors.find((t) => t.name === "token_embd.weight");
  const tied = !g.tensors.some((t) => t.name === "output.weight");
  const unread = !tied && tokenEmbd ? tokenEmbd.bytes - tokenEmbd.bytes / tokenEmbd.dims[1] : 0;
  const weights = g.tensorBytes - unread;
  const kvPerPosition = layers * kvHeads * headDim * 2 /* K and V */ * 2 /* f16 */;
  return { weights, kvPerPosition, positions, total: weights + kvPerPosition * positions };
}

/** { bandwidth: {threads: GB/s}, bytes: {modelKey: {tensorBytes, native, browser}} } */
export function measureRoofline(config, log) {
  const reps = config.quick ? 3 : 7;
  const r = spawnSync(config.bandwidth, ["--mb", "1024", "--threads", config.threads.join(","), "--reps", String(reps)], {
    encoding: "utf8",
  });
  if (r.error || r.status !== 0) throw new Error(`${config.bandwidth} failed: ${r.error?.message ?? r.stderr.trim()}`);
  const j = JSON.parse(r.stdout);
  const bandwidth = Object.fromEntries(j.results.map((x) => [x.threads, x.best_gbps]));
  log(`[roofline] read bandwidth (best of ${reps} over 1 GiB): ${j.results.map((x) => `${x.threads}T ${x.best_gbps.toFixed(1)} GB/s`).join(", ")}`);
  const bytes = {};
  for (const m of config.models) {
    const g = readGguf(m.file);
    // Natively (llama-bench's tg) decoding starts from an empty cache: token i
    // attends i + 1 positions. In the browser it follows the prompt.
    bytes[m.key] = {
      tensorBytes: g.tensorBytes,
      native: bytesPerToken(g, (config.gen + 1) / 2),
      browser: bytesPerToken(g, config.prompt + (config.gen + 1) / 2),
    };
  }
  return { bandwidth, reps, bytes };
}

/** Decode tokens/s a model cannot exceed at `threads` threads ("native" or "browser" cache positions). */
export function rooflineTps(roof, model, threads, where) {
  const bw = roof?.bandwidth?.[threads];
  const b = roof?.bytes?.[model]?.[where];
  return bw && b ? (bw * 1e9) / b.total : NaN;
}
