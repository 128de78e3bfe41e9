// OpenAI's chat-completion and (legacy) completion shapes, as
// engine.chat.completions.create and engine.completions.create take and
// return them: OpenAI's field names, plus the extras top_k, min_p,
// repeat_penalty and grammar.

export type Role = "system" | "user" | "assistant" | "tool";

export interface ChatCompletionContentPartText {
  type: "text";
  text: string;
}

export interface ChatCompletionSystemMessageParam {
  role: "system";
  /** Text, or text parts (joined in order). */
  content: string | ChatCompletionContentPartText[];
}
export interface ChatCompletionUserMessageParam {
  role: "user";
  content: string | ChatCompletionContentPartText[];
}
export interface ChatCompletionAssistantMessageParam {
  role: "assistant";
  /** May be null or left out when the turn calls tools. */
  content?: string | ChatCompletionContentPartText[] | null;
  tool_calls?: ChatCompletionMessageToolCall[] | null;
}
/** A tool's result, answering the call tool_call_id. */
export interface ChatCompletionToolMessageParam {
  role: "tool";
  content: string | ChatCompletionContentPartText[];
  tool_call_id: string;
  /** The function's name (some templates show it). */
  name?: string;
}
export type ChatCompletionMessageParam =
  | ChatCompletionSystemMessageParam
  | ChatCompletionUserMessageParam
  | ChatCompletionAssistantMessageParam
  | ChatCompletionToolMessageParam;

/** A call the assistant made: arguments is JSON text (as the model wrote it). */
export interface ChatCompletionMessageToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface FunctionDefinition {
  /** 1-64 letters, digits, '_' or '-'; unique among the tools. */
  name: string;
  description?: string;
  /** A JSON Schema for the arguments; the calls are constrained to it (a schema that cannot be is an error naming the tool). */
  parameters?: Record<string, unknown>;
  strict?: boolean | null;
}
export interface ChatCompletionTool {
  type: "function";
  function: FunctionDefinition;
}
export interface ChatCompletionNamedToolChoice {
  type: "function";
  function: { name: string };
}
/** "auto" (default): the model decides; "none": no calls; "required": at least one; named: that function. */
export type ChatCompletionToolChoiceOption = "none" | "auto" | "required" | ChatCompletionNamedToolChoice;

export type ResponseFormat =
  | { type: "text" }
  /** Any JSON object. */
  | { type: "json_object" }
  | { type: "json_schema"; json_schema: { name: string; description?: string; schema: Record<string, unknown>; strict?: boolean | null } };

/** Fields both create() calls take. */
export interface SamplingParams {
  model?: string;
  /** Default: until end of generation or the context is full. */
  max_tokens?: number | null;
  /** 0..2; 0 is greedy. Default: the engine's (0.8, as llama.cpp). */
  temperature?: number | null;
  /** (0, 1]. */
  top_p?: number | null;
  /** The same seed with the same request gives the same answer. */
  seed?: number | null;
  /** Up to 4 non-empty strings: the answer ends before the first one produced; it never appears. */
  stop?: string | string[] | null;
  /** Token id (as a string key) -> -100..100, added to its logit. */
  logit_bias?: Record<string, number> | null;
  /** -2..2: subtracted per occurrence among the last repeat_last_n (64) tokens. */
  frequency_penalty?: number | null;
  /** -2..2: subtracted once from each token among the last 64. */
  presence_penalty?: number | null;
  response_format?: ResponseFormat | null;
  /** Only 1. */
  n?: number | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  /** Extra: keep the k most likely tokens (0: off). */
  top_k?: number | null;
  /** Extra: drop tokens below min_p x the most likely one's probability. */
  min_p?: number | null;
  /** Extra: llama.cpp's repetition penalty (1: off). */
  repeat_penalty?: number | null;
  /** Extra: a GBNF grammar (llama.cpp's format) the answer must match. Not with response_format. */
  grammar?: string | null;
  /** Aborts the request (also accepted as create(request, { signal })). */
  signal?: AbortSignal;
}

export interface ChatCompletionCreateParams extends SamplingParams {
  messages: ChatCompletionMessageParam[];
  max_completion_tokens?: number | null;
  /** Log-probabilities of the answer's tokens. */
  logprobs?: boolean | null;
  /** 0..20 most likely alternatives per token; needs logprobs: true. */
  top_logprobs?: number | null;
  /**
   * Functions the model may call, described by the chat template. Calls are
   * read back only from templates whose calls are JSON (Hermes/Qwen's
   * <tool_call>, Llama 3.x); a template that shows no calls (SmolLM2's own)
   * answers with text, as llama-server does.
   */
  tools?: ChatCompletionTool[] | null;
  tool_choice?: ChatCompletionToolChoiceOption | null;
  /** Default: whether the template can show two calls in one turn. */
  parallel_tool_calls?: boolean | null;
}
export interface ChatCompletionCreateParamsStreaming extends ChatCompletionCreateParams {
  stream: true;
}
export interface ChatCompletionCreateParamsNonStreaming extends ChatCompletionCreateParams {
  stream?: false | null;
}

