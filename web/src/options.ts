// Checks the options of chat()/generate() (and what the OpenAI-shaped
// requests map to) and turns them into what the worker takes.
import { EngineError } from "./errors.js";
import type { SamplingOptions, WireOptions } from "./protocol.js";

export const MAX_STOP_STRINGS = 4;
export const MAX_TOP_LOGPROBS = 20;

/**
 * `where`: the call the error names ("chat.completions.create: 'top_p' must
 * be ..."); "" for chat()/generate(), whose errors read "topP must be ...".
 */
export function bad(where: string, name: string, what: string): never {
  throw new EngineError("bad_input", where ? `${where}: '${name}' must be ${what}` : `${name} must be ${what}`);
}

/** Stop strings: up to 4, each a non-empty string. */
export function checkStop(where: string, name: string, v: unknown): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  const list = typeof v === "string" ? [v] : v;
  if (!Array.isArray(list) || list.length > MAX_STOP_STRINGS || !list.every((s) => typeof s === "string" && s.length > 0)) {
    bad(where, name, `a non-empty string or an array of up to ${MAX_STOP_STRINGS} non-empty strings`);
  }
  return list.length ? [...list] : undefined;
}

/** Token id -> bias; keys are integer strings (JSON object keys) or numbers. */
export function checkLogitBias(where: string, name: string, v: unknown, range: number): [number, number][] | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) bad(where, name, "an object mapping token ids to numbers");
  const pairs: [number, number][] = [];
  for (const [key, bias] of Object.entries(v as Record<string, unknown>)) {
    if (!/^(0|[1-9][0-9]{0,9})$/.test(key) || Number(key) >= 2 ** 31) bad(where, `${name}.${key}`, "keyed by a token id (an integer >= 0)");
    if (typeof bias !== "number" || !Number.isFinite(bias) || Math.abs(bias) > range) {
      bad(where, `${name}.${key}`, `a number in [-${range}, ${range}]`);
    }
    pairs.push([Number(key), bias]);
  }
  return pairs.length ? pairs : undefined;
}

/** The JSON Schema text for the engine: any object for "json_object". */
export function schemaText(where: string, name: string, schema: unknown): string {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) bad(where, name, "a JSON Schema object");
  try {
    return JSON.stringify(schema);
  } catch {
    bad(where, name, "a JSON Schema object that JSON.stringify can write");
  }
}

export const ANY_JSON_OBJECT = '{"type":"object"}';

export function checkOptions(where: string, o: SamplingOptions & { signal?: AbortSignal }): WireOptions {
  const number = (name: keyof SamplingOptions, ok: (v: number) => boolean, what: string) => {
    const v = o[name];
    if (v !== undefined && (typeof v !== "number" || !Number.isFinite(v) || !ok(v))) bad(where, name, what);
  };
  number("maxTokens", (v) => Number.isInteger(v) && v >= 0, "an integer >= 0");
  number("temperature", (v) => v >= 0, ">= 0");
  number("topK", (v) => Number.isInteger(v) && v >= 0, "an integer >= 0");
  number("topP", (v) => v > 0 && v <= 1, "in (0, 1]");
  number("minP", (v) => v >= 0 && v <= 1, "in [0, 1]");
  number("repeatPenalty", (v) => v > 0, "> 0");
  number("repeatLastN", (v) => Number.isInteger(v) && v >= 0, "an integer >= 0");
  number("seed", (v) => Number.isInteger(v) && v >= 0, "an integer >= 0");
  number("frequencyPenalty", () => true, "a finite number");
  number("presencePenalty", () => true, "a finite number");
  if (o.ignoreEos !== undefined && typeof o.ignoreEos !== "boolean") bad(where, "ignoreEos", "a boolean");
  if (o.grammar !== undefined && (typeof o.grammar !== "string" || !o.grammar)) bad(where, "grammar", "a non-empty GBNF string");
  let jsonSchema: string | undefined;
  if (o.responseFormat !== undefined) {
    if (o.responseFormat === "json_object") jsonSchema = ANY_JSON_OBJECT;
    else if (typeof o.responseFormat === "object" && o.responseFormat !== null) {
      jsonSchema = schemaText(where, "responseFormat.schema", o.responseFormat.schema);
    } else bad(where, "responseFormat", '"json_object" or { schema }');
    if (o.grammar !== undefined) bad(where, "grammar", "left out when responseFormat is given (use one or the other)");
  }
  const { signal: _signal, logitBias, stop, responseFormat: _format, ...rest } = o;
  return {
    ...rest,
    logitBias: checkLogitBias(where, "logitBias", logitBias, Infinity),
    stop: checkStop(where, "stop", stop),
    jsonSchema,
  };
}
