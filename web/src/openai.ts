// engine.chat.completions.create and engine.completions.create: OpenAI's
// request and response shapes on any backend that streams pieces (the
// worker-backed Engine in the browser; the bare WebAssembly engine in the
// Node tests).
import { EngineError } from "./errors.js";
import { type Input, type Parsed, parseRequest } from "./openai-request.js";
import { ToolAnswer } from "./openai-tool-response.js";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionTokenLogprob,
  Completion,
  CompletionLogprobs,
  CompletionUsage,
  FinishReason,
  RequestOptions,
  TopLogprob,
} from "./openai-types.js";
import type { GenerationStats, WireLogprobs, WireOptions, WireTokenLogprob, WireToolOutput } from "./protocol.js";

/** A piece's `tools`: the engine's parse of the answer so far, when options.tools lets the model call them. */
export type RunEvent =
  | { type: "piece"; text: string; logprobs?: WireLogprobs; tools?: WireToolOutput }
  | { type: "done"; stats: GenerationStats };

/** What the OpenAI layer needs from an engine. */
export interface Backend {
  /** Pieces, then one "done"; leaving the iteration early stops the generation. */
  run(input: Input, options: WireOptions, signal?: AbortSignal): AsyncIterable<RunEvent>;
  /** The loaded model's name (the responses' "model" when the request names none). */
  modelName(): string;
  /** The context size: max_tokens' default (until the context is full). */
  contextSize(): number;
}

const decoder = new TextDecoder("utf-8", { fatal: false });

/** OpenAI reports a token that cannot be drawn as -9999 (JSON has no -Infinity). */
const finite = (logprob: number) => (logprob === -Infinity ? -9999 : logprob);

function topLogprob(t: WireTokenLogprob): TopLogprob {
  return { token: decoder.decode(t.bytes), logprob: finite(t.logprob), bytes: Array.from(t.bytes) };
}

function chatLogprob(l: WireLogprobs): ChatCompletionTokenLogprob {
  return { ...topLogprob(l), top_logprobs: l.top.map(topLogprob) };
}

/** end of generation and stop strings: "stop"; max_tokens and a full context: "length". */
export function finishReason(stop: string): FinishReason {
  return stop === "length" || stop === "context" ? "length" : "stop";
}

function usage(stats: GenerationStats): CompletionUsage {
  return {
    prompt_tokens: stats.promptTokens,
    completion_tokens: stats.generatedTokens,
    total_tokens: stats.promptTokens + stats.generatedTokens,
  };
}

