// The soak run of `smolinfer serve` (issue 13; `make soak`, not part of
// `make test` or `make bench`). For SOAK_SECONDS, SOAK_CLIENTS client loops
// send a random mix (seeded: SOAK_SEED replays a run's choices) of chat and
// completion requests, streamed or not, JSON-schema output, stop strings
// with log-probabilities, streams the client hangs up on after a few chunks,
// non-streaming requests it gives up on, and bad bodies (malformed JSON,
// unknown fields, wrong types, negative max_tokens, a body over --max-body,
// a prompt longer than the context, unknown paths and methods).
//
// It fails when a valid request that the client did not abort gets
// anything but a well-formed 200 (a 503 counts apart, and only with code
// queue_full while the queue is near full), when a bad body gets another
// status or no OpenAI error body, when /health stops answering, when the
// server exits before the end or not with 0 on SIGTERM, when sequences or
// queued requests remain once the clients stop (/metrics), or when the
// server's resident memory grows after the warm-up by more than
// SOAK_RSS_LIMIT_MIB. At the end it also sends SIGTERM while --parallel
// streams run, each of which must still end with finish_reason "stop" and
// data: [DONE] (README), and warns when a non-streaming request whose client
// hung up keeps generating (README promises the freeing for streams only).
//
// Memory: VmRSS is sampled every SOAK_RSS_INTERVAL seconds. The KV caches
// (parallel × context cells) are allocated up front but their pages are
// touched only when used, so the warm-up first sends, alone, one prompt per
// sequence that fills its context nearly to the end (each with different
// first words: no prefix reuse), then one request of each kind (the first
// JSON-schema request allocates ~6 MiB once); then the clients run for
// SOAK_SECONDS, the first 20% of which are warm-up too (HTTP threads,
// allocator heaps).
// Growth is the largest RSS of the last quarter of the samples after the
// warm-up minus the largest of their first quarter (a least-squares slope
// is reported too). The 32 MiB default limit: after the warm-up RSS should
// move only with the allocator's free lists (glibc keeps a heap per thread
// that allocated, up to 8 per core, and the server has --parallel +
// --queue + 4 HTTP threads), a few MiB; a leak of 32 KiB per request over
// the ~1000 requests of a 10-minute run on 2 busy cores crosses it, and a
// leak of a request's KV cells or a whole sequence cache (~MiB) at once.
//
//   node bench/serve_soak.mjs            (make soak)
// Environment:
//   SOAK_SECONDS        length of the run (default 600)
//   SOAK_CLIENTS        concurrent client loops (default 8)
//   SOAK_SEED           seed of the clients' choices (default: random, printed)
//   SMOLINFER_BIN       build/native/smolinfer
//   SOAK_MODEL          the model (default: the last line of scripts/fetch-model)
//   SOAK_PARALLEL, SOAK_CTX, SOAK_QUEUE, SOAK_THREADS, SOAK_MAX_BODY
//                       the server's --parallel 4, -c 1024, --queue 16, -t 2, --max-body 1048576
//   SOAK_RSS_LIMIT_MIB  largest RSS growth after the warm-up (default 32)
//   SOAK_RSS_INTERVAL   seconds between RSS samples (default 2)
//   SOAK_REQUEST_TIMEOUT seconds a valid request may take before it counts as hung (default 300)
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

import { startServer } from "./serve_engines.mjs";
import { envInt } from "./env_int.mjs";
import { streamChat } from "./serve_load.mjs";
import { userMessage } from "./serve_prompts.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");

// ---------------------------------------------------------------- settings

function config(env) {
  const count = (name, fallback, min = 1) => envInt(env, name, fallback, min);
  let model = env.SOAK_MODEL;
  if (!model) {
    const r = spawnSync(path.join(repo, "scripts", "fetch-model"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    model = r.stdout.trim().split("\n").at(-1);
    if (r.status !== 0 || !model) throw new Error("scripts/fetch-model found no model (set SOAK_MODEL)");
  }
  return {
    seconds: count("SOAK_SECONDS", 600),
    clients: count("SOAK_CLIENTS", 8),
    seed: count("SOAK_SEED", Math.floor(Math.random() * 2 ** 31), 0),
    bin: env.SMOLINFER_BIN || path.join(repo, "build", "native", "smolinfer"),
    model,
    parallel: count("SOAK_PARALLEL", 4),
    ctx: count("SOAK_CTX", 1024, 128),
    queue: count("SOAK_QUEUE", 16, 0),
    threads: count("SOAK_THREADS", 2),
    maxBody: count("SOAK_MAX_BODY", 1 << 20),
    rssLimitMiB: count("SOAK_RSS_LIMIT_MIB", 32, 0),
    rssIntervalMs: count("SOAK_RSS_INTERVAL", 2) * 1000,
    requestTimeoutMs: count("SOAK_REQUEST_TIMEOUT", 300) * 1000,
  };
}

// A small seeded generator (mulberry32): each client draws from its own.
function prng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)), // lo..hi inclusive
    pick: (list) => list[Math.floor(next() * list.length)],
    chance: (p) => next() < p,
  };
}

