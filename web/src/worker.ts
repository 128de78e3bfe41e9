// The engine's Web Worker: owns the WebAssembly module and the model, and
// answers requests from engine.ts one at a time (a load or a generation at a
// time; tokenizing may interleave). Between two generated tokens it returns
// to the event loop, so a cancel request is seen within one token.
/// <reference lib="webworker" />

import type {
  ErrorCode,
  ErrorInfo,
  InitResult,
  LoadProgress,
  ModelInfo,
  Request,
  Response,
  SamplingOptions,
  SourceSpec,
} from "./protocol.js";
import * as store from "./model-store.js";

declare const self: DedicatedWorkerGlobalScope;

// The parts of the Emscripten module (web/wasm/bindings.cpp) used here.
interface WasmEngine {
  load(ptr: number, size: number, options: object): Record<string, unknown>;
  unload(): void;
  loaded(): boolean;
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): { ids?: Int32Array; error?: string };
  chatTokens(messages: object[], addGenerationPrompt: boolean): { ids?: Int32Array; error?: string };
  detokenize(ids: number[], special: boolean): { text?: string; error?: string };
  start(ids: Int32Array, options: object): { error?: string };
  next(): { done: boolean; text?: string; stats?: Record<string, unknown>; error?: string };
  cancel(): Record<string, unknown>;
}
interface WasmModule {
  HEAPU8: Uint8Array;
  wasmMemory?: WebAssembly.Memory;
  Engine: {
    new (): WasmEngine;
    allocate(size: number): number;
    release(ptr: number): void;
    sha256(ptr: number, size: number): string;
  };
}

class EngineFailure extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

let wasm: WasmModule | null = null;
let engine: WasmEngine | null = null;
let threads = 1;
let busy: number | null = null; // id of the running load or generation
const cancelled = new Set<number>();
const fetchAborts = new Map<number, AbortController>();

function post(message: Response): void {
  self.postMessage(message);
}

function memoryBytes(): number {
  return wasm ? (wasm.wasmMemory?.buffer ?? wasm.HEAPU8.buffer).byteLength : 0;
}

// The heap as it is now: memory may have grown since HEAPU8 was made.
function heap(): Uint8Array {
  const m = wasm!;
  const buffer = m.wasmMemory?.buffer;
  if (buffer && m.HEAPU8.buffer !== buffer) return new Uint8Array(buffer);
  return m.HEAPU8;
}

// Lets queued messages (a cancel) run; much faster than setTimeout(0).
const tick = new MessageChannel();
let tickResolve: (() => void) | null = null;
tick.port1.onmessage = () => {
  const r = tickResolve;
  tickResolve = null;
  r?.();
};
function yieldToEvents(): Promise<void> {
  return new Promise((resolve) => {
    tickResolve = resolve;
    tick.port2.postMessage(0);
  });
}

function checkCancelled(id: number): void {
  if (cancelled.has(id)) throw new EngineFailure("aborted", "aborted by the caller");
}

async function init(requested: number): Promise<InitResult> {
  const canThread =
    requested > 1 && (self as unknown as { crossOriginIsolated?: boolean }).crossOriginIsolated === true &&
    typeof SharedArrayBuffer !== "undefined";
  const build = canThread ? "mt" : "st";
  const url = new URL(`./wasm/smolinfer-${build}.js`, import.meta.url).href;
  const factory = (await import(url)).default as (options?: object) => Promise<WasmModule>;
  wasm = await factory();
  engine = new wasm.Engine();
  // The pthread pool is pre-spawned at its build size; ask for no more.
  threads = canThread ? Math.min(requested, 1 + 4) : 1;
  await store.sweepPartials().catch(() => undefined);
  return { threads, build, memoryBytes: memoryBytes() };
}