function newId(prefix: string): string {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// Starts the generation and waits for its first event, so that the engine's
// refusals (busy, not loaded, a bad token id or grammar) reject create().
async function start(backend: Backend, p: Parsed): Promise<{ first: RunEvent; rest: AsyncIterator<RunEvent> }> {
  const options = { ...p.options, maxTokens: p.options.maxTokens ?? backend.contextSize() };
  const it = backend.run(p.input, options, p.signal)[Symbol.asyncIterator]();
  const r = await it.next();
  if (r.done) throw new EngineError("internal", "the generation ended without a result");
  return { first: r.value, rest: it };
}

// The events: the first one, then the rest; returning early stops the generation.
async function* events(s: { first: RunEvent; rest: AsyncIterator<RunEvent> }): AsyncGenerator<RunEvent> {
  let finished = false;
  try {
    yield s.first;
    for (;;) {
      const r = await s.rest.next();
      if (r.done) break;
      yield r.value;
    }
    finished = true;
  } finally {
    if (!finished) await s.rest.return?.();
  }
}

// Collects a whole generation.
async function collect(s: { first: RunEvent; rest: AsyncIterator<RunEvent> }) {
  let text = "";
  const logprobs: WireLogprobs[] = [];
  const answer = new ToolAnswer();
  let stats: GenerationStats | null = null;
  for await (const e of events(s)) {
    if (e.type === "done") stats = e.stats;
    else {
      text += e.text;
      answer.add(e.text, e.tools);
      if (e.logprobs) logprobs.push(e.logprobs);
    }
  }
  if (!stats) throw new EngineError("internal", "the generation ended without statistics");
  return { text, logprobs, stats, answer };
}

export async function createChatCompletion(
  backend: Backend,
  request: unknown,
  options: RequestOptions = {},
): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>> {
  const p = parseRequest("chat.completions.create", "chat", request, options.signal);
  const id = newId("chatcmpl-");
  const created = Math.floor(Date.now() / 1000);
  const model = p.model ?? backend.modelName();
  const wantLogprobs = p.options.logprobs === true;
  const s = await start(backend, p);
  if (!p.stream) {
    const { logprobs, stats, answer } = await collect(s);
    const { content, tool_calls } = answer.message();
    const reason = finishReason(stats.stop);
    return {
      id,
      object: "chat.completion",
      created,
      model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content, refusal: null, ...(tool_calls ? { tool_calls } : {}) },
          logprobs: wantLogprobs ? { content: logprobs.map(chatLogprob), refusal: null } : null,
          finish_reason: tool_calls && reason === "stop" ? "tool_calls" : reason,
        },
      ],
      usage: usage(stats),
    };
  }
  const chunk = (choices: ChatCompletionChunk["choices"], last?: CompletionUsage): ChatCompletionChunk => ({
    id,
    object: "chat.completion.chunk",
    created,
    model,
    choices,
    ...(p.includeUsage ? { usage: last ?? null } : {}),
  });
  return (async function* () {
    yield chunk([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]);
    // Log-probabilities of tokens whose text is still held back go out with the next text.
    let pending: ChatCompletionTokenLogprob[] = [];
    let stats: GenerationStats | null = null;
    // With tools: content and whole calls as the engine's parses reveal them (logprobs are refused).
    const answer = new ToolAnswer();
    const deltaChunk = (delta: ChatCompletionChunk["choices"][0]["delta"]) => chunk([{ index: 0, delta, logprobs: null, finish_reason: null }]);
    for await (const e of events(s)) {
      if (e.type === "done") {
        stats = e.stats;
        continue;
      }
      if (wantLogprobs && e.logprobs) pending.push(chatLogprob(e.logprobs));
      if (!e.text) continue;
      answer.add(e.text, e.tools);
      if (answer.reading) {
        for (const d of answer.deltas(false)) yield deltaChunk(d);
        continue;
      }
      yield chunk([
        { index: 0, delta: { content: e.text }, logprobs: wantLogprobs ? { content: pending, refusal: null } : null, finish_reason: null },
      ]);
      pending = [];
    }
    if (!stats) throw new EngineError("internal", "the generation ended without statistics");
    let reason = finishReason(stats.stop);
    if (answer.reading) {
      for (const d of answer.deltas(true)) yield deltaChunk(d);
      if (answer.called && reason === "stop") reason = "tool_calls";
    }
    yield chunk([
      {
        index: 0,
        delta: {},
        logprobs: wantLogprobs && pending.length ? { content: pending, refusal: null } : null,
        finish_reason: reason,
      },
    ]);
    if (p.includeUsage) yield chunk([], usage(stats));
  })();
}

function completionLogprobs(list: WireLogprobs[], offset0: number): CompletionLogprobs {
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let offset = offset0;
  for (const l of list) {
    const token = decoder.decode(l.bytes);
    out.tokens.push(token);
    out.token_logprobs.push(finite(l.logprob));
    out.top_logprobs.push(Object.fromEntries(l.top.map((t) => [decoder.decode(t.bytes), finite(t.logprob)])));
    out.text_offset.push(offset);
    offset += token.length;
  }
  return out;
}

export async function createCompletion(
  backend: Backend,
  request: unknown,
  options: RequestOptions = {},
): Promise<Completion | AsyncIterable<Completion>> {
  const p = parseRequest("completions.create", "prompt", request, options.signal);
  const id = newId("cmpl-");
  const created = Math.floor(Date.now() / 1000);
  const model = p.model ?? backend.modelName();
  const wantLogprobs = p.options.logprobs === true;
  const s = await start(backend, p);
  if (!p.stream) {
    const { text, logprobs, stats } = await collect(s);
    return {
      id,
      object: "text_completion",
      created,
      model,
      choices: [{ index: 0, text, logprobs: wantLogprobs ? completionLogprobs(logprobs, 0) : null, finish_reason: finishReason(stats.stop) }],
      usage: usage(stats),
    };
  }
  const chunk = (choices: Completion["choices"], last?: CompletionUsage): Completion => ({
    id,
    object: "text_completion",
    created,
    model,
    choices,
    ...(p.includeUsage ? { usage: last ?? null } : {}),
  });
  return (async function* () {
    let pending: WireLogprobs[] = [];
    let offset = 0;
    let stats: GenerationStats | null = null;
    for await (const e of events(s)) {
      if (e.type === "done") {
        stats = e.stats;
        continue;
      }
      if (wantLogprobs && e.logprobs) pending.push(e.logprobs);
      if (!e.text) continue;
      yield chunk([{ index: 0, text: e.text, logprobs: wantLogprobs ? completionLogprobs(pending, offset) : null, finish_reason: null }]);
      offset += e.text.length;
      pending = [];
    }
    if (!stats) throw new EngineError("internal", "the generation ended without statistics");
    yield chunk([
      {
        index: 0,
        text: "",
        logprobs: wantLogprobs && pending.length ? completionLogprobs(pending, offset) : null,
        finish_reason: finishReason(stats.stop),
      },
    ]);
    if (p.includeUsage) yield chunk([], usage(stats));
  })();
}
