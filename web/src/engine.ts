// The engine's typed front, the same in a browser (smolinfer.ts) and in
// Node.js (node.ts): it sends requests to the engine's worker (worker-core.ts)
// and turns the answers into promises and streams.
//
//   import { createEngine } from "smolinfer";
//   const engine = await createEngine();
//   await engine.load("/models/SmolLM2-135M-Instruct.Q4_1.gguf", { onProgress: (p) => console.log(p) });
//   for await (const piece of engine.chat([{ role: "user", content: "Hi!" }], { temperature: 0 })) {
//     output.textContent += piece;
//   }
//
// The same engine in OpenAI's shape (openai-types.ts):
//   const answer = await engine.chat.completions.create({ messages: [{ role: "user", content: "Hi!" }] });
//   for await (const chunk of await engine.chat.completions.create({ messages, stream: true })) { ... }
//
// Every method rejects with an EngineError whose `code` says what went
// wrong: not_loaded, busy, aborted, bad_model, network, out_of_memory,
// bad_input, crashed (the worker died: create a new engine), internal.

import { EngineError } from "./errors.js";
import { type Backend, type RunEvent, createChatCompletion, createCompletion } from "./openai.js";
import type { Input } from "./openai-request.js";
import { type EmbeddingBackend, createEmbeddings } from "./openai-embeddings.js";
import type { ChatCompletions, Completions, Embeddings } from "./openai-types.js";
import { checkOptions } from "./options.js";
import type {
  EmbedResult,
  BuildName,
  ChatMessage,
  EngineStats,
  InitResult,
  LoadProgress,
  ModelInfo,
  Request,
  Response,
  SamplingOptions,
  SourceSpec,
  WasmAssets,
  WireLogprobs,
  WireOptions,
  WireToolOutput,
} from "./protocol.js";

export { EngineError } from "./errors.js";
export type { BuildName, ChatMessage, EngineStats, ErrorCode, LoadProgress, ModelInfo, SamplingOptions } from "./protocol.js";
export type * from "./openai-types.js";

/**
 * A model: a URL (with an optional known size and SHA-256), a local file, or
 * the local files of a split model (all its parts, in any order), or the
 * file's bytes. A split model (llama.cpp's gguf-split,
 * "<name>-00001-of-00003.gguf", ...) loads from its first part's URL: the
 * other parts are fetched from beside it. In Node.js a string that is not
 * an http(s): or file: URL is a path.
 */
export type ModelSource =
  | string
  | { url: string; size?: number; sha256?: string; name?: string }
  | Blob
  | Blob[]
  | ArrayBuffer
  | Uint8Array;

export interface LoadOptions {
  onProgress?: (progress: LoadProgress) => void;
  signal?: AbortSignal;
  /** KV cache positions; default (or 0) min(4096, the model's training context). */
  contextSize?: number;
  /**
   * Attention as llama.cpp computes it with flash attention "on", "off", or
   * "auto" (the default, as llama.cpp's: on for the CPU). The two differ in
   * the last bits, enough to change a greedy answer now and then; each is
   * exact against llama.cpp run the same way. ModelInfo.flashAttention says
   * which runs.
   */
  flashAttention?: FlashAttention;
  /**
   * A Jinja chat template used instead of the file's (as llama-server's
   * --chat-template-file), e.g. one that describes tools to the model.
   * One smolinfer's Jinja interpreter cannot parse rejects the load with a
   * `bad_input` error that says why.
   */
  chatTemplate?: string;
}

export type FlashAttention = "auto" | "on" | "off";

export interface GenerateOptions extends SamplingOptions {
  signal?: AbortSignal;
}

export interface CreateEngineOptions {
  /**
   * Threads to use; in a browser more than one needs a cross-origin
   * isolated page. Default: the hardware's, up to 4 (the most the threaded
   * build starts).
   */
  threads?: number;
  /**
   * Insist on results bit-identical to llama.cpp's. Where the browser has
   * relaxed SIMD with a fused multiply-add (Chromium and Firefox on every
   * x86 CPU with FMA and every ARM64) that is what runs anyway, at full
   * speed. Elsewhere (Safari, old CPUs) the default is a fast path that
   * multiplies, then adds, as other engines do: the same answers but for
   * rare near-ties, several times faster than the exact emulation this
   * option turns on. Engine.exact says which runs.
   */
  exact?: boolean;
  /** Force the plain SIMD128 or the relaxed-SIMD build (for tests and benchmarks); default: the best. */
  simd?: "relaxed" | "simd128";
}

