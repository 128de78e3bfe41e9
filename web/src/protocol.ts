// Messages between the page (engine.ts) and the engine's worker (worker-core.ts).

export type ErrorCode =
  | "not_loaded" // generate/tokenize before a model is loaded
  | "busy" // a load or generation is already running
  | "aborted" // the caller's AbortSignal fired
  | "bad_model" // the file is not a usable model (the engine says why)
  | "network" // the download failed (HTTP status, connection lost, truncated, wrong size or SHA-256)
  | "out_of_memory" // the model (or its context) needs more memory than WebAssembly can have
  | "bad_input" // an argument was invalid
  | "crashed" // the engine's worker died; this engine is unusable, create a new one
  | "internal"; // anything else

export interface ErrorInfo {
  code: ErrorCode;
  message: string;
}

/** Where a model comes from. */
export type SourceSpec =
  | { kind: "url"; url: string; size?: number; sha256?: string; name?: string }
  | { kind: "file"; file: Blob; name?: string }
  // The parts of a split model (gguf-split: "<name>-00001-of-00003.gguf", ...), picked together.
  | { kind: "files"; files: { file: Blob; name?: string }[] }
  | { kind: "path"; path: string }; // Node.js: a local file

export interface ModelInfo {
  name: string;
  /** The model's family: general.architecture ("llama", "qwen2", ...). */
  architecture: string;
  /** Parameters: the elements of all its tensors (as llama.cpp counts them). */
  parameters: number;
  /** How it is quantized: the file type llama.cpp names ("Q4_K_M"), else the dominant tensor type. */
  quantization: string;
  /** general.file_type as llama.cpp names it ("Q4_K_M"); "" when the file does not say. */
  fileType: string;
  /** The tensor type holding the most bytes ("Q4_K"). */
  dominantType: string;
  /** Every tensor type with its count, most used first ("Q4_1 x210, F32 x61"). */
  weightTypes: string;
  /** Bytes of the model's file(s). */
  fileBytes: number;
  /** Files: more than 1 for a split model. */
  parts: number;
  vocabSize: number;
  trainContext: number;
  contextSize: number;
  /** Whether attention runs as llama.cpp's flash attention (LoadOptions.flashAttention). */
  flashAttention: boolean;
  layers: number;
  threads: number;
  warnings: string[];
  /** Every file came from the saved copy. */
  fromCache: boolean;
  /** SHA-256 of the file (of the first part for a split model). */
  sha256: string;
  /** SHA-256 of each file, in order. */
  partSha256: string[];
  /** How the file pools an embedding: "none", "mean", "cls", "last" or "rank" ({arch}.pooling_type). */
  pooling: string;
  /** The length of an embedding (engine.embeddings.create). */
  embeddingSize: number;
  /** An encoder (bert, nomic-bert, gemma-embedding): it makes embeddings, not text. */
  encoder: boolean;
  /**
   * How the chat template writes tool calls: "json" (Hermes/Qwen's
   * <tool_call>, Llama 3.x: chat.completions.create reads calls back),
   * "none" (it shows no tools, as SmolLM2's own: tools are ignored, as by
   * llama-server), "unsupported" (another syntax: tools are shown, calls
   * are not read back).
   */
  toolCalls: "json" | "none" | "unsupported";
}

/** The worker's answer to an "embed" request. */
export interface EmbedResult {
  vectors: Float32Array[];
  promptTokens: number;
}

export interface LoadProgress {
  phase: "download" | "cache" | "verify" | "store" | "init";
  loaded: number;
  total: number; // 0 when unknown
  bytesPerSecond: number;
  etaSeconds: number; // NaN when unknown
}

export interface SamplingOptions {
  maxTokens?: number;
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  repeatPenalty?: number;
  repeatLastN?: number;
  seed?: number;
  ignoreEos?: boolean;
  /** Subtracted from a recent token's logit per occurrence among the last repeatLastN tokens. */
  frequencyPenalty?: number;
  /** Subtracted once from the logit of each token among the last repeatLastN. */
  presencePenalty?: number;
  /** Added to the tokens' logits before anything else: token id -> bias. */
  logitBias?: Record<number, number>;
  /**
   * Generation ends where this string (or one of up to 4, non-empty) appears;
   * the text before it is streamed, the stop string never.
   */
  stop?: string | string[];
  /** A GBNF grammar (llama.cpp's format) the output must match. */
  grammar?: string;
  /**
   * "json_object": any JSON object; { schema }: JSON matching the JSON
   * Schema. Not together with grammar.
   */
  responseFormat?: "json_object" | { schema: object };
}