// Streams a body into a fresh engine buffer. Allocates once when the size is
// known; otherwise grows by doubling (one extra copy at most per doubling).
async function receive(
  id: number,
  body: ReadableStream<Uint8Array>,
  expected: number,
  phase: LoadProgress["phase"],
  progress: (p: LoadProgress) => void,
): Promise<{ ptr: number; size: number }> {
  const m = wasm!;
  let capacity = expected > 0 ? expected : 64 << 20;
  let ptr = m.Engine.allocate(capacity);
  if (!ptr) throw new EngineFailure("internal", `cannot allocate ${capacity} bytes for the model`);
  let size = 0;
  const start = performance.now();
  let lastReport = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      checkCancelled(id);
      const { done, value } = await reader.read();
      if (done) break;
      if (size + value.length > capacity) {
        if (expected > 0) {
          throw new EngineFailure("network", `the server sent more than the ${expected} bytes it announced`);
        }
        let grown = capacity;
        while (grown < size + value.length) grown *= 2;
        const bigger = m.Engine.allocate(grown);
        if (!bigger) throw new EngineFailure("internal", `cannot allocate ${grown} bytes for the model`);
        heap().copyWithin(bigger, ptr, ptr + size);
        m.Engine.release(ptr);
        ptr = bigger;
        capacity = grown;
      }
      heap().set(value, ptr + size);
      size += value.length;
      const now = performance.now();
      if (now - lastReport > 100 || (expected > 0 && size === expected)) {
        lastReport = now;
        const seconds = (now - start) / 1000;
        const rate = seconds > 0 ? size / seconds : 0;
        progress({
          phase,
          loaded: size,
          total: expected,
          bytesPerSecond: rate,
          etaSeconds: expected > 0 && rate > 0 ? (expected - size) / rate : NaN,
        });
      }
    }
  } catch (e) {
    m.Engine.release(ptr);
    reader.cancel().catch(() => undefined);
    if (e instanceof EngineFailure) throw e;
    if (cancelled.has(id)) throw new EngineFailure("aborted", "aborted by the caller");
    throw new EngineFailure("network", `the download failed after ${size} bytes: ${(e as Error).message ?? e}`);
  }
  if (expected > 0 && size !== expected) {
    m.Engine.release(ptr);
    throw new EngineFailure("network", `truncated download: received ${size} of ${expected} bytes`);
  }
  if (size === 0) {
    m.Engine.release(ptr);
    throw new EngineFailure("bad_model", "the file is empty");
  }
  return { ptr, size };
}

async function load(id: number, source: SourceSpec, contextSize: number | undefined): Promise<ModelInfo> {
  const m = wasm!;
  engine!.unload();
  const progress = (p: LoadProgress) => post({ id, type: "progress", progress: p });
  let received: { ptr: number; size: number };
  let fromCache = false;
  let url = "";
  if (source.kind === "file") {
    received = await receive(id, source.file.stream(), source.file.size, "download", progress);
  } else {
    url = new URL(source.url, self.location.href).href;
    const cached = await store.lookup(url);
    if (cached && (source.size === undefined || source.size === cached.record.size)) {
      fromCache = true;
      received = await receive(id, cached.file.stream(), cached.record.size, "cache", progress);
    } else {
      const controller = new AbortController();
      fetchAborts.set(id, controller);
      let response: globalThis.Response;
      try {
        response = await fetch(url, { signal: controller.signal });
      } catch (e) {
        if (cancelled.has(id)) throw new EngineFailure("aborted", "aborted by the caller");
        throw new EngineFailure("network", `cannot fetch ${url}: ${(e as Error).message ?? e}`);
      }
      if (!response.ok || !response.body) {
        throw new EngineFailure("network", `cannot fetch ${url}: HTTP ${response.status} ${response.statusText}`.trim());
      }
      // A compressed body's length is not the file's.
      const encoding = response.headers.get("content-encoding");
      const length = encoding && encoding !== "identity" ? 0 : Number(response.headers.get("content-length") ?? 0);
      received = await receive(id, response.body, Number.isFinite(length) ? length : 0, "download", progress);
      fetchAborts.delete(id);
    }
  }
  const { ptr, size } = received;
  if (source.kind === "url" && source.size !== undefined && size !== source.size) {
    m.Engine.release(ptr);
    throw new EngineFailure("network", `the file has ${size} bytes, expected ${source.size}`);
  }
  progress({ phase: "verify", loaded: 0, total: size, bytesPerSecond: 0, etaSeconds: NaN });
  const sha256 = m.Engine.sha256(ptr, size);
  if (source.kind === "url" && source.sha256 && source.sha256.toLowerCase() !== sha256) {
    m.Engine.release(ptr);
    throw new EngineFailure("network", `the file's SHA-256 is ${sha256}, expected ${source.sha256}`);
  }
  checkCancelled(id);
  progress({ phase: "init", loaded: size, total: size, bytesPerSecond: 0, etaSeconds: NaN });
  const result = engine!.load(ptr, size, { threads, contextSize: contextSize ?? 0 }); // takes the buffer
  if (typeof result.error === "string") throw new EngineFailure("bad_model", result.error);
  if (source.kind === "url" && !fromCache) {
    // The engine now owns the buffer; reading it to store a copy is safe.
    const problem = await store.store(
      url,
      size,
      sha256,
      (offset, length) => heap().slice(ptr + offset, ptr + offset + length),
      (written) => progress({ phase: "store", loaded: written, total: size, bytesPerSecond: 0, etaSeconds: NaN }),
    );
    if (problem) (result.warnings as string[]).push(`the model was not saved for offline use: ${problem}`);
  }
  return { ...(result as unknown as ModelInfo), fromCache, sha256 };
}