// ---------------------------------------------------------------- requests

const KINDS = {
  chat: 3,
  chat_stream: 3,
  completion_stream: 2,
  json_schema: 1,
  stop_logprobs: 2,
  stream_disconnect: 2,
  nonstream_abort: 1,
  bad_body: 3,
};
const KIND_NAMES = Object.keys(KINDS);
const TOTAL_WEIGHT = Object.values(KINDS).reduce((a, b) => a + b, 0);
function pickKind(rng) {
  let x = rng.next() * TOTAL_WEIGHT;
  for (const k of KIND_NAMES) if ((x -= KINDS[k]) < 0) return k;
  return KIND_NAMES.at(-1);
}

// A shared system prompt longer than a 64-token chunk, so that prefix reuse is exercised.
const SYSTEM = "You are a helpful assistant for a small public library. You answer questions about books, " +
  "opening hours, borrowing rules and events. Keep every answer short and friendly, use plain words, and say " +
  "so when you do not know. Never invent titles or authors. Opening hours are nine to five on weekdays.";
const PERSON_SCHEMA = {
  type: "object",
  properties: { name: { type: "string" }, age: { type: "integer" } },
  required: ["name", "age"],
  additionalProperties: false,
};
const STOPS = [".", ",", "\n", " the", "!", " and"];

function chatMessages(rng, n) {
  const messages = [];
  if (rng.chance(0.4)) messages.push({ role: "system", content: SYSTEM });
  if (rng.chance(0.2)) {
    messages.push({ role: "user", content: "Hello! Can you help me?" });
    messages.push({ role: "assistant", content: "Of course. What would you like to know?" });
  }
  messages.push({ role: "user", content: userMessage(n) });
  return messages;
}
const sampling = (rng) => (rng.chance(0.5) ? { temperature: 0 } : { temperature: 0.8, seed: rng.int(0, 1e6) });

// The bad bodies: [name, path, method, body, expected status].
function badBody(rng, cfg, n) {
  const msgs = [{ role: "user", content: `Bad request ${n}.` }];
  const chat = "/v1/chat/completions";
  const cases = [
    () => ["malformed JSON", chat, "POST", `{"messages": [{"role": "user", "content": "hi"}`, 400],
    () => ["not an object", chat, "POST", "[1, 2, 3]", 400],
    () => ["unknown field", chat, "POST", JSON.stringify({ messages: msgs, max_tokens: 8, frobnicate: true }), 400],
    () => ["negative max_tokens", chat, "POST", JSON.stringify({ messages: msgs, max_tokens: -rng.int(1, 1000) }), 400],
    () => ["huge max_tokens", chat, "POST", JSON.stringify({ messages: msgs, max_tokens: 2 ** 40 }), 400],
    () => ["temperature is a string", chat, "POST", JSON.stringify({ messages: msgs, temperature: "hot" }), 400],
    () => ["messages is a string", chat, "POST", JSON.stringify({ messages: "hi" }), 400],
    () => ["stream is a string", chat, "POST", JSON.stringify({ messages: msgs, stream: "yes" }), 400],
    () => ["unknown role", chat, "POST", JSON.stringify({ messages: [{ role: "robot", content: "x" }] }), 400],
    () => ["prompt is a number", "/v1/completions", "POST", JSON.stringify({ prompt: 42, max_tokens: 4 }), 400],
    () => ["bad grammar", "/v1/completions", "POST", JSON.stringify({ prompt: "x", grammar: "root ::= (" }), 400],
    () => ["prompt longer than the context", "/v1/completions", "POST",
      JSON.stringify({ prompt: "word ".repeat(cfg.ctx + rng.int(1, 500)), max_tokens: 4 }), 400],
    () => ["body over --max-body", "/v1/completions", "POST",
      `{"prompt": "${"a".repeat(cfg.maxBody + rng.int(1, 65536))}", "max_tokens": 4}`, 413],
    () => ["unknown path", "/v1/embeddings", "POST", JSON.stringify({ input: "x" }), 404],
    () => ["wrong method", chat, "GET", undefined, 405],
  ];
  return rng.pick(cases)();
}

