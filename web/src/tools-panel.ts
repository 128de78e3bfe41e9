// The demo page's tools: a clock and a calculator the model may call
// (OpenAI's tools in engine.chat.completions.create). When an answer has
// tool_calls, the page runs each call here, shows it with its result, sends
// the results back as role "tool" messages and asks again for the final
// answer (OpenAI's round trip). Calls are read back only from a
// template that writes them as JSON (ModelInfo.toolCalls "json"):
// SmolLM2-135M's own shows no tools, so the panel offers to load the model
// again with tool-template.jinja (its ChatML with Hermes-style calls).
import {
  EngineError,
  type ChatCompletionCreateParams,
  type ChatCompletionMessageParam,
  type ChatCompletionMessageToolCall,
  type ChatCompletionTool,
  type ChatCompletionToolChoiceOption,
  type Engine,
  type ModelInfo,
} from "./smolinfer.js";

export const TOOLS: ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "get_time",
      description: "The current date and time where the user is",
      parameters: { type: "object", properties: {}, additionalProperties: false },
    },
  },
  {
    type: "function",
    function: {
      name: "calc",
      description: "Compute a op b, where op is one of + - * /",
      // Numbers and an operator, not an expression string: SmolLM2-135M,
      // held to this schema, writes {"a": 12, "op": "*", "b": 7}; asked
      // for an expression it writes text that is none.
      parameters: {
        type: "object",
        properties: { a: { type: "number" }, op: { type: "string", enum: ["+", "-", "*", "/"] }, b: { type: "number" } },
        required: ["a", "op", "b"],
        additionalProperties: false,
      },
    },
  },
];

// calc: the arithmetic itself, no eval.
const OPS: Record<string, (a: number, b: number) => number> = {
  "+": (a, b) => a + b,
  "-": (a, b) => a - b,
  "*": (a, b) => a * b,
  "/": (a, b) => a / b,
};

/**
 * One call run: its result as the model is told it ("error: " and what
 * went wrong when the arguments are not what the tool takes).
 */
export function runTool(name: string, argumentsText: string): string {
  let args: Record<string, unknown>;
  try {
    args = JSON.parse(argumentsText);
  } catch {
    return `error: the arguments are not JSON: ${argumentsText}`;
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) return "error: the arguments are not a JSON object";
  const keys = Object.keys(args).sort().join(",");
  if (name === "get_time") {
    if (keys) return "error: get_time takes no arguments";
    return new Date().toLocaleString("en-US", { dateStyle: "full", timeStyle: "short" });
  }
  if (name === "calc") {
    const { a, op, b } = args;
    if (keys !== "a,b,op" || typeof a !== "number" || typeof b !== "number" || typeof op !== "string" || !Object.hasOwn(OPS, op)) {
      return "error: calc takes a and b (numbers) and op (one of + - * /)";
    }
    const value = OPS[op](a, b);
    return Number.isFinite(value) ? String(value) : `error: ${a} ${op} ${b} is not a finite number`;
  }
  return `error: there is no tool named '${name}'`;
}

/** The select's value as tool_choice: "auto", "required", or a tool's name (that call). */
function toolChoice(value: string): ChatCompletionToolChoiceOption {
  if (value === "auto" || value === "required") return value;
  if (!TOOLS.some((t) => t.function.name === value)) throw new Error(`no tool named '${value}'`);
  return { type: "function", function: { name: value } };
}

/** The calls an answer made with their results, and the messages that carry them. */
export interface ToolRound {
  calls: { name: string; arguments: string; result: string }[];
  /** The assistant turn with its tool_calls, then a role "tool" message per call. */
  messages: ChatCompletionMessageParam[];
}

/** The request's fields but messages, tools and stream (the page's sampling settings). */
export type Sampling = Omit<ChatCompletionCreateParams, "messages" | "tools" | "tool_choice" | "stream">;

interface Ui {
  on: HTMLInputElement;
  choice: HTMLSelectElement;
  list: HTMLElement;
  status: HTMLElement;
  template: HTMLButtonElement;
}

