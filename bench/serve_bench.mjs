// The serving part of `make bench` (issue 13): `smolinfer serve` next to
// llama.cpp's llama-server, same model, threads, slots (--parallel) and
// context per sequence. At each concurrency level C (1, 4, 8, 16) it sends
// C streaming chat completions at once (greedy, max_tokens fixed), several
// rounds (the two servers taking turns), and measures the aggregate
// tokens/s and the time to first token. Levels above --parallel queue on
// both servers.
//
// Until smolinfer has `serve`, only llama-server runs and the report says so.
//
// Run by bench/bench.mjs (BENCH_PARTS=serve), or alone:
//   LLAMA_SERVER=build/llama.cpp/build/bin/llama-server BENCH_SERVE_MODEL=model.gguf node bench/serve_bench.mjs
// Environment:
//   SMOLINFER_BIN          build/native/smolinfer
//   LLAMA_SERVER           llama.cpp's llama-server (bench/build-llama-server builds it)
//   BENCH_SERVE_MODEL      the model (alone; bench.mjs uses the first of BENCH_MODELS)
//   BENCH_SERVE_THREADS    threads of each server (default 2)
//   BENCH_SERVE_PARALLEL   slots, --parallel (default 8)
//   BENCH_SERVE_CTX        context per sequence (default 512)
//   BENCH_SERVE_LEVELS     concurrency levels (default 1,4,8,16)
//   BENCH_SERVE_ROUNDS     rounds per level (default 3; BENCH_QUICK=1: 1)
//   BENCH_SERVE_GEN        max_tokens per request (default 64)
//   BENCH_SERVE_SELFTEST=1 run llama-server in smolinfer's place too (tests the benchmark itself)
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { OURS, THEIRS, engineCommands, hasServe, startServer } from "./serve_engines.mjs";
import { envInt } from "./env_int.mjs";
import { runRound, streamChat, summariseLevel } from "./serve_load.mjs";
import { userMessage } from "./serve_prompts.mjs";
import { serveSection } from "./serve_report.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");

/** The serving benchmark's settings from the environment (throws on a bad value). */
export function serveConfig(env, quick) {
  const count = (name, fallback) => envInt(env, name, fallback);
  const levels = (env.BENCH_SERVE_LEVELS || "1,4,8,16").split(",").map((x) => Number(x.trim()));
  if (levels.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`BENCH_SERVE_LEVELS must be positive integers`);
  return {
    smolinfer: env.SMOLINFER_BIN ?? path.join(repo, "build", "native", "smolinfer"),
    llamaServer: env.LLAMA_SERVER ?? "",
    threads: count("BENCH_SERVE_THREADS", 2),
    parallel: count("BENCH_SERVE_PARALLEL", 8),
    ctx: count("BENCH_SERVE_CTX", 512),
    levels,
    rounds: count("BENCH_SERVE_ROUNDS", quick ? 1 : 3),
    maxTokens: count("BENCH_SERVE_GEN", 64),
    selftest: env.BENCH_SERVE_SELFTEST === "1",
  };
}

// `extras` are the optional fields every server in the run takes:
// ignore_eos (llama-server's extension) and stream_options.include_usage
// (OpenAI's; without it tokens are counted as text chunks).
const requestBody = (modelId, maxTokens, extras) => (n) => ({
  model: modelId,
  messages: [{ role: "user", content: userMessage(n) }],
  max_tokens: maxTokens,
  temperature: 0,
  ...(extras.includeUsage ? { stream_options: { include_usage: true } } : {}),
  ...(extras.ignoreEos ? { ignore_eos: true } : {}),
});

/** The id the server lists first under GET /v1/models: the name requests give as `model`. */
async function servedModel(url) {
  const r = await fetch(`${url}/v1/models`);
  if (!r.ok) throw new Error(`GET /v1/models: HTTP ${r.status}`);
  const id = (await r.json()).data?.[0]?.id;
  if (typeof id !== "string") throw new Error("GET /v1/models lists no model");
  return id;
}

/**
 * The optional fields a server takes, found by asking with all of them and
 * dropping one at a time while it answers 4xx (a strict server rejects
 * fields it does not know).
 */
async function acceptedExtras(url, modelId) {
  const tries = [{ ignoreEos: true, includeUsage: true }, { ignoreEos: false, includeUsage: true }, { ignoreEos: false, includeUsage: false }];
  for (const extras of tries) {
    try {
      await streamChat(url, requestBody(modelId, 2, extras)(0));
      return extras;
    } catch (e) {
      if (!/^HTTP 4\d\d/.test(e.message) || extras === tries.at(-1)) throw e;
    }
  }
}

