// The engine's worker: owns the WebAssembly module and the model, and
// answers requests from engine.ts one at a time (a load or a generation at
// a time; tokenizing may interleave with a generation). Between two generated
// tokens it returns to the event loop, so a cancel request is seen within one
// token. If the WebAssembly engine aborts or traps, its state cannot be
// trusted any more: every request from then on fails with "crashed", and the
// page side terminates this worker. Where it runs (a browser's Web Worker,
// a Node.js worker thread) is its host (worker-host.ts): serveEngine(host).

import type {
  ErrorCode,
  ErrorInfo,
  InitResult,
  LoadProgress,
  EmbedResult,
  ModelInfo,
  Request,
  Response,
  SourceSpec,
  WasmAssets,
  WireLogprobs,
  WireOptions,
  WireTool,
  WireToolOutput,
} from "./protocol.js";
import { SAVE_SLICE, type SavedReader } from "./stored-model.js";
import { chooseBuild, probeRelaxedSimd } from "./wasm-features.js";
import type { WorkerHost } from "./worker-host.js";

// The parts of the Emscripten module (web/wasm/bindings.cpp) used here.
interface WasmEngine {
  load(ptr: number, size: number, options: object): Record<string, unknown>;
  loadParts(ptrs: number[], sizes: number[], options: object): Record<string, unknown>;
  unload(): void;
  loaded(): boolean;
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): { ids?: Int32Array; error?: string };
  chatTokens(messages: object[], addGenerationPrompt: boolean, tools: WireTool[]): { ids?: Int32Array; error?: string };
  detokenize(ids: number[], special: boolean): { text?: string; error?: string };
  embed(input: string | number[], normalize: boolean): { vector?: Float32Array; tokens?: number; error?: string };
  start(ids: Int32Array, options: object): { error?: string };
  next(): {
    done: boolean;
    text?: string;
    logprobs?: WireLogprobs;
    tools?: WireToolOutput;
    stats?: Record<string, unknown>;
    error?: string;
  };
  cancel(): Record<string, unknown>;
}
interface WasmModule {
  HEAPU8: Uint8Array;
  wasmMemory?: WebAssembly.Memory;
  // The threaded builds' thread workers (Emscripten's PThread).
  PThread?: { terminateAllThreads(): void };
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

let host: WorkerHost;
let baseUrl = "";
let wasm: WasmModule | null = null;
let engine: WasmEngine | null = null;
let threads = 1;
let exact = true; // results bit-identical to llama.cpp's (the build and mode init() chose)
let running: { id: number; op: "load" | "generate" } | null = null; // the load or generation under way
let crashed: string | null = null; // why the WebAssembly engine is unusable, once it is
const cancelled = new Set<number>();
const fetchAborts = new Map<number, AbortController>();

// WebAssembly addresses 32 bits: no buffer can reach 4 GiB.
const WASM_LIMIT = 2 ** 32;
const gb = (bytes: number) => `${(bytes / 1e9).toFixed(2)} GB`;

function post(message: Response): void {
  host.post(message);
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

// Thrown values that mean the WebAssembly engine itself failed (an abort, a
// trap, a C++ exception nothing caught): its memory may be inconsistent.
function isCrash(e: unknown): boolean {
  if (crashed !== null || e instanceof WebAssembly.RuntimeError) return true;
  const exception = (WebAssembly as unknown as { Exception?: abstract new () => unknown }).Exception;
  return Boolean(exception && e instanceof exception);
}

function crash(reason: string): string {
  crashed ??= reason;
  return crashed;
}

// A crash noticed outside any request: the page side fails everything.
function announceCrash(reason: string): void {
  post({ id: -1, type: "error", error: { code: "crashed", message: crash(reason) } });
}

// Memory for `bytes` of model file, or a clear error.
function allocateModel(bytes: number, growing: boolean): number {
  const ptr = bytes < WASM_LIMIT ? wasm!.Engine.allocate(bytes) : 0;
  if (ptr) return ptr;
  if (bytes >= WASM_LIMIT && !growing) {
    throw new EngineFailure("out_of_memory", `the model file is ${gb(bytes)}; WebAssembly can address at most 4.29 GB`);
  }
  throw new EngineFailure(
    "out_of_memory",
    `cannot get ${gb(bytes)} of memory for the model${growing ? " (the download keeps growing)" : ""}: ` +
      `the engine's WebAssembly memory (${gb(memoryBytes())} now) could not grow that far ` +
      `(WebAssembly allows at most 4.29 GB, the browser may allow less)`,
  );
}

async function init(req: Extract<Request, { op: "init" }>): Promise<InitResult> {
  const { threads: requested, exact: wantExact, simd } = req;
  const canThread = requested > 1 && host.canThread;
  let choice;
  try {
    choice = chooseBuild(probeRelaxedSimd(), wantExact, simd);
  } catch (e) {
    throw new EngineFailure("bad_input", (e as Error).message);
  }
  exact = choice.exact;
  const threading = canThread ? "mt" : "st";
  const build = `${threading}-${choice.simd}` as const;
  const assets: WasmAssets | undefined = req.assets?.[build];
  if (!assets) throw new EngineFailure("internal", `no files for the ${build} build`);
  baseUrl = req.baseUrl;
  // Emscripten calls onAbort before it throws (and, in the threaded build,
  // when one of its threads aborts).
  wasm = (await host.instantiate(assets, {
    onAbort: (what: unknown) => announceCrash(`the WebAssembly engine aborted: ${String(what)}`),
  })) as WasmModule;
  engine = new wasm.Engine();
  // The pthread pool is pre-spawned at its build size; ask for no more.
  threads = canThread ? Math.min(requested, 1 + 4) : 1;
  await host.store.sweepPartials().catch(() => undefined);
  return { threads, build, exact, memoryBytes: memoryBytes() };
}

// Where receive() gets bytes: each chunk is copied into the engine before
// the next is asked for, so a source may hand out one buffer again and again.
interface Chunks {
  next(): Promise<Uint8Array | null>; // null at the end
  cancel(): void;
}

// A byte stream (a fetch body, a Blob's) is read into one buffer, passed
// back and forth: the default reader's fresh chunks were left for the
// garbage collector, up to the size of the model at the download's peak.
function streamChunks(body: ReadableStream<Uint8Array>): Chunks {
  let byob: ReadableStreamBYOBReader | null = null;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // not a byte stream
  }
  if (byob) {
    const reader = byob;
    let buffer = new ArrayBuffer(1 << 20);
    return {
      next: async () => {
        const { done, value } = await reader.read(new Uint8Array(buffer));
        if (done || !value) return null;
        buffer = value.buffer as ArrayBuffer;
        return value;
      },
      cancel: () => void reader.cancel().catch(() => undefined),
    };
  }
  const reader = body.getReader();
  return {
    next: async () => {
      const { done, value } = await reader.read();
      return done ? null : value;
    },
    cancel: () => void reader.cancel().catch(() => undefined),
  };
}

// A saved copy read slice by slice into one buffer: reading it as a stream
// left ~100 MB of chunks for the garbage collector on SmolLM2, at the peak.
function savedChunks(reader: SavedReader, size: number): Chunks {
  const slice = new Uint8Array(Math.min(SAVE_SLICE, Math.max(size, 1)));
  let at = 0;
  let open = true;
  const close = () => {
    if (open) reader.close();
    open = false;
  };
  return {
    next: async () => {
      if (at >= size) {
        close();
        return null;
      }
      await yieldToEvents(); // a cancel can arrive between slices
      const n = reader.read(slice.subarray(0, Math.min(slice.length, size - at)), at);
      if (n <= 0) throw new Error(`the saved copy ends after ${at} of ${size} bytes`);
      at += n;
      return slice.subarray(0, n);
    },
    cancel: close,
  };
}

// Engine memory set aside for a download before its GET (see download());
// receive() takes it, or frees it when the size it was made for is not the
// one the GET announced. ptr 0: taken, freed or never made.
interface Reservation {
  ptr: number;
  capacity: number;
}

// Copies chunks into a fresh engine buffer. Allocates once when the size is
// known; otherwise grows by doubling (one extra copy at most per doubling).
// Whatever goes wrong, the buffer is freed and the source cancelled (which
// closes a download's connection).
async function receive(
  id: number,
  source: Chunks,
  expected: number,
  phase: LoadProgress["phase"],
  progress: (p: LoadProgress) => void,
  reserved?: Reservation,
): Promise<{ ptr: number; size: number }> {
  const m = wasm!;
  let ptr = 0;
  let size = 0;
  try {
    let capacity = expected > 0 ? expected : 64 << 20;
    if (reserved?.ptr && reserved.capacity === capacity) ptr = reserved.ptr;
    else if (reserved?.ptr) m.Engine.release(reserved.ptr);
    if (reserved) reserved.ptr = 0;
    ptr ||= allocateModel(capacity, false);
    const start = performance.now();
    let lastReport = 0;
    for (;;) {
      checkCancelled(id);
      const value = await source.next();
      if (value === null) break;
      if (size + value.length > capacity) {
        if (expected > 0) {
          throw new EngineFailure("network", `the server sent more than the ${expected} bytes it announced`);
        }
        let grown = capacity;
        while (grown < size + value.length) grown *= 2;
        const bigger = allocateModel(grown, true);
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
    if (expected > 0 && size !== expected) {
      throw new EngineFailure("network", `truncated download: received ${size} of ${expected} bytes`);
    }
    if (size === 0) throw new EngineFailure("bad_model", "the file is empty");
    return { ptr, size };
  } catch (e) {
    if (isCrash(e)) throw e;
    if (ptr) m.Engine.release(ptr);
    source.cancel();
    if (e instanceof EngineFailure) throw e;
    if (cancelled.has(id)) throw new EngineFailure("aborted", "aborted by the caller");
    throw new EngineFailure("network", `the download failed after ${size} bytes: ${(e as Error).message ?? e}`);
  }
}

type Received = { ptr: number; size: number; sha256: string };

// The saved copy of `url`, read into engine memory and checked against the
// SHA-256 recorded when it was saved. A copy that cannot be read or is
// damaged is deleted (and the caller downloads the file again).
async function fromStore(
  id: number,
  url: string,
  source: Extract<SourceSpec, { kind: "url" }>,
  progress: (p: LoadProgress) => void,
  warnings: string[],
): Promise<Received | null> {
  const cached = await host.store.lookup(url);
  if (!cached) return null;
  // A saved copy that is not the file the caller asks for: download again.
  if (source.size !== undefined && source.size !== cached.record.size) return null;
  if (source.sha256 && source.sha256.toLowerCase() !== cached.record.sha256) return null;
  let r: { ptr: number; size: number };
  try {
    const reader = await cached.open?.().catch(() => null);
    const chunks = reader ? savedChunks(reader, cached.record.size) : streamChunks(cached.file.stream());
    r = await receive(id, chunks, cached.record.size, "cache", progress);
  } catch (e) {
    if (isCrash(e) || (e instanceof EngineFailure && (e.code === "aborted" || e.code === "out_of_memory"))) throw e;
    await host.store.discard(url);
    warnings.push(`the saved copy could not be read (${(e as Error).message}); it was downloaded again`);
    return null;
  }
  progress({ phase: "verify", loaded: 0, total: r.size, bytesPerSecond: 0, etaSeconds: NaN });
  const sha256 = wasm!.Engine.sha256(r.ptr, r.size);
  if (sha256 !== cached.record.sha256) {
    wasm!.Engine.release(r.ptr);
    await host.store.discard(url);
    warnings.push("the saved copy was damaged; it was deleted and the file downloaded again");
    return null;
  }
  return { ...r, sha256 };
}

function abortSignal(id: number): AbortSignal {
  let controller = fetchAborts.get(id);
  if (!controller) {
    controller = new AbortController();
    fetchAborts.set(id, controller);
  }
  return controller.signal;
}

// The file's length a response announces, 0 when it does not say (a
// compressed body's length is not the file's).
function announcedLength(response: globalThis.Response): number {
  const encoding = response.headers.get("content-encoding");
  const length = encoding && encoding !== "identity" ? 0 : Number(response.headers.get("content-length") ?? 0);
  return Number.isFinite(length) && length > 0 ? length : 0;
}

// The size a server announces for `url` (a HEAD request), 0 when it does
// not say; null when the HEAD itself fails (the GET then reports why).
async function announcedSize(id: number, url: string): Promise<number | null> {
  let response: globalThis.Response;
  try {
    response = await fetch(url, { method: "HEAD", signal: abortSignal(id) });
  } catch {
    if (cancelled.has(id)) throw new EngineFailure("aborted", "aborted by the caller");
    return null;
  }
  if (!response.ok) return null;
  return announcedLength(response);
}

// A model too large for WebAssembly, or for the memory the engine can get,
// is refused from the size the server announces (`known`: from an earlier
// HEAD; else a HEAD now) before its GET: a GET given up on before its body
// was read stayed open now and then in Firefox ESR (its connection
// lingered, idle, after the abort; 1 in 10-20 runs of the faults suite),
// and nothing is fetched that cannot be kept. A server that does not answer
// HEAD with a length is refused as its GET's body arrives.
async function download(
  id: number,
  url: string,
  progress: (p: LoadProgress) => void,
  known?: number,
): Promise<{ ptr: number; size: number }> {
  const announced = known ?? (await announcedSize(id, url));
  const reserved: Reservation = { ptr: 0, capacity: announced ?? 0 };
  if (announced) reserved.ptr = allocateModel(announced, false);
  // This fetch's own controller, aborted with the request's and when its
  // body is given up on: cancelling the body's reader alone leaves
  // Firefox's connection sending.
  const own = new AbortController();
  const request = abortSignal(id);
  const abort = () => own.abort();
  if (request.aborted) abort();
  request.addEventListener("abort", abort, { once: true });
  try {
    return await fetchBody(id, url, own, progress, reserved);
  } catch (e) {
    own.abort();
    throw e;
  } finally {
    if (reserved.ptr) wasm!.Engine.release(reserved.ptr);
    request.removeEventListener("abort", abort);
  }
}

async function fetchBody(
  id: number,
  url: string,
  own: AbortController,
  progress: (p: LoadProgress) => void,
  reserved: Reservation,
): Promise<{ ptr: number; size: number }> {
  let response: globalThis.Response;
  try {
    response = await fetch(url, { signal: own.signal });
  } catch (e) {
    if (cancelled.has(id)) throw new EngineFailure("aborted", "aborted by the caller");
    throw new EngineFailure("network", `cannot fetch ${url}: ${(e as Error).message ?? e}`);
  }
  if (!response.ok || !response.body) {
    response.body?.cancel().catch(() => undefined);
    throw new EngineFailure("network", `cannot fetch ${url}: HTTP ${response.status} ${response.statusText}`.trim());
  }
  // Given up on, the fetch is aborted before its reader is cancelled: the
  // other way round, Firefox ESR kept a refused download's connection open
  // until it quit in 2 of 20 runs of the faults test (this way, rarely:
  // see download()).
  const body = streamChunks(response.body);
  const chunks: Chunks = {
    next: body.next,
    cancel: () => {
      own.abort();
      body.cancel();
    },
  };
  return receive(id, chunks, announcedLength(response), "download", progress, reserved);
}

// What a failed engine.load() means for the caller.
function loadFailure(message: string, contextSize: number | undefined): EngineFailure {
  if (/bad_alloc|bad_array_new_length|MiB of KV cache|not enough memory/.test(message)) {
    return new EngineFailure(
      "out_of_memory",
      `not enough memory to start the model (${message})${contextSize ? "; try a smaller contextSize" : ""}`,
    );
  }
  if (/^bad option|^context \d+ exceeds|^the chat template given /.test(message)) return new EngineFailure("bad_input", message);
  return new EngineFailure("bad_model", message);
}

// The URLs of every part when `url` names the first part of a split model
// ("<name>-00001-of-00003.gguf", llama.cpp's gguf-split naming), else null.
function splitUrls(url: string): string[] | null {
  const u = new URL(url);
  const m = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/.exec(u.pathname);
  if (!m) return null;
  const [index, count] = [Number(m[2]), Number(m[3])];
  if (count < 2) return null;
  if (index !== 1) {
    const first = new URL(u.href);
    first.pathname = `${m[1]}-00001-of-${m[3]}.gguf`;
    throw new EngineFailure("bad_input", `${url} is part ${index} of ${count} of a split model: load its first part, ${first.href}`);
  }
  return Array.from({ length: count }, (_, i) => {
    const part = new URL(u.href);
    part.pathname = `${m[1]}-${String(i + 1).padStart(5, "0")}-of-${m[3]}.gguf`;
    return part.href;
  });
}

// The picked files of a split model in part order, by their names; files
// not named as parts keep the order they were picked in (the engine checks
// each part's split.no).
function orderParts(files: { file: Blob; name?: string }[]): { file: Blob; name?: string }[] {
  const parsed = files.map((f) => ({ f, m: /-(\d{5})-of-(\d{5})\.gguf$/.exec(f.name ?? "") }));
  if (!parsed.every((p) => p.m)) return files;
  const count = Number(parsed[0].m![2]);
  const byIndex = new Map(parsed.map((p) => [Number(p.m![1]), p.f]));
  const missing = Array.from({ length: count }, (_, i) => i + 1).filter((i) => !byIndex.has(i));
  if (missing.length > 0 || files.length !== count || parsed.some((p) => Number(p.m![2]) !== count)) {
    throw new EngineFailure(
      "bad_input",
      `the picked files are not the ${count} parts of one split model` +
        (missing.length > 0 ? `: part ${missing.join(", ")} of ${count} is missing` : ""),
    );
  }
  return Array.from({ length: count }, (_, i) => byIndex.get(i + 1)!);
}

// Refuses a model WebAssembly cannot hold, before any of it is downloaded.
function checkTotalSize(sizes: number[]): void {
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total < WASM_LIMIT) return;
  const parts = sizes.length > 1 ? ` in ${sizes.length} parts (${sizes.map(gb).join(" + ")})` : "";
  throw new EngineFailure("out_of_memory", `the model is ${gb(total)}${parts}; WebAssembly can address at most 4.29 GB`);
}

// Each part's size from a HEAD request (0 when the server does not say);
// a part the server does not have fails here, naming it.
async function partSizes(id: number, urls: string[]): Promise<number[]> {
  return Promise.all(
    urls.map(async (url, i) => {
      let response: globalThis.Response;
      try {
        response = await fetch(url, { method: "HEAD", signal: abortSignal(id) });
      } catch (e) {
        if (cancelled.has(id)) throw new EngineFailure("aborted", "aborted by the caller");
        throw new EngineFailure("network", `cannot fetch part ${i + 1} of ${urls.length}, ${url}: ${(e as Error).message ?? e}`);
      }
      if (!response.ok) {
        throw new EngineFailure(
          "network",
          `part ${i + 1} of ${urls.length} of the split model is missing: HTTP ${response.status} for ${url}`,
        );
      }
      return announcedLength(response);
    }),
  );
}

type Part = Received & { fromCache: boolean; url?: string };

// One file from the saved copy or the network, verified; `known`: its size
// where the caller already asked the server (a split model's parts).
async function fromUrl(
  id: number,
  url: string,
  source: Extract<SourceSpec, { kind: "url" }>,
  progress: (p: LoadProgress) => void,
  warnings: string[],
  known?: number,
): Promise<Part> {
  const saved = await fromStore(id, url, source, progress, warnings);
  if (saved) return { ...saved, fromCache: true, url };
  const { ptr, size } = await download(id, url, progress, known);
  if (source.size !== undefined && size !== source.size) {
    wasm!.Engine.release(ptr);
    throw new EngineFailure("network", `the file has ${size} bytes, expected ${source.size}`);
  }
  progress({ phase: "verify", loaded: 0, total: size, bytesPerSecond: 0, etaSeconds: NaN });
  const sha256 = wasm!.Engine.sha256(ptr, size);
  if (source.sha256 && source.sha256.toLowerCase() !== sha256) {
    wasm!.Engine.release(ptr);
    throw new EngineFailure("network", `the file's SHA-256 is ${sha256}, expected ${source.sha256}`);
  }
  return { ptr, size, sha256, fromCache: false, url };
}

async function fromBlob(id: number, file: Blob, progress: (p: LoadProgress) => void): Promise<Part> {
  const { ptr, size } = await receive(id, streamChunks(file.stream()), file.size, "download", progress);
  progress({ phase: "verify", loaded: 0, total: size, bytesPerSecond: 0, etaSeconds: NaN });
  return { ptr, size, sha256: wasm!.Engine.sha256(ptr, size), fromCache: false };
}

// Progress over several files: bytes of the files before this one count as loaded.
function partProgress(progress: (p: LoadProgress) => void, before: number, total: number) {
  return (p: LoadProgress) =>
    progress({ ...p, loaded: before + p.loaded, total: total > 0 ? total : p.total > 0 ? before + p.total : 0 });
}

// A local file (Node.js), or a clear error where it cannot be opened.
async function openPath(path: string): Promise<Blob> {
  if (!host.openPath) throw new EngineFailure("bad_input", "a model path needs Node.js; in a browser, load a URL or a File");
  try {
    return await host.openPath(path);
  } catch (e) {
    throw new EngineFailure("bad_input", `cannot open the model file ${path}: ${(e as Error).message ?? e}`);
  }
}

// Every file of the model, in order, in engine memory.
async function obtainParts(id: number, source: SourceSpec, progress: (p: LoadProgress) => void, warnings: string[]) {
  const parts: Part[] = [];
  try {
    if (source.kind === "file") {
      parts.push(await fromBlob(id, source.file, progress));
      return parts;
    }
    if (source.kind === "path") {
      parts.push(await fromBlob(id, await openPath(source.path), progress));
      return parts;
    }
    if (source.kind === "files") {
      if (source.files.length === 0) throw new EngineFailure("bad_input", "no files given");
      const files = orderParts(source.files);
      const sizes = files.map((f) => f.file.size);
      checkTotalSize(sizes);
      const total = sizes.reduce((a, b) => a + b, 0);
      for (let i = 0, before = 0; i < files.length; before += sizes[i], i++) {
        parts.push(await fromBlob(id, files[i].file, partProgress(progress, before, total)));
      }
      return parts;
    }
    const url = new URL(source.url, baseUrl || undefined).href;
    const urls = splitUrls(url);
    if (!urls) {
      parts.push(await fromUrl(id, url, source, progress, warnings));
      return parts;
    }
    if (source.size !== undefined || source.sha256 !== undefined) {
      throw new EngineFailure("bad_input", "size and sha256 describe one file; a split model's URL takes neither");
    }
    // Saved parts know their sizes (and a saved model loads offline); else ask the server.
    const saved = await Promise.all(urls.map((u) => host.store.lookup(u).catch(() => null)));
    const sizes = saved.every((c) => c !== null) ? saved.map((c) => c!.record.size) : await partSizes(id, urls);
    checkTotalSize(sizes);
    const total = sizes.every((n) => n > 0) ? sizes.reduce((a, b) => a + b, 0) : 0;
    let before = 0;
    for (const partUrl of urls) {
      const known = sizes[parts.length] || undefined; // from the HEADs above or the saved records
      const part = await fromUrl(id, partUrl, { kind: "url", url: partUrl }, partProgress(progress, before, total), warnings, known);
      parts.push(part);
      before += part.size;
      checkTotalSize(parts.map((p) => p.size)); // a server that did not say the sizes
    }
    return parts;
  } catch (e) {
    if (!isCrash(e)) for (const p of parts) wasm!.Engine.release(p.ptr);
    throw e;
  }
}

async function load(
  id: number,
  source: SourceSpec,
  contextSize: number | undefined,
  flashAttention: "auto" | "on" | "off" | undefined,
  chatTemplate: string | undefined,
): Promise<ModelInfo> {
  const m = wasm!;
  engine!.unload(); // a failed load leaves no model loaded
  const progress = (p: LoadProgress) => post({ id, type: "progress", progress: p });
  const warnings: string[] = [];
  const parts = await obtainParts(id, source, progress, warnings);
  if (cancelled.has(id)) {
    for (const p of parts) m.Engine.release(p.ptr);
    throw new EngineFailure("aborted", "aborted by the caller");
  }
  const size = parts.reduce((a, p) => a + p.size, 0);
  progress({ phase: "init", loaded: size, total: size, bytesPerSecond: 0, etaSeconds: NaN });
  const options = { threads, contextSize: contextSize ?? 0, exact, flashAttention: flashAttention ?? "auto", chatTemplate };
  // The engine takes the buffers, also when it fails.
  const result =
    parts.length === 1
      ? engine!.load(parts[0].ptr, parts[0].size, options)
      : engine!.loadParts(parts.map((p) => p.ptr), parts.map((p) => p.size), options);
  if (typeof result.error === "string") throw loadFailure(result.error, contextSize);
  const info = result as unknown as ModelInfo;
  info.warnings = [...(info.warnings ?? []), ...warnings];
  for (const [i, part] of parts.entries()) {
    if (part.url === undefined || part.fromCache) continue;
    // The engine now owns the buffer; reading it to store a copy is safe.
    // One slice buffer for the whole file: a new copy per slice left up to
    // the file's size of garbage behind.
    const { ptr, size: partSize } = part;
    const slice = new Uint8Array(Math.min(SAVE_SLICE, partSize));
    const problem = await host.store.store(
      part.url,
      partSize,
      part.sha256,
      (offset, length) => {
        const view = slice.subarray(0, length);
        view.set(heap().subarray(ptr + offset, ptr + offset + length));
        return view;
      },
      (written) => progress({ phase: "store", loaded: written, total: partSize, bytesPerSecond: 0, etaSeconds: NaN }),
    );
    if (problem) {
      const which = parts.length > 1 ? `part ${i + 1} of the model` : "the model";
      info.warnings.push(`${which} was not saved for offline use: ${problem}`);
    }
  }
  return {
    ...info,
    fromCache: parts.every((p) => p.fromCache),
    sha256: parts[0].sha256,
    partSha256: parts.map((p) => p.sha256),
  };
}

function samplingOptions(o: WireOptions): object {
  // Undefined fields keep the engine's defaults.
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

async function generate(id: number, ids: Int32Array, options: WireOptions): Promise<object> {
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
    // A token whose text is held back still brings its log-probabilities.
    if (r.text || r.logprobs) {
      generated++;
      post({ id, type: "piece", text: r.text ?? "", generated, logprobs: r.logprobs, tools: r.tools });
    }
    await yieldToEvents();
  }
}

// Each input in turn, the queue given a turn between them (a cancel).
async function embed(id: number, inputs: (string | number[])[], normalize: boolean): Promise<EmbedResult> {
  const e = requireLoaded();
  const out: EmbedResult = { vectors: [], promptTokens: 0 };
  for (const [i, input] of inputs.entries()) {
    checkCancelled(id);
    const r = e.embed(input, normalize);
    if (r.error !== undefined || !r.vector) {
      const where = inputs.length > 1 ? `input[${i}]: ` : "";
      throw new EngineFailure("bad_input", where + (r.error ?? "no embedding"));
    }
    out.vectors.push(r.vector);
    out.promptTokens += r.tokens ?? 0;
    await yieldToEvents();
  }
  return out;
}

function requireLoaded(): WasmEngine {
  if (!engine || !engine.loaded()) throw new EngineFailure("not_loaded", "no model is loaded (call load() first)");
  return engine;
}

function tokens(r: { ids?: Int32Array; error?: string }): Int32Array {
  if (r.error || !r.ids) throw new EngineFailure("bad_input", r.error ?? "tokenizing failed");
  return r.ids;
}

// Why `op` cannot run now.
function busyError(op: Request["op"]): EngineFailure {
  const loading = running?.op === "load";
  const wants = op === "load" ? "load" : op === "generate" || op === "chat" ? "generate" : "other";
  let message: string;
  if (loading) {
    message =
      wants === "load"
        ? "a model is already loading (wait for load() to settle, or abort it with its signal)"
        : "a model is loading (wait for load() to finish)";
  } else {
    message =
      wants === "generate"
        ? "a generation is already running (wait for it to end, or stop it with its signal)"
        : "a generation is running (stop it first)";
  }
  return new EngineFailure("busy", message);
}

async function handle(req: Request): Promise<unknown> {
  if (req.op === "init") return init(req);
  if (req.op === "dispose") {
    // The engine's last request (terminate()): the session and its thread
    // pool end now (each thread returns), then the threads' workers, and the
    // page ends this worker on the answer. A thread worker blocked in its
    // pool's wait does not answer Chromium's terminate: it is killed 2 s
    // later, and until then it keeps the shared memory (model, KV cache)
    // alive, which an engine made right after then held a second time.
    // (Chromium 156 frees that memory at the page's next garbage collection
    // after the workers end, not at once: measured, bench/browser.mjs.)
    if (running) cancelled.add(running.id);
    engine?.unload();
    wasm?.PThread?.terminateAllThreads();
    return null;
  }
  if (req.op === "cancel") {
    // Only the running load or generation can be cancelled: the others are over.
    if (running?.id === req.target) {
      cancelled.add(req.target);
      fetchAborts.get(req.target)?.abort();
    }
    return null;
  }
  if (crashed !== null) throw new EngineFailure("crashed", crashed);
  if (!wasm || !engine) throw new EngineFailure("internal", "the engine is not initialized");
  switch (req.op) {
    case "tokenize":
      if (running?.op === "load") throw busyError(req.op);
      return Array.from(tokens(requireLoaded().tokenize(req.text, true, req.special)));
    case "detokenize": {
      if (running?.op === "load") throw busyError(req.op);
      const r = requireLoaded().detokenize(req.ids, false);
      if (r.error !== undefined) throw new EngineFailure("bad_input", r.error);
      return r.text;
    }
    case "clearCache":
      await host.store.clear();
      return null;
    case "unload":
      if (running) throw busyError(req.op);
      engine.unload();
      return null;
    default:
      break;
  }
  // load, generate, chat: one at a time.
  if (running) throw busyError(req.op);
  running = { id: req.id, op: req.op === "load" ? "load" : "generate" };
  try {
    if (req.op === "load") return await load(req.id, req.source, req.contextSize, req.flashAttention, req.chatTemplate);
    if (req.op === "embed") return await embed(req.id, req.inputs, req.normalize);
    const e = requireLoaded();
    const ids =
      req.op === "chat"
        ? tokens(e.chatTokens(req.messages, true, req.options.tools?.tools ?? []))
        : tokens(e.tokenize(req.prompt, true, true));
    return await generate(req.id, ids, req.options);
  } finally {
    running = null;
    cancelled.delete(req.id);
    fetchAborts.delete(req.id);
  }
}

function errorInfo(e: unknown): ErrorInfo {
  if (e instanceof EngineFailure) return { code: e.code, message: e.message };
  const text = e instanceof Error ? e.message : String(e);
  if (isCrash(e)) return { code: "crashed", message: crash(`the WebAssembly engine crashed: ${text}`) };
  return { code: "internal", message: text };
}

/** Answers the requests `h` brings, until the worker is terminated. */
export function serveEngine(h: WorkerHost): void {
  host = h;
  host.listen((req) => {
    handle(req).then(
      (value) => {
        try {
          post({ id: req.id, type: "result", value });
        } catch (e) {
          post({ id: req.id, type: "error", error: { code: "internal", message: `the result could not be sent: ${errorInfo(e).message}` } });
        }
      },
      (e: unknown) => post({ id: req.id, type: "error", error: errorInfo(e) }),
    );
  });
  // A promise nobody handled means some request may never be answered.
  host.onUnhandledRejection((reason) => announceCrash(`the engine's worker failed: ${errorInfo(reason).message}`));
}