export interface ToolsPanel {
  /** Whether the switch is on: the next answer is offered the tools. */
  readonly on: boolean;
  /** Why an answer with tools cannot be asked for now (the template), or null. */
  problem(): string | null;
  /** The loaded model changed (null: none); `ownTemplate`: loaded with tool-template.jinja. */
  setModel(info: ModelInfo | null, ownTemplate: boolean): void;
  setReady(ready: boolean): void;
  /** The answer's text as it streams; its calls are run and reported to onRound before the final answer is asked for. */
  answer(messages: ChatCompletionMessageParam[], sampling: Sampling, signal: AbortSignal, onRound: (round: ToolRound) => void): AsyncGenerator<string>;
}

/** `reload(template)`: load the current model again with this chat template. */
export function toolsPanel(ui: Ui, engine: () => Engine | null, reload: (template: string) => void, fail: (e: unknown) => void): ToolsPanel {
  let model: ModelInfo | null = null;
  let own = false;
  for (const t of TOOLS) {
    const li = document.createElement("li");
    const name = document.createElement("code");
    name.textContent = t.function.name;
    li.append(name, ` ${t.function.description}`);
    ui.list.append(li);
  }

  const problem = (): string | null => {
    if (!model) return "Load a model first.";
    if (model.toolCalls === "json") return null;
    return model.toolCalls === "none"
      ? "This model's chat template shows no tools (SmolLM2's own does not): the model would never see them. Load it again with the page's tool template."
      : "This model's chat template writes tool calls in a form smolinfer does not read back.";
  };

  const showStatus = () => {
    const p = problem();
    ui.status.textContent =
      p ?? (own ? "Tool template: SmolLM2's ChatML with Hermes-style <tool_call> calls (tool-template.jinja)." : "This model's chat template writes tool calls as JSON.");
    ui.status.classList.toggle("warn", p !== null && model !== null);
    ui.template.hidden = model === null || model.encoder || model.toolCalls === "json";
  };

  ui.template.addEventListener("click", async () => {
    try {
      const response = await fetch("tool-template.jinja");
      if (!response.ok) throw new Error(`tool-template.jinja: HTTP ${response.status}`);
      reload(await response.text());
    } catch (e) {
      fail(e);
    }
  });

  // The text a request streams; the calls it makes, assembled from their deltas.
  async function* stream(request: ChatCompletionCreateParams, signal: AbortSignal, calls: ChatCompletionMessageToolCall[]) {
    for await (const chunk of await engine()!.chat.completions.create({ ...request, stream: true }, { signal })) {
      const delta = chunk.choices[0]?.delta;
      if (delta?.content) yield delta.content;
      for (const c of delta?.tool_calls ?? []) {
        const call = (calls[c.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
        call.id += c.id ?? "";
        call.function.name += c.function?.name ?? "";
        call.function.arguments += c.function?.arguments ?? "";
      }
    }
  }

  async function* answer(messages: ChatCompletionMessageParam[], sampling: Sampling, signal: AbortSignal, onRound: (round: ToolRound) => void) {
    if (!engine()) throw new EngineError("not_loaded", "no engine");
    const calls: ChatCompletionMessageToolCall[] = [];
    let content = "";
    for await (const text of stream({ ...sampling, messages, tools: TOOLS, tool_choice: toolChoice(ui.choice.value) }, signal, calls)) {
      content += text;
      yield text;
    }
    if (calls.length === 0) return;
    const ran = calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments, result: runTool(c.function.name, c.function.arguments) }));
    const turn: ChatCompletionMessageParam[] = [
      { role: "assistant", content: content || null, tool_calls: calls },
      ...calls.map((c, k): ChatCompletionMessageParam => ({ role: "tool", tool_call_id: c.id, name: c.function.name, content: ran[k].result })),
    ];
    onRound({ calls: ran, messages: turn });
    // The final answer, asked without the tools: SmolLM2-135M offered them
    // again often calls the same tool again instead of answering.
    yield* stream({ ...sampling, messages: [...messages, ...turn] }, signal, []);
  }

  showStatus();
  return {
    get on() {
      return ui.on.checked;
    },
    problem,
    setModel(info, ownTemplate) {
      model = info;
      own = ownTemplate;
      showStatus();
    },
    setReady: (ready) => (ui.template.disabled = !ready),
    answer,
  };
}
