// Checks an OpenAI-shaped request field by field (an unknown or ill-typed
// field is a bad_input error naming it) and maps it to the engine's options.
import { EngineError } from "./errors.js";
import { ANY_JSON_OBJECT, MAX_TOP_LOGPROBS, bad, checkLogitBias, checkStop, schemaText } from "./options.js";
import { toolCalls, toolRequest, toolsActive } from "./openai-tool-request.js";
import type { WireChatMessage, WireOptions } from "./protocol.js";

const COMMON = [
  "model", "max_tokens", "temperature", "top_p", "seed", "stop", "logit_bias", "frequency_penalty",
  "presence_penalty", "response_format", "n", "stream", "stream_options", "top_k", "min_p", "repeat_penalty",
  "grammar", "signal",
];
const CHAT_FIELDS = new Set([
  ...COMMON, "messages", "max_completion_tokens", "logprobs", "top_logprobs", "tools", "tool_choice", "parallel_tool_calls",
]);
const COMPLETION_FIELDS = new Set([...COMMON, "prompt", "logprobs"]);

export type Input = { kind: "chat"; messages: WireChatMessage[] } | { kind: "prompt"; prompt: string };

export interface Parsed {
  input: Input;
  options: WireOptions;
  model: string | undefined;
  stream: boolean;
  includeUsage: boolean;
  signal: AbortSignal | undefined;
}

// Reads one field; null counts as absent (OpenAI's clients send it so).
class Fields {
  constructor(
    readonly where: string,
    readonly o: Record<string, unknown>,
  ) {}
  get(name: string): unknown {
    return this.o[name] ?? undefined;
  }
  number(name: string, lo: number, hi: number, integer = false, what?: string): number | undefined {
    const v = this.get(name);
    if (v === undefined) return undefined;
    if (typeof v !== "number" || !Number.isFinite(v) || v < lo || v > hi || (integer && !Number.isInteger(v))) {
      bad(this.where, name, what ?? `${integer ? "an integer" : "a number"} in [${lo}, ${hi}]`);
    }
    return v;
  }
  boolean(name: string): boolean | undefined {
    const v = this.get(name);
    if (v !== undefined && typeof v !== "boolean") bad(this.where, name, "a boolean");
    return v as boolean | undefined;
  }
  string(name: string): string | undefined {
    const v = this.get(name);
    if (v !== undefined && typeof v !== "string") bad(this.where, name, "a string");
    return v as string | undefined;
  }
}

// A message's content as text: a string, text parts (joined), or for an
// assistant turn that calls tools, nothing.
function contentText(where: string, name: string, content: unknown, mayBeAbsent: boolean): string {
  if (typeof content === "string") return content;
  if ((content === undefined || content === null) && mayBeAbsent) return "";
  if (!Array.isArray(content)) {
    bad(where, `${name}.content`, mayBeAbsent ? "a string, an array of text parts or null" : "a string or an array of text parts");
  }
  return content
    .map((part: unknown, k: number) => {
      const p = part as { type?: unknown; text?: unknown } | null;
      if (!p || p.type !== "text" || typeof p.text !== "string" || Object.keys(p).length !== 2) {
        bad(where, `${name}.content[${k}]`, '{ type: "text", text: string } (only text is supported)');
      }
      return p.text as string;
    })
    .join("");
}

function messages(f: Fields): WireChatMessage[] {
  const list = f.get("messages");
  if (!Array.isArray(list) || list.length === 0) bad(f.where, "messages", "a non-empty array of messages");
  return list.map((m: unknown, i: number) => {
    const name = `messages[${i}]`;
    if (typeof m !== "object" || m === null || Array.isArray(m)) bad(f.where, name, "an object { role, content }");
    const o = m as Record<string, unknown>;
    const role = o.role;
    if (role !== "system" && role !== "user" && role !== "assistant" && role !== "tool") {
      bad(f.where, `${name}.role`, '"system", "user", "assistant" or "tool"');
    }
    const assistant = role === "assistant";
    const tool = role === "tool";
    for (const key of Object.keys(o)) {
      const known = key === "role" || key === "content" || (assistant && key === "tool_calls") || (tool && (key === "tool_call_id" || key === "name"));
      if (!known) throw new EngineError("bad_input", `${f.where}: unknown field '${name}.${key}'`);
    }
    const msg: WireChatMessage = { role, content: "" };
    if (assistant && o.tool_calls !== undefined && o.tool_calls !== null) msg.toolCalls = toolCalls(f.where, `${name}.tool_calls`, o.tool_calls);
    msg.content = contentText(f.where, name, o.content, (msg.toolCalls?.length ?? 0) > 0);
    if (tool) {
      if (typeof o.tool_call_id !== "string") bad(f.where, `${name}.tool_call_id`, "the id of the call this message answers (a string)");
      msg.toolCallId = o.tool_call_id;
      const fn = o.name ?? "";
      if (typeof fn !== "string") bad(f.where, `${name}.name`, "a string");
      msg.name = fn;
    }
    return msg;
  });
}

function prompt(f: Fields): string {
  const p = f.get("prompt");
  if (typeof p === "string") return p;
  if (Array.isArray(p) && p.length === 1 && typeof p[0] === "string") return p[0];
  bad(f.where, "prompt", "a string (or an array holding one string)");
}

