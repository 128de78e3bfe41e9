// The tool fields of a chat request (tools, tool_choice,
// parallel_tool_calls, an assistant turn's tool_calls), checked as
// `smolinfer serve` checks them (server/openai_request.cpp): the same
// fields and messages. The engine checks what needs the grammar engine
// (a duplicate or ill-formed name, a schema it cannot enforce) and names
// the tool.
import { EngineError } from "./errors.js";
import { bad } from "./options.js";
import type { WireTool, WireToolCall, WireTools } from "./protocol.js";

const TOOL_SHAPE = '{ type: "function", function: { name, description, parameters } }';

function unknown(where: string, name: string): never {
  throw new EngineError("bad_input", `${where}: unknown field '${name}'`);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** An assistant turn's tool_calls: arguments as sent when a string (the template checks it is JSON), else its JSON text. */
export function toolCalls(where: string, name: string, list: unknown): WireToolCall[] {
  if (!Array.isArray(list)) bad(where, name, "an array of tool calls");
  return list.map((c: unknown, k: number) => {
    const at = `${name}[${k}]`;
    if (!isObject(c)) bad(where, at, 'an object { id, type: "function", function: { name, arguments } }');
    for (const key of Object.keys(c)) if (key !== "id" && key !== "type" && key !== "function") unknown(where, `${at}.${key}`);
    if ((c.type ?? "function") !== "function") bad(where, `${at}.type`, '"function"');
    const id = c.id ?? "";
    if (typeof id !== "string") bad(where, `${at}.id`, "a string");
    const fn = c.function;
    if (!isObject(fn) || typeof fn.name !== "string" || !fn.name) bad(where, `${at}.function`, "an object { name, arguments }");
    for (const key of Object.keys(fn)) if (key !== "name" && key !== "arguments") unknown(where, `${at}.function.${key}`);
    const args = fn.arguments ?? "{}";
    return { id, name: fn.name, arguments: typeof args === "string" ? args : JSON.stringify(args) };
  });
}

function tools(where: string, list: unknown): WireTool[] {
  if (!Array.isArray(list)) bad(where, "tools", `an array of ${TOOL_SHAPE}`);
  return list.map((t: unknown, i: number) => {
    const at = `tools[${i}]`;
    if (!isObject(t) || t.type !== "function" || !isObject(t.function)) bad(where, at, `an object ${TOOL_SHAPE}`);
    for (const key of Object.keys(t)) if (key !== "type" && key !== "function") unknown(where, `${at}.${key}`);
    const fn = t.function as Record<string, unknown>;
    for (const key of Object.keys(fn)) {
      if (!["name", "description", "parameters", "strict"].includes(key)) unknown(where, `${at}.function.${key}`);
    }
    if (typeof fn.name !== "string") bad(where, `${at}.function.name`, "a string");
    const description = fn.description ?? "";
    if (typeof description !== "string") bad(where, `${at}.function.description`, "a string");
    if ("parameters" in fn && !isObject(fn.parameters)) bad(where, `${at}.function.parameters`, "a JSON Schema object");
    if (fn.strict !== undefined && fn.strict !== null && typeof fn.strict !== "boolean") bad(where, `${at}.function.strict`, "a boolean");
    // The schema's JSON text in the caller's key order, as the template shows it.
    return { name: fn.name, description, parameters: "parameters" in fn ? JSON.stringify(fn.parameters) : "" };
  });
}

/** tools, tool_choice and parallel_tool_calls (null counts as absent); undefined when there are no tools. */
export function toolRequest(where: string, list: unknown, choice: unknown, parallel: unknown): WireTools | undefined {
  const r: WireTools = { tools: list === undefined || list === null ? [] : tools(where, list), choice: "auto" };
  if (choice !== undefined && choice !== null) {
    const what = '"auto", "none", "required" or { type: "function", function: { name } }';
    if (typeof choice === "string") {
      if (choice !== "auto" && choice !== "none" && choice !== "required") bad(where, "tool_choice", what);
      r.choice = choice;
    } else {
      if (!isObject(choice) || choice.type !== "function") bad(where, "tool_choice", what);
      const fn = choice.function;
      if (!isObject(fn) || typeof fn.name !== "string") bad(where, "tool_choice.function", "an object { name }");
      r.choice = "named";
      r.function = fn.name;
      if (!r.tools.some((t) => t.name === fn.name)) {
        bad(where, "tool_choice.function.name", `the name of one of the tools ('${fn.name}' is not)`);
      }
    }
    if (r.choice !== "auto" && r.choice !== "none" && r.tools.length === 0) {
      bad(where, "tool_choice", 'left out, "auto" or "none" when there are no tools');
    }
  }
  if (parallel !== undefined && parallel !== null) {
    if (typeof parallel !== "boolean") bad(where, "parallel_tool_calls", "a boolean");
    r.parallel = parallel;
  }
  return r.tools.length ? r : undefined;
}

/** Whether the model may call a tool (not for tool_choice "none"). */
export const toolsActive = (t: WireTools | undefined): boolean => t !== undefined && t.choice !== "none";
