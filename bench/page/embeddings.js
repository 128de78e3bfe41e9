// In-page drivers for the browser half of the embeddings benchmark
// (bench/embeddings_browser.mjs calls them through page.evaluate). Each
// loads one encoder into one engine with a given number of threads, embeds
// an untimed warm-up text, then embeds each list of texts `reps` times,
// timing only the embedding call (the engine's worker round trip included:
// that is what a page waits for). Returns the times, each engine's token
// count and the first text's vector, for bench/embeddings_browser.mjs to
// compare across engines.

const now = () => performance.now();
// bench/embeddings_browser.mjs polls window.benchPhaseNow to fail a stalled case in minutes.
const phase = (name, detail = "") => (window.benchPhaseNow = { name, detail });

function checkVectors(data, count, where) {
  if (!Array.isArray(data) || data.length !== count) throw new Error(`${where}: ${data?.length} vectors for ${count} texts`);
  const dims = new Set(data.map((d) => d.embedding?.length));
  if (dims.size !== 1) throw new Error(`${where}: vectors of different lengths (${[...dims].join(", ")})`);
  return [...dims][0];
}

/**
 * Both engines through the same loop: `embed(texts)` resolves to an
 * OpenAI-shaped response ({ data: [{ embedding }], usage: { prompt_tokens } }).
 */
async function measure(embed, { warmup, lists, reps }) {
  phase("warmup");
  await embed([warmup]);
  const results = [];
  let firstVector = null;
  let dimension = 0;
  for (const texts of lists) {
    const runs = [];
    let tokens = NaN;
    for (let i = 0; i < reps; i++) {
      phase("run", `${texts.length} texts, ${i + 1} of ${reps}`);
      const t0 = now();
      const r = await embed(texts);
      runs.push((now() - t0) / 1000);
      const where = `${texts.length} texts, run ${i + 1}`;
      const d = checkVectors(r.data, texts.length, where);
      if (dimension && d !== dimension) throw new Error(`${where}: vectors of ${d} values, earlier ${dimension}`);
      dimension = d;
      tokens = r.usage?.prompt_tokens;
      firstVector ??= Array.from(r.data[0].embedding);
    }
    results.push({ count: texts.length, seconds: runs, tokens });
  }
  return { results, dimension, firstVector };
}

/** smolinfer's public module: engine.embeddings.create with every text in one call. */
export async function smolinferEmbed({ modelUrl, threads, warmup, lists, reps }) {
  phase("load", modelUrl);
  const { createEngine } = await import("/smolinfer.js");
  const engine = await createEngine({ threads });
  try {
    const info = await engine.load(modelUrl);
    const out = await measure((texts) => engine.embeddings.create({ input: texts }), { warmup, lists, reps });
    const s = engine.stats();
    return { ...out, engine: "smolinfer", build: engine.build, threads: s.threads, embeddingSize: info.embeddingSize, flashAttention: info.flashAttention };
  } finally {
    engine.terminate();
  }
}

/**
 * @wllama/wllama: createEmbedding, which since 3.x is llama-server's
 * /v1/embeddings in wasm and takes a list (one task per text, spread over
 * its parallel slots) as smolinfer does. Pooling and normalisation are its
 * defaults: the file's pooling type, L2.
 */
export async function wllamaEmbed({ modelUrl, threads, warmup, lists, reps }) {
  phase("load", modelUrl);
  const { Wllama, LoggerWithoutDebug } = await import("/wllama/index.js");
  const quiet = { ...LoggerWithoutDebug, log: () => {}, warn: () => {} };
  const w = new Wllama({ default: "/wllama/wasm/wllama.wasm" }, { logger: quiet, suppressNativeLog: true });
  try {
    const response = await fetch(modelUrl);
    if (!response.ok) throw new Error(`${modelUrl}: HTTP ${response.status}`);
    const blob = await response.blob();
    try {
      await w.loadModel([blob], {
        n_threads: threads,
        n_gpu_layers: 0, // CPU (wasm SIMD) only, no WebGPU
        embeddings: true,
        // An encoder sees a whole text in one physical batch: room for the
        // longest text (about 500 tokens), as llama-embedding gives it.
        n_ctx: 2048,
        n_batch: 2048,
        n_ubatch: 2048,
      });
    } catch (e) {
      return { loadError: String(e?.message ?? e) };
    }
    const out = await measure((texts) => w.createEmbedding({ input: texts }), { warmup, lists, reps });
    return { ...out, engine: "wllama", build: w.isMultithread() ? "mt" : "st", threads: w.getNumThreads() };
  } finally {
    await w.exit().catch(() => {});
  }
}