function checkErrorBody(text, status) {
  let j;
  try {
    j = JSON.parse(text);
  } catch {
    return `HTTP ${status} without a JSON body: ${text.slice(0, 200)}`;
  }
  const e = j?.error;
  if (typeof e?.message !== "string" || typeof e?.type !== "string" || !("param" in e) || !("code" in e)) {
    return `HTTP ${status} without an OpenAI error {message, type, param, code}: ${text.slice(0, 200)}`;
  }
  return "";
}

// ---------------------------------------------------------------- checks (each returns "" or what is wrong)

function checkUsage(u, maxTokens, finish) {
  if (!u) return "no usage";
  const { prompt_tokens: p, completion_tokens: c, total_tokens: t } = u;
  if (![p, c, t].every(Number.isInteger)) return `usage not integers: ${JSON.stringify(u)}`;
  if (p <= 0 || c < 0 || t !== p + c) return `usage inconsistent: ${JSON.stringify(u)}`;
  if (c > maxTokens) return `usage: ${c} completion tokens > max_tokens ${maxTokens}`;
  if (finish === "length" && c !== maxTokens) return `finish "length" after ${c} of max_tokens ${maxTokens}`;
  return "";
}
const checkFinish = (f) => (f === "stop" || f === "length" ? "" : `finish_reason ${JSON.stringify(f)}`);

// With temperature 0 the alternatives come from the whole vocabulary (exactly
// `top`); when sampling, only tokens that top-k/top-p/min-p left could be
// drawn, so there may be fewer (README: log-probabilities).
function checkChatLogprobs(lp, top, completionTokens, greedy) {
  if (!lp || !Array.isArray(lp.content)) return `logprobs.content missing: ${JSON.stringify(lp)?.slice(0, 200)}`;
  if (lp.content.length > completionTokens) return `${lp.content.length} logprobs for ${completionTokens} tokens`;
  for (const e of lp.content) {
    if (typeof e.token !== "string" || typeof e.logprob !== "number" || e.logprob > 0 || !Array.isArray(e.bytes) ||
      !Array.isArray(e.top_logprobs) || e.top_logprobs.length > top || (greedy && e.top_logprobs.length !== top)) {
      return `bad logprobs entry (top_logprobs ${top}${greedy ? ", greedy" : ""}): ${JSON.stringify(e).slice(0, 200)}`;
    }
  }
  return "";
}

function checkCompletionLogprobs(lp, top, completionTokens, greedy) {
  const { tokens, token_logprobs: lps, top_logprobs: tops, text_offset: offs } = lp ?? {};
  if (![tokens, lps, tops, offs].every(Array.isArray)) return `completion logprobs missing: ${JSON.stringify(lp)?.slice(0, 200)}`;
  const n = tokens.length;
  if (lps.length !== n || tops.length !== n || offs.length !== n) return "completion logprobs arrays differ in length";
  if (n > completionTokens) return `${n} logprobs for ${completionTokens} tokens`;
  for (let i = 0; i < n; i++) {
    if (typeof lps[i] !== "number" || lps[i] > 0) return `token_logprobs[${i}] = ${lps[i]}`;
    const k = Object.keys(tops[i]).length;
    // Alternatives are keyed by their text: two tokens with the same text (invalid UTF-8 pieces) make one key.
    if (k > top || (greedy && k === 0 && top > 0)) return `top_logprobs[${i}] has ${k} alternatives for ${top}`;
    if (i && offs[i] < offs[i - 1]) return "text_offset decreases";
  }
  return "";
}

// ---------------------------------------------------------------- the run

class Soak {
  constructor(cfg) {
    this.cfg = cfg;
    this.stats = Object.fromEntries(KIND_NAMES.map((k) => [k, { sent: 0, ok: 0, expected: 0, busy: 0, disconnect: 0, unexpected: 0 }]));
    this.failures = []; // every unexpected outcome, described
    this.problems = []; // run-level failures (health, exit, metrics, RSS)
    this.rss = []; // { t (s), kib }
    this.healthFailures = 0;
    this.healthChecks = 0;
    this.busyQueueLengths = [];
    this.t0 = performance.now();
  }

  elapsed() {
    return (performance.now() - this.t0) / 1000;
  }

  fail(kind, where, detail) {
    const line = `${this.elapsed().toFixed(1)}s ${where} ${kind}: ${detail}`;
    this.failures.push(line);
    if (this.failures.length <= 20) console.error(`soak: UNEXPECTED ${line}`);
  }