type Pending = {
  resolve: (value: unknown) => void;
  reject: (error: EngineError) => void;
  onProgress?: (p: LoadProgress) => void;
  onPiece?: (text: string, generated: number, logprobs?: WireLogprobs, tools?: WireToolOutput) => void;
};

/** chat(messages, options), which also carries chat.completions.create (OpenAI's shape). */
export type ChatFunction = ((messages: ChatMessage[], options?: GenerateOptions) => AsyncIterable<string>) & {
  readonly completions: ChatCompletions;
};

// A request sent to the worker: its id, and its outcome.
type Sent = { id: number; done: Promise<unknown> };

/**
 * The engine's worker as engine.ts talks to it: a browser's Web Worker or
 * a Node.js worker thread.
 */
export interface WorkerPort {
  postMessage(request: Request): void;
  /**
   * Ends the worker. `graceful`: let it end its own threads first (a
   * dispose request), then end it; else at once (it crashed or hangs).
   */
  terminate(graceful: boolean): void;
  /**
   * Messages go to `message`; a failure of the worker itself (an uncaught
   * error, a message that cannot be read) to `failed`, said in a few words.
   */
  connect(message: (response: Response) => void, failed: (reason: string) => void): void;
  /** Called with whether requests are pending (a Node.js worker thread with none lets the process exit). */
  busy?(pending: boolean): void;
}

/** What createEngine() in a browser or in Node.js hands the shared start. */
export interface EngineSetup {
  port: WorkerPort;
  /** Threads when the caller gives none. */
  defaultThreads: number;
  assets: Record<BuildName, WasmAssets>;
  /** What a relative model URL is relative to. */
  baseUrl: string;
  /** A string source that is a local path (Node.js), else undefined. */
  path?: (source: string) => string | undefined;
}

function sourceSpec(source: ModelSource, path?: (source: string) => string | undefined): SourceSpec {
  if (typeof source === "string") {
    if (!source) throw new EngineError("bad_input", "the model URL is empty");
    const file = path?.(source);
    return file !== undefined ? { kind: "path", path: file } : { kind: "url", url: source };
  }
  if (source instanceof ArrayBuffer || source instanceof Uint8Array) {
    if (source.byteLength === 0) throw new EngineError("bad_input", "the model bytes are empty");
    return { kind: "file", file: new Blob([source as Uint8Array<ArrayBuffer>]) };
  }
  if (source instanceof Blob) return { kind: "file", file: source, name: source instanceof File ? source.name : undefined };
  if (Array.isArray(source)) {
    if (source.length === 0 || !source.every((f) => f instanceof Blob)) {
      throw new EngineError("bad_input", "a list of model files must hold at least one File");
    }
    if (source.length === 1) return sourceSpec(source[0]);
    return { kind: "files", files: source.map((f) => ({ file: f, name: f instanceof File ? f.name : undefined })) };
  }
  if (source && typeof source.url === "string" && source.url) {
    if (source.size !== undefined && !(Number.isInteger(source.size) && source.size > 0)) {
      throw new EngineError("bad_input", "size must be a positive integer");
    }
    if (source.sha256 !== undefined && !/^[0-9a-fA-F]{64}$/.test(source.sha256)) {
      throw new EngineError("bad_input", "sha256 must be 64 hexadecimal digits");
    }
    return { kind: "url", url: source.url, size: source.size, sha256: source.sha256, name: source.name };
  }
  throw new EngineError(
    "bad_input",
    "a model source is a URL, { url, size?, sha256? }, a File (or the Files of a split model), bytes, or in Node.js a path",
  );
}

export class Engine {
  private readonly worker: WorkerPort;
  private readonly pending = new Map<number, Pending>();
  private readonly path?: (source: string) => string | undefined;
  private nextId = 1;
  private last: EngineStats;
  private loadedInfo: ModelInfo | null = null;
  private failure: EngineError | null = null; // set once the engine cannot be used any more

