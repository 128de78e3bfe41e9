// Messages between the page (engine.ts) and the engine's worker (worker.ts).

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
  | { kind: "file"; file: Blob; name?: string };

export interface ModelInfo {
  name: string;
  architecture: string;
  weightTypes: string;
  fileBytes: number;
  vocabSize: number;
  trainContext: number;
  contextSize: number;
  layers: number;
  threads: number;
  warnings: string[];
  fromCache: boolean;
  sha256: string;
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
}

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface GenerationStats {
  promptTokens: number;
  reusedTokens: number;
  generatedTokens: number;
  prefillTps: number;
  decodeTps: number;
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

/** Threads ("mt") or one thread ("st"), relaxed SIMD or plain SIMD128. */
export type BuildName = "mt-relaxed" | "st-relaxed" | "mt-simd128" | "st-simd128";

export type Request =
  | { id: number; op: "init"; threads: number; exact: boolean; simd?: "relaxed" | "simd128" }
  | { id: number; op: "load"; source: SourceSpec; contextSize?: number }
  | { id: number; op: "generate"; prompt: string; options: SamplingOptions }
  | { id: number; op: "chat"; messages: ChatMessage[]; options: SamplingOptions }
  | { id: number; op: "tokenize"; text: string; special: boolean }
  | { id: number; op: "detokenize"; ids: number[] }
  | { id: number; op: "unload" }
  | { id: number; op: "clearCache" }
  | { id: number; op: "cancel"; target: number };

export type Response =
  | { id: number; type: "result"; value: unknown }
  | { id: number; type: "error"; error: ErrorInfo }
  | { id: number; type: "progress"; progress: LoadProgress }
  | { id: number; type: "piece"; text: string; generated: number };

export interface InitResult {
  threads: number;
  build: BuildName;
  exact: boolean;
  memoryBytes: number;
}