export function parseRequest(where: string, kind: "chat" | "prompt", request: unknown, signal: AbortSignal | undefined): Parsed {
  if (typeof request !== "object" || request === null || Array.isArray(request)) {
    throw new EngineError("bad_input", `${where}: the request must be an object`);
  }
  const o = request as Record<string, unknown>;
  const allowed = kind === "chat" ? CHAT_FIELDS : COMPLETION_FIELDS;
  for (const key of Object.keys(o)) {
    if (!allowed.has(key)) throw new EngineError("bad_input", `${where}: unknown field '${key}'`);
  }
  const f = new Fields(where, o);
  const input: Input = kind === "chat" ? { kind, messages: messages(f) } : { kind, prompt: prompt(f) };
  const tools = kind === "chat" ? toolRequest(where, f.get("tools"), f.get("tool_choice"), f.get("parallel_tool_calls")) : undefined;
  const model = f.string("model");

  f.number("n", 1, 1, true, "1 (one choice per request)");
  const maxTokens = f.number("max_tokens", 0, 2 ** 31 - 1, true);
  let maxCompletion: number | undefined;
  if (kind === "chat") {
    maxCompletion = f.number("max_completion_tokens", 0, 2 ** 31 - 1, true);
    if (maxTokens !== undefined && maxCompletion !== undefined && maxTokens !== maxCompletion) {
      bad(where, "max_completion_tokens", "equal to max_tokens when both are given");
    }
  }

  let logprobs: boolean | undefined;
  let topLogprobs: number | undefined;
  if (kind === "chat") {
    logprobs = f.boolean("logprobs");
    topLogprobs = f.number("top_logprobs", 0, MAX_TOP_LOGPROBS, true);
    if (topLogprobs !== undefined && !logprobs) bad(where, "top_logprobs", "left out unless logprobs is true");
  } else {
    topLogprobs = f.number("logprobs", 0, MAX_TOP_LOGPROBS, true);
    logprobs = topLogprobs !== undefined ? true : undefined;
  }

  const grammar = f.string("grammar");
  if (grammar !== undefined && !grammar) bad(where, "grammar", "a non-empty GBNF string");
  let jsonSchema: string | undefined;
  const format = f.get("response_format") as { type?: unknown; json_schema?: unknown } | undefined;
  if (format !== undefined) {
    if (typeof format !== "object" || Array.isArray(format)) bad(where, "response_format", "an object { type }");
    for (const key of Object.keys(format)) {
      if (key !== "type" && !(key === "json_schema" && format.type === "json_schema")) {
        throw new EngineError("bad_input", `${where}: unknown field 'response_format.${key}'`);
      }
    }
    if (format.type === "json_object") jsonSchema = ANY_JSON_OBJECT;
    else if (format.type === "json_schema") {
      const js = format.json_schema as Record<string, unknown> | undefined;
      if (typeof js !== "object" || js === null) bad(where, "response_format.json_schema", "an object { name, schema }");
      for (const key of Object.keys(js)) {
        if (!["name", "description", "schema", "strict"].includes(key)) {
          throw new EngineError("bad_input", `${where}: unknown field 'response_format.json_schema.${key}'`);
        }
      }
      if (typeof js.name !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(js.name)) {
        bad(where, "response_format.json_schema.name", "1-64 letters, digits, '_' or '-'");
      }
      if (js.strict !== undefined && js.strict !== null && typeof js.strict !== "boolean") {
        bad(where, "response_format.json_schema.strict", "a boolean");
      }
      jsonSchema = schemaText(where, "response_format.json_schema.schema", js.schema);
    } else if (format.type !== "text") bad(where, "response_format.type", '"text", "json_object" or "json_schema"');
    if (jsonSchema !== undefined && grammar !== undefined) bad(where, "grammar", "left out when response_format asks for JSON");
  }
  if (grammar !== undefined && toolsActive(tools)) bad(where, "grammar", "left out when tools may be called");
  if (jsonSchema !== undefined && toolsActive(tools)) bad(where, "response_format", "left out (or text) when tools may be called");

  const stream = f.boolean("stream") ?? false;
  if (stream && logprobs && toolsActive(tools)) bad(where, "logprobs", "left out when tools may be called in a stream");
  let includeUsage = false;
  const so = f.get("stream_options") as Record<string, unknown> | undefined;
  if (so !== undefined) {
    if (!stream) bad(where, "stream_options", "left out unless stream is true");
    if (typeof so !== "object" || Array.isArray(so)) bad(where, "stream_options", "an object { include_usage }");
    for (const key of Object.keys(so)) {
      if (key !== "include_usage") throw new EngineError("bad_input", `${where}: unknown field 'stream_options.${key}'`);
    }
    if (so.include_usage !== undefined && typeof so.include_usage !== "boolean") bad(where, "stream_options.include_usage", "a boolean");
    includeUsage = so.include_usage === true;
  }

  const requestSignal = f.get("signal");
  if (requestSignal !== undefined && !(requestSignal instanceof AbortSignal)) bad(where, "signal", "an AbortSignal");
  const options: WireOptions = {
    maxTokens: maxCompletion ?? maxTokens,
    temperature: f.number("temperature", 0, 2),
    topP: f.number("top_p", Number.MIN_VALUE, 1, false, "a number in (0, 1]"),
    seed: f.number("seed", 0, Number.MAX_SAFE_INTEGER, true, "an integer >= 0"),
    stop: checkStop(where, "stop", f.get("stop")),
    logprobs,
    topLogprobs,
    logitBias: checkLogitBias(where, "logit_bias", f.get("logit_bias"), 100),
    frequencyPenalty: f.number("frequency_penalty", -2, 2),
    presencePenalty: f.number("presence_penalty", -2, 2),
    topK: f.number("top_k", 0, 2 ** 31 - 1, true),
    minP: f.number("min_p", 0, 1),
    repeatPenalty: f.number("repeat_penalty", Number.MIN_VALUE, Number.MAX_VALUE, false, "a number > 0"),
    grammar,
    jsonSchema,
    tools,
  };
  return { input, options, model, stream, includeUsage, signal: signal ?? (requestSignal as AbortSignal | undefined) };
}