  /** @internal use createEngine() */
  constructor(setup: EngineSetup, init: InitResult) {
    this.worker = setup.port;
    this.path = setup.path;
    this.last = {
      promptTokens: 0,
      reusedTokens: 0,
      generatedTokens: 0,
      prefillTps: 0,
      decodeTps: 0,
      stop: "",
      threads: init.threads,
      memoryBytes: init.memoryBytes,
      build: init.build,
      exact: init.exact,
    };
    this.build = init.build;
    this.exact = init.exact;
    const backend: Backend = {
      run: (input, options, signal) => this.events(this.make(input, options), signal),
      modelName: () => this.loadedInfo?.name || "smolinfer",
      contextSize: () => this.loadedInfo?.contextSize ?? 0,
    };
    const chat = (messages: ChatMessage[], options: GenerateOptions = {}) => this.chatStream(messages, options);
    this.chat = Object.assign(chat, {
      completions: { create: (request: unknown, options?: { signal?: AbortSignal }) => createChatCompletion(backend, request, options) } as ChatCompletions,
    });
    this.completions = {
      create: (request: unknown, options?: { signal?: AbortSignal }) => createCompletion(backend, request, options),
    } as Completions;
    const embedder: EmbeddingBackend = {
      embed: async (inputs, signal) =>
        (await this.request((id) => ({ id, op: "embed", inputs, normalize: true }), signal).done) as EmbedResult,
      model: () => (this.loadedInfo ? { name: this.loadedInfo.name || "smolinfer", embeddingSize: this.loadedInfo.embeddingSize } : null),
    };
    this.embeddings = {
      create: (request, options) => createEmbeddings(embedder, request, { signal: options?.signal ?? request?.signal }),
    };
    // A failure of the worker itself: a request may never be answered.
    this.worker.connect(
      (response) => this.receive(response),
      (reason) => this.crash(`the engine's worker failed: ${reason}`),
    );
  }

  /**
   * Which WebAssembly build runs: "mt-" (threads) or "st-" (one thread),
   * then "relaxed" (relaxed SIMD) or "simd128" (plain SIMD128).
   */
  readonly build: BuildName;

  /** Whether results are bit-identical to llama.cpp's (see CreateEngineOptions.exact). */
  readonly exact: boolean;

  /**
   * False once the engine cannot be used any more: its worker crashed (every
   * call then rejects with code "crashed"; create a new engine) or
   * terminate() was called.
   */
  get alive(): boolean {
    return this.failure === null;
  }

  /** The loaded model, or null. */
  get model(): ModelInfo | null {
    return this.loadedInfo;
  }

  /** Numbers of the last generation (and threads, memory now). */
  stats(): EngineStats {
    return { ...this.last };
  }

  /**
   * Loads a model, replacing the one loaded: a load that fails (or is
   * aborted) leaves no model loaded, except when it is refused as busy.
   */
  async load(source: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    const spec = sourceSpec(source, this.path);
    const contextSize = options.contextSize;
    if (contextSize !== undefined && !(Number.isInteger(contextSize) && contextSize >= 0 && contextSize < 2 ** 31)) {
      throw new EngineError("bad_input", "contextSize must be an integer >= 0 (0: the default)");
    }
    const flashAttention = options.flashAttention;
    if (flashAttention !== undefined && !["auto", "on", "off"].includes(flashAttention)) {
      throw new EngineError("bad_input", `flashAttention must be "auto", "on" or "off" (got ${JSON.stringify(flashAttention)})`);
    }
    const chatTemplate = options.chatTemplate;
    if (chatTemplate !== undefined && typeof chatTemplate !== "string") throw new EngineError("bad_input", "chatTemplate must be a string");
    // Refused before it reaches the worker: the loaded model stays.
    if (options.signal?.aborted) throw new EngineError("aborted", "aborted by the caller");
    if (this.failure) throw new EngineError(this.failure.code, this.failure.message);
    try {
      const info = (await this.request(
        (id) => ({ id, op: "load", source: spec, contextSize, flashAttention, chatTemplate }),
        options.signal,
        { onProgress: options.onProgress },
      ).done) as ModelInfo;
      this.loadedInfo = info;
      return info;
    } catch (e) {
      if (!(e instanceof EngineError && e.code === "busy")) this.loadedInfo = null;
      throw e;
    }
  }