/**
 * Runs the benchmark; resolves to { settings, model, skipped, extras,
 * llamaCommit, engines: { name: { command, levels: [summariseLevel results] } },
 * errors }. `model` is { key, file }.
 *
 * Both servers run at once (an idle one waits on a condition variable,
 * using no CPU) and take turns round by round, so that other load on the
 * machine and the client's own warm-up fall on both alike.
 */
export async function runServe(sc, model, log) {
  const out = { settings: sc, model, skipped: "", extras: { ignoreEos: true, includeUsage: true }, engines: {}, errors: [], llamaCommit: "" };
  if (!sc.llamaServer) throw new Error("LLAMA_SERVER is not set (bench/run builds it with bench/build-llama-server)");
  // "version: 0.4.0-dev (build 1, commit 80fb11a)" (older releases: "version: N (80fb11a)")
  const version = spawnSync(sc.llamaServer, ["--version"], { encoding: "utf8" });
  const m = `${version.stdout}${version.stderr}`.match(/version: [^\n]*?(?:commit |\()([0-9a-f]{7,})\b/);
  out.llamaCommit = m?.[1] ?? "";
  const commands = engineCommands({ ...sc, model: model.file });
  if (sc.selftest) {
    commands[OURS] = commands[THEIRS];
    out.skipped = `BENCH_SERVE_SELFTEST=1: llama-server ran in smolinfer's place (a test of the benchmark, not of smolinfer)`;
  } else if (!hasServe(sc.smolinfer)) {
    delete commands[OURS];
    out.skipped = `${sc.smolinfer} has no \`serve\` command yet: llama-server ran alone`;
    log(`[serve] ${out.skipped}`);
  }

  const servers = {};
  try {
    for (const name of [OURS, THEIRS].filter((n) => commands[n])) {
      try {
        const server = await startServer(commands[name], { log: (s) => log(`[serve ${name}] ${s}`) });
        servers[name] = { ...server, modelId: await servedModel(server.url).catch(async (e) => {
          await server.stop();
          throw e;
        }) };
      } catch (e) {
        out.errors.push(`serve ${name}: ${e.message}`);
        log(`[serve ${name}] ERROR ${e.message}`);
      }
    }
    // ignore_eos only if smolinfer takes it, so that both stop at the same tokens.
    if (servers[OURS]) out.extras = await acceptedExtras(servers[OURS].url, servers[OURS].modelId);
    const running = Object.keys(servers);
    const body = (name) => requestBody(servers[name].modelId, sc.maxTokens, out.extras);
    // Request numbers run on through the run, the same on every server: no
    // request repeats an earlier one's message (whose cached prompt a server could reuse).
    let next = 1; // 0 was the probe
    const top = Math.max(...sc.levels);
    for (const name of running) await runRound(servers[name].url, body(name), top, next); // warm-up, not measured
    next += top;
    for (const name of running) out.engines[name] = { command: [commands[name][0], ...commands[name][1]].join(" "), levels: [] };
    for (const c of sc.levels) {
      const rounds = Object.fromEntries(running.map((n) => [n, []]));
      for (let r = 0; r < sc.rounds; r++, next += c) {
        for (const name of running) rounds[name].push(await runRound(servers[name].url, body(name), c, next));
      }
      for (const name of running) {
        const l = summariseLevel(c, rounds[name]);
        out.engines[name].levels.push(l);
        log(`[serve ${name}] ${c} stream(s): ${l.tps.toFixed(1)} tok/s, first token ${l.ttftMedianMs.toFixed(0)} ms median` +
          ` / ${l.ttftP90Ms.toFixed(0)} ms p90, ${l.streamTps.toFixed(1)} tok/s per stream, ${l.tokensPerRequest} tokens per request` +
          `${l.errors.length ? `, ${l.errors.length} failed: ${l.errors[0]}` : ""}`);
        for (const e of l.errors) out.errors.push(`serve ${name} at ${c} streams: ${e}`);
      }
    }
  } catch (e) {
    out.errors.push(`serve: ${e.message}`);
    log(`[serve] ERROR ${e.message}`);
  } finally {
    for (const server of Object.values(servers)) await server.stop();
  }
  return out;
}

// Alone: `node bench/serve_bench.mjs` prints the section bench/RESULTS.md would get.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const env = process.env;
  const sc = serveConfig(env, env.BENCH_QUICK === "1");
  const file = env.BENCH_SERVE_MODEL;
  if (!file) throw new Error("set BENCH_SERVE_MODEL=/path/to/model.gguf");
  const result = await runServe(sc, { key: path.basename(file), file }, (...a) => console.error(...a));
  console.log(serveSection(result).join("\n"));
  if (result.errors.length) {
    console.error(`serve: ${result.errors.length} problem(s):\n  ${result.errors.join("\n  ")}`);
    process.exit(1);
  }
}