export interface TopLogprob {
  token: string;
  /** Natural log; -9999 for a token that could not be drawn (as OpenAI). */
  logprob: number;
  /** The token's UTF-8 bytes (a token may hold part of a character). */
  bytes: number[] | null;
}
export interface ChatCompletionTokenLogprob extends TopLogprob {
  top_logprobs: TopLogprob[];
}
export interface ChoiceLogprobs {
  content: ChatCompletionTokenLogprob[] | null;
  refusal: null;
}

/**
 * "stop": end of generation or a stop string; "length": max_tokens or a full
 * context; "tool_calls": the answer ends with tool calls.
 */
export type FinishReason = "stop" | "length" | "tool_calls";

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: {
    index: number;
    /** tool_calls only when the answer calls tools; content is then the text before the calls (often ""). */
    message: { role: "assistant"; content: string; refusal: null; tool_calls?: ChatCompletionMessageToolCall[] };
    logprobs: ChoiceLogprobs | null;
    finish_reason: FinishReason;
  }[];
  usage: CompletionUsage;
}

export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  /** Empty in the usage chunk that ends a stream with stream_options.include_usage. */
  choices: {
    index: number;
    delta: { role?: "assistant"; content?: string; tool_calls?: ChatCompletionChunkToolCall[] };
    logprobs: ChoiceLogprobs | null;
    finish_reason: FinishReason | null;
  }[];
  /** With stream_options.include_usage: null but on the last chunk. */
  usage?: CompletionUsage | null;
}

/** A tool call in a stream: each call comes whole, in one delta, once it is complete. */
export interface ChatCompletionChunkToolCall {
  /** Which call of the answer (0, 1, ...). */
  index: number;
  id?: string;
  type?: "function";
  function?: { name?: string; arguments?: string };
}

export interface CompletionCreateParams extends SamplingParams {
  /** A raw prompt (special-token texts are parsed), or an array holding one. */
  prompt: string | string[];
  /** 0..20: log-probabilities with that many alternatives per token. */
  logprobs?: number | null;
}
export interface CompletionCreateParamsStreaming extends CompletionCreateParams {
  stream: true;
}
export interface CompletionCreateParamsNonStreaming extends CompletionCreateParams {
  stream?: false | null;
}

export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Record<string, number>[];
  text_offset: number[];
}

export interface CompletionChoice {
  index: number;
  text: string;
  logprobs: CompletionLogprobs | null;
  /** null in the stream's chunks but the last. */
  finish_reason: FinishReason | null;
}

/** A completion, and (with stream: true) each of its chunks. */
export interface Completion {
  id: string;
  object: "text_completion";
  created: number;
  model: string;
  choices: CompletionChoice[];
  usage?: CompletionUsage | null;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface ChatCompletions {
  create(request: ChatCompletionCreateParamsStreaming, options?: RequestOptions): Promise<AsyncIterable<ChatCompletionChunk>>;
  create(request: ChatCompletionCreateParamsNonStreaming, options?: RequestOptions): Promise<ChatCompletion>;
  create(request: ChatCompletionCreateParams, options?: RequestOptions): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>;
}

export interface Completions {
  create(request: CompletionCreateParamsStreaming, options?: RequestOptions): Promise<AsyncIterable<Completion>>;
  create(request: CompletionCreateParamsNonStreaming, options?: RequestOptions): Promise<Completion>;
  create(request: CompletionCreateParams, options?: RequestOptions): Promise<Completion | AsyncIterable<Completion>>;
}

/** engine.embeddings.create's request: OpenAI's fields. */
export interface EmbeddingCreateParams {
  /** A text, several (each its own embedding, up to 2048), token ids, or several lists of them. */
  input: string | string[] | number[] | number[][];
  model?: string;
  /** "float" (default): arrays of numbers; "base64": each vector's little-endian float32 bytes. */
  encoding_format?: "float" | "base64" | null;
  /** Keep the first N values of each vector, normalised again (at most the model's embedding size). */
  dimensions?: number | null;
  user?: string | null;
  /** Aborts the request (also accepted as create(request, { signal })). */
  signal?: AbortSignal;
}

export interface Embedding {
  object: "embedding";
  index: number;
  embedding: number[] | string;
}

export interface CreateEmbeddingResponse {
  object: "list";
  data: Embedding[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface Embeddings {
  /** Every vector L2-normalised, as OpenAI returns them; the same vectors `smolinfer serve` returns. */
  create(request: EmbeddingCreateParams, options?: RequestOptions): Promise<CreateEmbeddingResponse>;
}
