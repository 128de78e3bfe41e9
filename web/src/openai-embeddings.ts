// engine.embeddings.create: OpenAI's embeddings request and response on the
// engine. The fields, rules and messages are smolinfer serve's
// (server/openai_embeddings.cpp), so that a request means the same on both,
// and the vectors are the same numbers.
import { EngineError } from "./errors.js";
import type { CreateEmbeddingResponse, RequestOptions } from "./openai-types.js";
import type { EmbedResult } from "./protocol.js";

/** What the embeddings API needs from an engine. */
export interface EmbeddingBackend {
  embed(inputs: (string | number[])[], signal?: AbortSignal): Promise<EmbedResult>;
  /** The loaded model's name and embedding size (null: no model loaded). */
  model(): { name: string; embeddingSize: number } | null;
}

export const MAX_EMBEDDING_INPUTS = 2048; // OpenAI's limit per request

const bad = (message: string): never => {
  throw new EngineError("bad_input", `embeddings.create: ${message}`);
};

function tokenList(a: unknown[], where: string): number[] {
  if (a.length === 0) bad(`'input' must not contain an empty list of tokens (${where})`);
  for (const v of a) {
    if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > 2147483647) {
      bad(`'input' token ids must be integers >= 0 (${where})`);
    }
  }
  return a as number[];
}

function text(v: string, where: string): string {
  if (v.length === 0) bad(`'input' must not contain an empty string (${where})`);
  return v;
}

function readInputs(input: unknown): (string | number[])[] {
  if (typeof input === "string") return [text(input, "input")];
  if (!Array.isArray(input)) return bad("'input' must be a string, an array of strings, or token ids");
  if (input.length === 0) bad("'input' must not be an empty array");
  if (input.length > MAX_EMBEDDING_INPUTS) bad(`'input' has ${input.length} items; at most ${MAX_EMBEDDING_INPUTS}`);
  if (typeof input[0] === "number") return [tokenList(input, "input")];
  const out = input.map((v, i) => {
    const where = `input[${i}]`;
    if (typeof v === "string") return text(v, where);
    if (Array.isArray(v)) return tokenList(v, where);
    return bad(`'input' must be a string, an array of strings, or token ids (${where})`);
  });
  if (out.some((v) => typeof v === "string") && out.some((v) => typeof v !== "string")) bad("'input' mixes texts and token ids");
  return out;
}

interface ParsedEmbeddings {
  inputs: (string | number[])[];
  model?: string;
  base64: boolean;
  dimensions?: number;
}

export function parseEmbeddingsRequest(request: unknown): ParsedEmbeddings {
  if (!request || typeof request !== "object" || Array.isArray(request)) return bad("the request must be an object");
  const r = request as Record<string, unknown>;
  const out: ParsedEmbeddings = { inputs: [], base64: false };
  for (const [k, v] of Object.entries(r)) {
    if (k === "input") continue;
    if (v === null || v === undefined) continue; // OpenAI's clients send absent fields as null
    if (k === "model") {
      if (typeof v !== "string") bad("'model' must be a string");
      out.model = v as string;
    } else if (k === "encoding_format") {
      if (v !== "float" && v !== "base64") bad(`'encoding_format' must be "float" or "base64"`);
      out.base64 = v === "base64";
    } else if (k === "dimensions") {
      if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 1_000_000) bad("'dimensions' must be an integer >= 1");
      out.dimensions = v as number;
    } else if (k !== "user" && k !== "signal") {
      bad(`unknown field '${k}'`);
    }
  }
  if (r.input === undefined || r.input === null) bad("'input' is required");
  out.inputs = readInputs(r.input);
  return out;
}

/**
 * The first `n` values as a unit vector again, in the C++ engine's
 * arithmetic (smolinfer::normalized): squares in float summed in double,
 * the reciprocal of the root rounded to float, one float multiply each.
 */
export function shorten(v: Float32Array, n: number): Float32Array {
  const out = v.slice(0, n);
  let sum = 0;
  for (const x of out) sum += Math.fround(x * x);
  sum = Math.sqrt(sum);
  const norm = sum > 0 ? Math.fround(1 / sum) : 0;
  for (let i = 0; i < out.length; i++) out[i] = Math.fround(out[i] * norm);
  return out;
}

const ABC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Base64 of the floats' little-endian bytes, as OpenAI encodes them. */
export function base64Floats(v: Float32Array): string {
  const bytes = new Uint8Array(v.length * 4);
  const view = new DataView(bytes.buffer);
  v.forEach((x, i) => view.setFloat32(i * 4, x, true));
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out += ABC[(n >> 18) & 63] + ABC[(n >> 12) & 63];
    out += i + 1 < bytes.length ? ABC[(n >> 6) & 63] : "=";
    out += i + 2 < bytes.length ? ABC[n & 63] : "=";
  }
  return out;
}

export async function createEmbeddings(
  backend: EmbeddingBackend,
  request: unknown,
  options: RequestOptions = {},
): Promise<CreateEmbeddingResponse> {
  const p = parseEmbeddingsRequest(request);
  const model = backend.model();
  if (!model) throw new EngineError("not_loaded", "no model is loaded (call load() first)");
  if (p.dimensions !== undefined && p.dimensions > model.embeddingSize) {
    bad(`'dimensions' is ${p.dimensions}; the model's embeddings have ${model.embeddingSize}`);
  }
  const done = await backend.embed(p.inputs, options.signal);
  return {
    object: "list",
    data: done.vectors.map((v, index) => {
      const vector = p.dimensions !== undefined ? shorten(v, p.dimensions) : v;
      return { object: "embedding" as const, index, embedding: p.base64 ? base64Floats(vector) : Array.from(vector) };
    }),
    model: p.model ?? model.name,
    usage: { prompt_tokens: done.promptTokens, total_tokens: done.promptTokens },
  };
}