  /**
   * Answers a conversation in the model's chat format (earlier turns are not
   * evaluated again), as a stream of text pieces. Also
   * `chat.completions.create(request)`: OpenAI's chat completions.
   */
  readonly chat: ChatFunction;

  /** OpenAI's (legacy) completions: `completions.create({ prompt, ... })`. */
  readonly completions: Completions;

  /**
   * OpenAI's embeddings: `embeddings.create({ input })`, each input's
   * vector as llama.cpp computes it, L2-normalised (ModelInfo.pooling and
   * embeddingSize say what the model gives).
   */
  readonly embeddings: Embeddings;

  /** Continues a raw text prompt (special-token texts are parsed). */
  generate(prompt: string, options: GenerateOptions = {}): AsyncIterable<string> {
    if (typeof prompt !== "string") throw new EngineError("bad_input", "the prompt must be a string");
    const sampling = checkOptions("", options);
    return this.stream(this.make({ kind: "prompt", prompt }, sampling), options.signal);
  }

  private make(input: Input, options: WireOptions): (id: number) => Request {
    return input.kind === "chat"
      ? (id) => ({ id, op: "chat", messages: input.messages, options })
      : (id) => ({ id, op: "generate", prompt: input.prompt, options });
  }

  private chatStream(messages: ChatMessage[], options: GenerateOptions): AsyncIterable<string> {
    if (!Array.isArray(messages) || messages.length === 0) throw new EngineError("bad_input", "messages must be a non-empty array");
    for (const m of messages) {
      if (!m || !["system", "user", "assistant"].includes(m.role) || typeof m.content !== "string") {
        throw new EngineError("bad_input", "each message needs role system|user|assistant and string content");
      }
    }
    const sampling = checkOptions("", options);
    const copy = messages.map((m) => ({ role: m.role, content: m.content }));
    return this.stream(this.make({ kind: "chat", messages: copy }, sampling), options.signal);
  }

  async tokenize(text: string, options: { special?: boolean } = {}): Promise<number[]> {
    if (typeof text !== "string") throw new EngineError("bad_input", "text must be a string");
    return (await this.request((id) => ({ id, op: "tokenize", text, special: options.special ?? true })).done) as number[];
  }

  async detokenize(ids: number[]): Promise<string> {
    if (!Array.isArray(ids) || !ids.every((x) => Number.isInteger(x))) throw new EngineError("bad_input", "ids must be integers");
    return (await this.request((id) => ({ id, op: "detokenize", ids })).done) as string;
  }

  async unload(): Promise<void> {
    await this.request((id) => ({ id, op: "unload" })).done;
    this.loadedInfo = null;
  }

  /** Removes every model saved for offline use. */
  async clearCache(): Promise<void> {
    await this.request((id) => ({ id, op: "clearCache" })).done;
  }

  /** Stops the worker; the engine cannot be used afterwards. */
  terminate(): void {
    this.stop(new EngineError("aborted", "the engine was terminated"), true);
  }

  private stop(failure: EngineError, graceful = false): void {
    if (this.failure) return;
    this.failure = failure;
    this.loadedInfo = null;
    this.worker.terminate(graceful);
    this.failAll(failure);
  }

  private crash(reason: string): void {
    this.stop(new EngineError("crashed", `${reason}; this engine cannot be used any more (create a new one)`));
  }