function samplingOptions(o: SamplingOptions): object {
  // Undefined fields keep the engine's defaults.
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

async function generate(id: number, ids: Int32Array, options: SamplingOptions): Promise<object> {
  const e = engine!;
  const started = e.start(ids, samplingOptions(options));
  if (started.error) throw new EngineFailure("bad_input", started.error);
  let generated = 0;
  for (;;) {
    if (cancelled.has(id)) {
      e.cancel();
      throw new EngineFailure("aborted", "aborted by the caller");
    }
    const r = e.next();
    if (r.error) throw new EngineFailure("internal", r.error);
    if (r.done) return { ...r.stats, threads, memoryBytes: memoryBytes() };
    if (r.text) {
      generated++;
      post({ id, type: "piece", text: r.text, generated });
    }
    await yieldToEvents();
  }
}

function requireLoaded(): WasmEngine {
  if (!engine || !engine.loaded()) throw new EngineFailure("not_loaded", "no model is loaded (call load() first)");
  return engine;
}

function tokens(r: { ids?: Int32Array; error?: string }): Int32Array {
  if (r.error || !r.ids) throw new EngineFailure("bad_input", r.error ?? "tokenizing failed");
  return r.ids;
}

async function handle(req: Request): Promise<unknown> {
  if (req.op === "init") return init(req.threads);
  if (!wasm || !engine) throw new EngineFailure("internal", "the engine is not initialized");
  switch (req.op) {
    case "cancel":
      cancelled.add(req.target);
      fetchAborts.get(req.target)?.abort();
      return null;
    case "tokenize":
      return Array.from(tokens(requireLoaded().tokenize(req.text, true, req.special)));
    case "detokenize": {
      const r = requireLoaded().detokenize(req.ids, false);
      if (r.error !== undefined) throw new EngineFailure("bad_input", r.error);
      return r.text;
    }
    case "clearCache":
      await store.clear();
      return null;
    case "unload":
      if (busy !== null) throw new EngineFailure("busy", "a load or generation is running");
      engine.unload();
      return null;
    default:
      break;
  }
  // load, generate, chat: one at a time.
  if (busy !== null) {
    throw new EngineFailure("busy", req.op === "load" ? "a model is already loading or generating" : "a generation is already running");
  }
  busy = req.id;
  try {
    if (req.op === "load") return await load(req.id, req.source, req.contextSize);
    const e = requireLoaded();
    const ids =
      req.op === "chat" ? tokens(e.chatTokens(req.messages, true)) : tokens(e.tokenize(req.prompt, true, true));
    return await generate(req.id, ids, req.options);
  } finally {
    busy = null;
    cancelled.delete(req.id);
    fetchAborts.delete(req.id);
  }
}

self.onmessage = (event: MessageEvent<Request>) => {
  const req = event.data;
  handle(req).then(
    (value) => post({ id: req.id, type: "result", value }),
    (e: unknown) => {
      const error: ErrorInfo =
        e instanceof EngineFailure
          ? { code: e.code, message: e.message }
          : { code: "internal", message: e instanceof Error ? e.message : String(e) };
      post({ id: req.id, type: "error", error });
    },
  );
};