  async metrics() {
    const r = await fetch(`${this.url}/metrics`, { signal: AbortSignal.timeout(10_000) });
    const text = await r.text();
    const gauge = (name) => Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1]);
    return { queued: gauge("smolinfer_queue_length"), running: gauge("smolinfer_running_sequences"), text };
  }

  // A 503 is fine when it says the queue is full and the queue is near full right after.
  async busy(status, text, headers) {
    if (status !== 503) return false;
    let code = null;
    try {
      code = JSON.parse(text).error?.code;
    } catch {
      return false;
    }
    if (code !== "queue_full" || headers.get("retry-after") !== "1") return false;
    const { queued } = await this.metrics().catch(() => ({ queued: NaN }));
    this.busyQueueLengths.push(queued);
    return queued >= this.cfg.queue / 2;
  }

  // One request of `kind`; resolves to an outcome and a detail.
  async one(kind, rng, n) {
    const cfg = this.cfg;
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, cfg.requestTimeoutMs);
    try {
      return await this.send(kind, rng, n, abort, () => timedOut);
    } catch (e) {
      if (timedOut) return ["unexpected", `no answer in ${cfg.requestTimeoutMs / 1000} s (hung)`];
      if (e.status !== undefined) {
        if (await this.busy(e.status, e.body, e.headers)) return ["busy", ""];
        return ["unexpected", e.message];
      }
      return ["unexpected", `${e.name}: ${e.message}${e.cause ? ` (${e.cause.code ?? e.cause.message})` : ""}`];
    } finally {
      clearTimeout(timer);
    }
  }

  async post(path, body, signal) {
    const r = await fetch(`${this.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal,
    });
    const text = await r.text();
    if (r.status !== 200) throw Object.assign(new Error(`HTTP ${r.status}: ${text.slice(0, 300)}`), { status: r.status, body: text, headers: r.headers });
    return JSON.parse(text);
  }

  async send(kind, rng, n, abort, timedOut) {
    const cfg = this.cfg;
    const signal = abort.signal;
    const chatPath = "/v1/chat/completions";
    const complPath = "/v1/completions";
    switch (kind) {
      case "chat": {
        const max = rng.int(8, 48);
        const j = await this.post(chatPath, { messages: chatMessages(rng, n), max_tokens: max, ...sampling(rng) }, signal);
        const c = j.choices?.[0];
        if (j.object !== "chat.completion" || j.choices.length !== 1 || c.message?.role !== "assistant" || typeof c.message?.content !== "string") {
          return ["unexpected", `malformed chat completion: ${JSON.stringify(j).slice(0, 300)}`];
        }
        return this.verdict(checkFinish(c.finish_reason) || checkUsage(j.usage, max, c.finish_reason));
      }
      case "chat_stream":
      case "completion_stream": {
        const chat = kind === "chat_stream";
        const max = rng.int(8, 48);
        const includeUsage = rng.chance(0.7);
        const body = { ...(chat ? { messages: chatMessages(rng, n) } : { prompt: userMessage(n) }), max_tokens: max, ...sampling(rng),
          ...(includeUsage ? { stream_options: { include_usage: true } } : {}) };
        let bad = "";
        const object = chat ? "chat.completion.chunk" : "text_completion";
        const r = await streamChat(this.url, body, { path: chat ? chatPath : complPath, signal,
          onChunk: (j) => { if (!bad && j.object !== object) bad = `chunk object ${JSON.stringify(j.object)}`; } });
        return this.verdict(bad || checkFinish(r.finish) || (includeUsage ? checkUsage(r.usage, max, r.finish) : "") ||
          (includeUsage && r.chunks > r.usage.completion_tokens ? `${r.chunks} text chunks for ${r.usage.completion_tokens} tokens` : ""));
      }
      case "json_schema": {
        const max = 48;
        const j = await this.post(chatPath, {
          messages: [{ role: "user", content: `Invent person number ${n} and give their name and age as JSON.` }],
          max_tokens: max, ...sampling(rng),
          response_format: { type: "json_schema", json_schema: { name: "person", schema: PERSON_SCHEMA, strict: true } },
        }, signal);
        const c = j.choices?.[0];
        const problem = checkFinish(c?.finish_reason) || checkUsage(j.usage, max, c?.finish_reason);
        if (problem || c.finish_reason === "length") return this.verdict(problem); // cut short: not parseable, not wrong
        let v;
        try {
          v = JSON.parse(c.message.content);
        } catch {
          return ["unexpected", `JSON-schema output does not parse: ${JSON.stringify(c.message.content)}`];
        }
        const keys = Object.keys(v ?? {}).sort().join(",");
        if (keys !== "age,name" || typeof v.name !== "string" || !Number.isInteger(v.age)) {
          return ["unexpected", `JSON-schema output does not match the schema: ${c.message.content}`];
        }
        return ["ok", ""];
      }
      case "stop_logprobs": {
        const max = rng.int(8, 48);
        const stop = [...new Set([rng.pick(STOPS), rng.pick(STOPS)])];
        const top = rng.int(0, 3);
        const samp = sampling(rng);
        const greedy = samp.temperature === 0;
        if (rng.chance(0.5)) {
          const j = await this.post(chatPath, { messages: chatMessages(rng, n), max_tokens: max, stop, logprobs: true, top_logprobs: top, ...samp }, signal);
          const c = j.choices?.[0];
          const text = c?.message?.content;
          if (typeof text !== "string") return ["unexpected", `malformed: ${JSON.stringify(j).slice(0, 300)}`];
          const hit = stop.find((s) => text.includes(s));
          return this.verdict(checkFinish(c.finish_reason) || checkUsage(j.usage, max, c.finish_reason) ||
            (hit ? `the answer contains stop string ${JSON.stringify(hit)}: ${JSON.stringify(text)}` : "") ||
            checkChatLogprobs(c.logprobs, top, j.usage.completion_tokens, greedy));
        }
        const j = await this.post(complPath, { prompt: userMessage(n), max_tokens: max, stop, logprobs: top, ...samp }, signal);
        const c = j.choices?.[0];
        if (typeof c?.text !== "string" || j.object !== "text_completion") return ["unexpected", `malformed: ${JSON.stringify(j).slice(0, 300)}`];
        const hit = stop.find((s) => c.text.includes(s));
        return this.verdict(checkFinish(c.finish_reason) || checkUsage(j.usage, max, c.finish_reason) ||
          (hit ? `the text contains stop string ${JSON.stringify(hit)}: ${JSON.stringify(c.text)}` : "") ||
          checkCompletionLogprobs(c.logprobs, top, j.usage.completion_tokens, greedy));
      }
      case "stream_disconnect": {
        const chat = rng.chance(0.5);
        const max = rng.int(64, 256);
        const after = rng.int(1, 12);
        const body = { ...(chat ? { messages: chatMessages(rng, n) } : { prompt: userMessage(n) }), max_tokens: max, ...sampling(rng) };
        let seen = 0;
        try {
          const r = await streamChat(this.url, body, { path: chat ? chatPath : complPath, signal,
            onChunk: (j) => { if (j.choices?.[0]?.delta?.content || j.choices?.[0]?.text) if (++seen >= after) abort.abort(); } });
          return this.verdict(checkFinish(r.finish)); // ended before the client hung up
        } catch (e) {
          if (signal.aborted && !timedOut()) return ["disconnect", ""];
          throw e;
        }
      }
      case "nonstream_abort": {
        const max = rng.int(32, 96);
        const ms = rng.int(100, 3000);
        const t = setTimeout(() => abort.abort(), ms);
        try {
          const chat = rng.chance(0.5);
          const body = chat ? { messages: chatMessages(rng, n), max_tokens: max } : { prompt: userMessage(n), max_tokens: max };
          const j = await this.post(chat ? chatPath : complPath, body, signal);
          return this.verdict(checkFinish(j.choices?.[0]?.finish_reason) || checkUsage(j.usage, max, j.choices[0].finish_reason));
        } catch (e) {
          if (signal.aborted && !timedOut()) return ["disconnect", ""];
          throw e;
        } finally {
          clearTimeout(t);
        }
      }
      case "bad_body": {
        const [name, path, method, body, status] = badBody(rng, cfg, n);
        let r;
        try {
          r = await fetch(`${this.url}${path}`, { method, headers: body ? { "content-type": "application/json" } : {}, body, signal });
        } catch (e) {
          return ["unexpected", `${name}: ${e.name}: ${e.message}${e.cause ? ` (${e.cause.code ?? e.cause.message})` : ""}`];
        }
        const text = await r.text();
        if (r.status === 503 && (await this.busy(r.status, text, r.headers))) return ["busy", ""];
        if (r.status !== status) return ["unexpected", `${name}: HTTP ${r.status}, expected ${status}: ${text.slice(0, 200)}`];
        const problem = checkErrorBody(text, r.status);
        if (problem) return ["unexpected", `${name}: ${problem}`];
        if (JSON.parse(text).error.type !== "invalid_request_error") return ["unexpected", `${name}: error type ${JSON.parse(text).error.type}`];
        return ["expected", ""];
      }
    }
    throw new Error(`unknown kind ${kind}`);
  }

  verdict(problem) {
    return problem ? ["unexpected", problem] : ["ok", ""];
  }

  async client(index, endAt) {
    const rng = prng((this.cfg.seed + Math.imul(index + 1, 0x9e3779b9)) >>> 0);
    for (let i = 0; performance.now() < endAt && !this.stopping; i++) {
      const kind = pickKind(rng);
      const n = index * 1_000_000 + i; // a distinct user message per request
      const s = this.stats[kind];
      s.sent++;
      const [outcome, detail] = await this.one(kind, rng, n);
      s[outcome]++;
      if (outcome === "unexpected") this.fail(kind, `client ${index} request ${i}`, detail);
    }
  }

  // One prompt per sequence that fills its context nearly to the end (each
  // with different first words, so that none reuses another's cells).
  async warmup() {
    const words = ["apple", "river", "stone", "cloud", "maple", "tiger", "ocean", "amber"];
    const jobs = Array.from({ length: this.cfg.parallel }, (_, i) => {
      const prompt = `${words[i % words.length]} ${i} ` + "word ".repeat(this.cfg.ctx - 48);
      return this.post("/v1/completions", { prompt, max_tokens: 16, temperature: 0 }, AbortSignal.timeout(this.cfg.requestTimeoutMs))
        .then((j) => checkUsage(j.usage, 16, j.choices?.[0]?.finish_reason))
        .catch(async (e) => (e.status !== undefined && (await this.busy(e.status, e.body, e.headers)) ? "" : e.message));
    });
    for (const problem of await Promise.all(jobs)) if (problem) this.fail("warmup", "long-context warm-up", problem);
    // Then one request of every kind at once: some allocate once, on first
    // use (the first JSON-schema request grows RSS by ~6 MiB, and no later one).
    const rng = prng(this.cfg.seed ^ 0x5eed);
    await Promise.all(KIND_NAMES.map(async (kind, i) => {
      this.stats[kind].sent++;
      const [outcome, detail] = await this.one(kind, rng, 9_000_000 + i);
      this.stats[kind][outcome]++;
      if (outcome === "unexpected") this.fail(kind, "warm-up", detail);
    }));
  }

  // Not a failure (README promises it for streams only), a warning: a
  // non-streaming request whose client hangs up keeps its sequence until
  // max_tokens (or the end of the context when it gives none).
  async abandonedNonStreaming() {
    const abort = new AbortController();
    const req = this.post("/v1/completions", { prompt: "Once upon a time, in a small village,", max_tokens: 100, temperature: 0 }, abort.signal).catch(() => null);
    let m = await this.metrics();
    for (let i = 0; i < 100 && m.running < 1; i++) m = await new Promise((r) => setTimeout(r, 100)).then(() => this.metrics());
    const before = Number(m.text.match(/^smolinfer_generated_tokens_total (\d+)$/m)?.[1]);
    abort.abort();
    await req;
    await new Promise((r) => setTimeout(r, 3000));
    m = await this.metrics();
    const after = Number(m.text.match(/^smolinfer_generated_tokens_total (\d+)$/m)?.[1]);
    if (m.running > 0) {
      console.log(`soak: WARN: a non-streaming request whose client hung up is still generating 3 s later ` +
        `(${after - before} tokens since; it runs to max_tokens, or to the end of the context without one)`);
    }
    for (let i = 0; i < 240 && (m.running > 0 || m.queued > 0); i++) m = await new Promise((r) => setTimeout(r, 500)).then(() => this.metrics());
  }

  // SIGTERM while `parallel` streams run: README says each ends with a last
  // chunk (finish_reason "stop") and data: [DONE], and the server exits 0.
  async sigtermWithStreams(server) {
    if (server.exitStatus() !== null) return server.exitStatus();
    const firsts = [];
    const streams = Array.from({ length: this.cfg.parallel }, (_, i) => {
      let started;
      let chunks = 0;
      let finish = null;
      firsts.push(new Promise((r) => (started = r)));
      return streamChat(this.url, { prompt: `Stream ${i} at the end. Once upon a time`, max_tokens: this.cfg.ctx - 64, temperature: 0 },
        { path: "/v1/completions", onChunk: (j) => {
          chunks++;
          finish ??= j.choices?.[0]?.finish_reason ?? null;
          started();
        } })
        .then((r) => (r.finish === "stop" ? "" : `finish_reason ${r.finish}`))
        .catch((e) => `${e.message} after ${chunks} chunks, ${finish ? `the last with finish_reason ${finish}` : "none with a finish_reason"}`)
        .finally(() => started());
    });
    await Promise.race([Promise.all(firsts), new Promise((r) => setTimeout(r, 120_000))]);
    const status = await server.stop();
    const results = await Promise.all(streams);
    const cut = results.map((r, i) => [i, r]).filter(([, r]) => r);
    if (cut.length) {
      this.problems.push(`SIGTERM with ${results.length} streams running: ${cut.length} did not end with finish_reason "stop" and data: [DONE] ` +
        `(${cut.map(([i, r]) => `stream ${i}: ${r}`).join("; ")})`);
    } else {
      console.log(`soak: SIGTERM with ${results.length} streams running: each ended with finish_reason "stop" and data: [DONE]`);
    }
    return status;
  }

  summary() {
    const total = { sent: 0, ok: 0, expected: 0, busy: 0, disconnect: 0, unexpected: 0 };
    for (const s of Object.values(this.stats)) for (const k in total) total[k] += s[k];
    return total;
  }

  progress() {
    const kib = this.rss.at(-1)?.kib;
    const byKind = KIND_NAMES.filter((k) => this.stats[k].sent).map((k) => {
      const s = this.stats[k];
      const extra = [s.expected && `${s.expected} err`, s.disconnect && `${s.disconnect} disc`, s.busy && `${s.busy} 503`,
        s.unexpected && `${s.unexpected} UNEXPECTED`].filter(Boolean);
      return `${k} ${s.ok} ok${extra.length ? ` ${extra.join(" ")}` : ""}`;
    });
    const t = this.summary();
    console.log(`soak ${this.elapsed().toFixed(0)}s: ${t.sent - this.inflight()} done (${byKind.join("; ")}); ` +
      `RSS ${kib ? (kib / 1024).toFixed(1) : "?"} MiB; health ${this.healthChecks - this.healthFailures}/${this.healthChecks}`);
  }

  inflight() {
    const s = this.summary();
    return s.sent - s.ok - s.expected - s.busy - s.disconnect - s.unexpected;
  }

  // RSS growth after the warm-up: max of the last quarter of the samples minus max of the first quarter.
  rssGrowth(warmupEnd) {
    const after = this.rss.filter((s) => s.t >= warmupEnd);
    if (after.length < 8) return { growthMiB: NaN, slope: NaN, samples: after.length };
    const q = Math.max(1, Math.floor(after.length / 4));
    const max = (list) => Math.max(...list.map((s) => s.kib));
    const growthMiB = (max(after.slice(-q)) - max(after.slice(0, q))) / 1024;
    const mt = after.reduce((a, s) => a + s.t, 0) / after.length;
    const mk = after.reduce((a, s) => a + s.kib, 0) / after.length;
    const slope = after.reduce((a, s) => a + (s.t - mt) * (s.kib - mk), 0) / after.reduce((a, s) => a + (s.t - mt) ** 2, 0);
    return { growthMiB, slopeMiBPerMin: (slope * 60) / 1024, samples: after.length, firstMiB: max(after.slice(0, q)) / 1024, lastMiB: max(after.slice(-q)) / 1024 };
  }

  async run() {
    const cfg = this.cfg;
    const args = ["serve", "-m", cfg.model, "--host", "127.0.0.1", "--port", "0", "--parallel", String(cfg.parallel), "-c", String(cfg.ctx),
      "--queue", String(cfg.queue), "-t", String(cfg.threads), "--max-body", String(cfg.maxBody)];
    console.log(`soak: ${cfg.seconds} s, ${cfg.clients} clients, SOAK_SEED=${cfg.seed}; ${cfg.bin} ${args.join(" ")}`);
    const server = await startServer([cfg.bin, args], { log: (s) => console.log(`soak: ${s}`) });
    this.url = server.url;
    this.t0 = performance.now();

    const readRss = () => {
      try {
        const m = readFileSync(`/proc/${server.pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
        if (m) this.rss.push({ t: this.elapsed(), kib: Number(m[1]) });
      } catch {
        // the process is gone: the exit check says so
      }
    };
    let exitSeen = false;
    const watch = setInterval(() => {
      readRss();
      if (server.exitStatus() !== null && !exitSeen) {
        exitSeen = true;
        this.problems.push(`the server exited during the run (${server.exitStatus()}): ${server.output().trim().split("\n").slice(-5).join(" | ")}`);
        console.error(`soak: ${this.problems.at(-1)}`);
        this.stopping = true;
      }
    }, cfg.rssIntervalMs);
    readRss();
    const health = setInterval(async () => {
      if (exitSeen) return;
      this.healthChecks++;
      try {
        const r = await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(10_000) });
        const body = await r.text();
        if (r.status !== 200 || !body.includes('"ok"')) throw new Error(`HTTP ${r.status} ${body.slice(0, 100)}`);
      } catch (e) {
        this.healthFailures++;
        if (this.healthFailures <= 5) console.error(`soak: /health failed at ${this.elapsed().toFixed(1)}s: ${e.message}`);
      }
    }, 2000);
    const progress = setInterval(() => this.progress(), 30_000);

    // The warm-up: the long prompts alone (they hold every sequence), then
    // the first 20% of the clients' SOAK_SECONDS.
    await this.warmup();
    this.clientsStart = this.elapsed();
    console.log(`soak: warm-up (${cfg.parallel} prompts of ~${cfg.ctx - 40} tokens, then one request of each kind) done in ` +
      `${this.clientsStart.toFixed(1)} s, RSS ${(this.rss.at(-1)?.kib / 1024).toFixed(1)} MiB; clients start`);
    const endAt = performance.now() + cfg.seconds * 1000;
    await Promise.all(Array.from({ length: cfg.clients }, (_, i) => this.client(i, endAt)));
    clearInterval(progress);
    this.progress();

    // No sequence or queued request may remain once the clients are done
    // (a non-streaming request the client gave up on runs to its end first).
    if (!exitSeen) {
      const settleStart = performance.now();
      let m = { queued: NaN, running: NaN };
      while (performance.now() - settleStart < 120_000) {
        m = await this.metrics().catch(() => m);
        if (m.queued === 0 && m.running === 0) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      const waited = (performance.now() - settleStart) / 1000;
      if (m.queued !== 0 || m.running !== 0) {
        this.problems.push(`/metrics after the clients stopped: ${m.running} running, ${m.queued} queued (after ${waited.toFixed(0)} s)`);
      } else {
        console.log(`soak: /metrics: 0 running, 0 queued ${waited.toFixed(1)} s after the clients stopped`);
      }
    }
    readRss();
    clearInterval(watch);
    clearInterval(health);

    if (!exitSeen) await this.abandonedNonStreaming();
    const status = await this.sigtermWithStreams(server);
    if (!exitSeen && status !== 0) {
      this.problems.push(`SIGTERM: the server exited with ${status}, not 0: ${server.output().trim().split("\n").slice(-3).join(" | ")}`);
    }
    if (this.healthFailures) this.problems.push(`/health failed ${this.healthFailures} of ${this.healthChecks} times`);

    const warmupEnd = this.clientsStart + 0.2 * cfg.seconds;
    const g = this.rssGrowth(warmupEnd);
    if (Number.isNaN(g.growthMiB)) {
      this.problems.push(`too few RSS samples after the warm-up (${g.samples}; the warm-up ended at ${warmupEnd.toFixed(0)} s)`);
    } else {
      console.log(`soak: RSS after the warm-up (${warmupEnd.toFixed(0)} s, ${g.samples} samples): max of the first quarter ` +
        `${g.firstMiB.toFixed(1)} MiB, of the last ${g.lastMiB.toFixed(1)} MiB (${g.growthMiB >= 0 ? "+" : ""}${g.growthMiB.toFixed(1)} MiB; ` +
        `slope ${g.slopeMiBPerMin.toFixed(2)} MiB/min); limit +${cfg.rssLimitMiB} MiB`);
      if (g.growthMiB > cfg.rssLimitMiB) this.problems.push(`RSS grew ${g.growthMiB.toFixed(1)} MiB after the warm-up (limit ${cfg.rssLimitMiB})`);
    }
    const rssAll = this.rss.map((s) => s.kib / 1024);
    console.log(`soak: RSS over the run: start ${rssAll[0]?.toFixed(1)} MiB, max ${Math.max(...rssAll).toFixed(1)} MiB, end ${rssAll.at(-1)?.toFixed(1)} MiB`);

    const t = this.summary();
    if (t.unexpected) this.problems.push(`${t.unexpected} unexpected answers (first: ${this.failures[0]})`);
    if (this.failures.length > 20) console.error(`soak: ... and ${this.failures.length - 20} more unexpected answers`);
    console.log(`soak: by kind: ${KIND_NAMES.map((k) => `${k} ${this.stats[k].sent}`).join(", ")}`);
    console.log(`soak: ${t.busy} busy (503 queue_full${this.busyQueueLengths.length ? `, queue length after: ${[...new Set(this.busyQueueLengths)].join(",")}` : ""}); ` +
      `/health ${this.healthChecks - this.healthFailures}/${this.healthChecks}; server exit ${exitSeen ? server.exitStatus() : status}`);
    for (const p of this.problems) console.log(`soak: FAIL: ${p}`);
    const pass = this.problems.length === 0;
    const growth = Number.isNaN(g.growthMiB) ? "?" : `${g.growthMiB >= 0 ? "+" : ""}${g.growthMiB.toFixed(1)}`;
    console.log(`soak: ${pass ? "PASS" : "FAIL"} (${t.sent} requests, ${t.ok} ok, ${t.expected} expected errors, ${t.disconnect} disconnects, ` +
      `${t.unexpected} unexpected; RSS ${growth} MiB after warm-up)`);
    return pass;
  }
}

const soak = new Soak(config(process.env));
const pass = await soak.run().catch((e) => {
  console.log(`soak: FAIL: ${e.stack ?? e.message}`);
  return false;
});
process.exit(pass ? 0 : 1);