  private receive(msg: Response): void {
    if (msg.type === "error" && msg.error.code === "crashed") {
      this.crash(msg.error.message);
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    switch (msg.type) {
      case "progress":
        p.onProgress?.(msg.progress);
        return;
      case "piece":
        p.onPiece?.(msg.text, msg.generated, msg.logprobs, msg.tools);
        return;
      case "result":
        this.settle(msg.id);
        p.resolve(msg.value);
        return;
      case "error":
        this.settle(msg.id);
        p.reject(new EngineError(msg.error.code, msg.error.message));
        return;
    }
  }

  private settle(id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker.busy?.(false);
  }

  private failAll(error: EngineError): void {
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
    this.worker.busy?.(false);
  }

  private cancel(target: number): void {
    if (!this.failure) this.worker.postMessage({ id: this.nextId++, op: "cancel", target } satisfies Request);
  }

  private request(
    make: (id: number) => Request,
    signal?: AbortSignal,
    hooks: Pick<Pending, "onProgress" | "onPiece"> = {},
  ): Sent {
    const id = this.nextId++;
    if (this.failure) return { id, done: Promise.reject(new EngineError(this.failure.code, this.failure.message)) };
    if (signal?.aborted) return { id, done: Promise.reject(new EngineError("aborted", "aborted by the caller")) };
    const done = new Promise((resolve, reject) => {
      const onAbort = () => this.cancel(id);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, {
        resolve: (v) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(v);
        },
        reject: (e) => {
          signal?.removeEventListener("abort", onAbort);
          reject(e);
        },
        ...hooks,
      });
      if (this.pending.size === 1) this.worker.busy?.(true);
      this.worker.postMessage(make(id));
    });
    return { id, done };
  }

  // The pieces' text (empty ones left out).
  private stream(make: (id: number) => Request, signal?: AbortSignal): AsyncIterable<string> {
    const events = this.events(make, signal);
    return {
      [Symbol.asyncIterator]: () => {
        const it = events[Symbol.asyncIterator]();
        return {
          next: async (): Promise<IteratorResult<string>> => {
            for (;;) {
              const r = await it.next();
              if (r.done || r.value.type === "done") return { value: undefined, done: true };
              if (r.value.text) return { value: r.value.text, done: false };
            }
          },
          return: async (): Promise<IteratorResult<string>> => {
            await it.return?.();
            return { value: undefined, done: true };
          },
        };
      },
    };
  }

  // Pieces, then the statistics, as an async iterator; the request's
  // completion ends it. Leaving the loop early (break, return, throw) stops
  // the generation, and resolves once the engine is free for the next one.
  private events(make: (id: number) => Request, signal?: AbortSignal): AsyncIterable<RunEvent> {
    const queue: RunEvent[] = [];
    let wake: (() => void) | null = null;
    let finished = false;
    let failure: EngineError | null = null;
    const sent = this.request(make, signal, {
      onPiece: (text, generated, logprobs, tools) => {
        this.last.generatedTokens = generated;
        queue.push({ type: "piece", text, logprobs, tools });
        wake?.();
      },
    });
    const settled = sent.done.then(
      (stats) => {
        Object.assign(this.last, stats as EngineStats);
        queue.push({ type: "done", stats: stats as EngineStats });
        finished = true;
        wake?.();
      },
      (e: EngineError) => {
        failure = e;
        finished = true;
        wake?.();
      },
    );
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<RunEvent>> => {
          for (;;) {
            if (queue.length) return { value: queue.shift()!, done: false };
            if (failure) throw failure;
            if (finished) return { value: undefined, done: true };
            await new Promise<void>((r) => (wake = r));
            wake = null;
          }
        },
        return: async (): Promise<IteratorResult<RunEvent>> => {
          if (!finished) this.cancel(sent.id);
          await settled;
          queue.length = 0;
          return { value: undefined, done: true };
        },
      }),
    };
  }
}


/** Checks the options, starts the worker's engine and waits for it. */
export async function startEngine(setup: EngineSetup, options: CreateEngineOptions): Promise<Engine> {
  const { port } = setup;
  try {
    const threads = options.threads ?? setup.defaultThreads;
    if (!Number.isInteger(threads) || threads < 1) throw new EngineError("bad_input", "threads must be an integer >= 1");
    if (options.exact !== undefined && typeof options.exact !== "boolean") throw new EngineError("bad_input", "exact must be a boolean");
    if (options.simd !== undefined && options.simd !== "relaxed" && options.simd !== "simd128") {
      throw new EngineError("bad_input", 'simd must be "relaxed" or "simd128"');
    }
    port.busy?.(true);
    const init = await new Promise<InitResult>((resolve, reject) => {
      port.connect(
        (msg) => {
          if (msg.type === "result") resolve(msg.value as InitResult);
          else if (msg.type === "error") reject(new EngineError(msg.error.code, msg.error.message));
        },
        (reason) => reject(new EngineError("internal", `the engine's worker did not start: ${reason}`)),
      );
      port.postMessage({
        id: 0,
        op: "init",
        threads,
        exact: options.exact ?? false,
        simd: options.simd,
        assets: setup.assets,
        baseUrl: setup.baseUrl,
      } satisfies Request);
    });
    port.busy?.(false);
    return new Engine(setup, init);
  } catch (e) {
    port.terminate(false);
    throw e;
  }
}