/** What the worker and the WebAssembly engine take (web/wasm/bindings.cpp). */
export interface WireOptions {
  maxTokens?: number;
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  repeatPenalty?: number;
  repeatLastN?: number;
  seed?: number;
  ignoreEos?: boolean;
  frequencyPenalty?: number;
  presencePenalty?: number;
  logitBias?: [number, number][];
  stop?: string[];
  logprobs?: boolean;
  topLogprobs?: number;
  grammar?: string;
  /** JSON Schema text ('{"type":"object"}' for any object). */
  jsonSchema?: string;
  /** Functions the model may call (chat only): described by the template, calls constrained and read back. */
  tools?: WireTools;
}

/** A function the model may call; parameters is its JSON Schema as JSON text ("" = {}). */
export interface WireTool {
  name: string;
  description: string;
  parameters: string;
}

/** OpenAI's tools, tool_choice and parallel_tool_calls as the engine takes them (smolinfer::ToolRequest). */
export interface WireTools {
  tools: WireTool[];
  choice: "auto" | "none" | "required" | "named";
  /** choice "named": the function. */
  function?: string;
  /** Absent: what the template renders (llama-server's default). */
  parallel?: boolean;
}

/** A call an assistant turn made; arguments is JSON text. */
export interface WireToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * The answer so far read for tool calls (smolinfer::parse_tool_output):
 * "complete" when content and closed calls account for all of it,
 * "incomplete" when it ends inside a call, "invalid" when no call can be
 * what follows. calls[0..closed) are complete.
 */
export interface WireToolOutput {
  status: "complete" | "incomplete" | "invalid";
  content: string;
  calls: { name: string; arguments: string }[];
  closed: number;
}

/** One token's log-probability (natural log) and raw bytes. */
export interface WireTokenLogprob {
  token: number;
  logprob: number;
  bytes: Uint8Array;
}

/** A sampled token's log-probability and its most likely alternatives. */
export interface WireLogprobs extends WireTokenLogprob {
  top: WireTokenLogprob[];
}

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/** A chat message as the worker and the WebAssembly engine take it: also tool calls and tool results. */
export interface WireChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  /** assistant: the calls it made. */
  toolCalls?: WireToolCall[];
  /** tool: the call this result answers, and (optionally) its function. */
  toolCallId?: string;
  name?: string;
}

export interface GenerationStats {
  promptTokens: number;
  reusedTokens: number;
  generatedTokens: number;
  prefillTps: number;
  decodeTps: number;
  /** Why it ended: "eos", "stop" (a stop string), "length" (maxTokens), "context" (the context is full), "stopped". */
  stop: string;
}

export interface EngineStats extends GenerationStats {
  threads: number;
  memoryBytes: number;
  /** The WebAssembly build that runs, e.g. "mt-relaxed" (see Engine.build). */
  build: BuildName;
  /** Whether results are bit-identical to llama.cpp's (and the native CLI's). */
  exact: boolean;
}

/** The URLs of one WebAssembly build's files. */
export interface WasmAssets {
  /** Emscripten's ES module. */
  glue: string;
  wasm: string;
  /** The threaded builds' script for each of their threads. */
  pthread?: string;
}

/** Threads ("mt") or one thread ("st"), relaxed SIMD or plain SIMD128. */
export type BuildName = "mt-relaxed" | "st-relaxed" | "mt-simd128" | "st-simd128";

export type Request =
  | {
      id: number;
      op: "init";
      threads: number;
      exact: boolean;
      simd?: "relaxed" | "simd128";
      /** Where each build's files are (as the app's bundler placed them). */
      assets: Record<BuildName, WasmAssets>;
      /** What a relative model URL is relative to (the page). */
      baseUrl: string;
    }
  | {
      id: number;
      op: "load";
      source: SourceSpec;
      contextSize?: number;
      flashAttention?: "auto" | "on" | "off";
      /** A Jinja chat template used instead of the file's. */
      chatTemplate?: string;
    }
  | { id: number; op: "generate"; prompt: string; options: WireOptions }
  | { id: number; op: "chat"; messages: WireChatMessage[]; options: WireOptions }
  | { id: number; op: "tokenize"; text: string; special: boolean }
  | { id: number; op: "detokenize"; ids: number[] }
  // Each input's embedding (a text, or token ids), L2-normalised unless normalize is false.
  | { id: number; op: "embed"; inputs: (string | number[])[]; normalize: boolean }
  | { id: number; op: "unload" }
  | { id: number; op: "clearCache" }
  | { id: number; op: "cancel"; target: number }
  // The engine's last request: its threads end, then the front ends its worker.
  | { id: typeof DISPOSE_ID; op: "dispose" };

/** The id of the dispose request, which the worker's front answers itself (not engine.ts). */
export const DISPOSE_ID = -2;

export type Response =
  | { id: number; type: "result"; value: unknown }
  | { id: number; type: "error"; error: ErrorInfo }
  | { id: number; type: "progress"; progress: LoadProgress }
  | { id: number; type: "piece"; text: string; generated: number; logprobs?: WireLogprobs; tools?: WireToolOutput };

export interface InitResult {
  threads: number;
  build: BuildName;
  exact: boolean;
  memoryBytes: number;
}
