// The demo page: pick a model, watch it load, chat with it.
import {
  createEngine,
  EngineError,
  type ChatCompletionMessageParam,
  type ChatMessage,
  type CreateEngineOptions,
  type Engine,
  type FlashAttention,
  type LoadProgress,
  type ModelInfo,
  type ModelSource,
} from "./smolinfer.js";
import { searchPanel } from "./search-panel.js";
import { type Sampling, type ToolRound, toolsPanel } from "./tools-panel.js";

const HUB_MODEL = {
  label: "SmolLM2-135M-Instruct, Q8_0 (Hugging Face hub)",
  url: "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/resolve/main/smollm2-135m-instruct-q8_0.gguf",
};

interface ServerModel {
  name: string;
  url: string; // a split model's first part
  size?: number;
  sha256?: string;
  parts?: number; // a split model's files
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const ui = {
  runtime: $("runtime"),
  source: $<HTMLSelectElement>("source"),
  load: $<HTMLButtonElement>("load"),
  urlRow: $("url-row"),
  url: $<HTMLInputElement>("url"),
  fileRow: $("file-row"),
  file: $<HTMLInputElement>("file"),
  fileName: $("file-name"),
  progress: $("progress"),
  progressFill: $("progress-fill"),
  progressText: $("progress-text"),
  cancelLoad: $<HTMLButtonElement>("cancel-load"),
  modelStatus: $("model-status"),
  clearCache: $<HTMLButtonElement>("clear-cache"),
  system: $<HTMLTextAreaElement>("system"),
  temperature: $<HTMLInputElement>("temperature"),
  topK: $<HTMLInputElement>("top-k"),
  topP: $<HTMLInputElement>("top-p"),
  minP: $<HTMLInputElement>("min-p"),
  repeatPenalty: $<HTMLInputElement>("repeat-penalty"),
  maxTokens: $<HTMLInputElement>("max-tokens"),
  seed: $<HTMLInputElement>("seed"),
  messages: $("messages"),
  empty: $("empty"),
  error: $("error"),
  composer: $<HTMLFormElement>("composer"),
  prompt: $<HTMLTextAreaElement>("prompt"),
  send: $<HTMLButtonElement>("send"),
  stop: $<HTMLButtonElement>("stop"),
  regenerate: $<HTMLButtonElement>("regenerate"),
  newChat: $<HTMLButtonElement>("new-chat"),
  jsonMode: $<HTMLInputElement>("json-mode"),
  schemaRow: $("schema-row"),
  schema: $<HTMLTextAreaElement>("schema"),
  stats: $("stats"),
  drop: $("drop"),
  search: $("search-panel"),
};

// A chat turn as chat.completions.create takes it: also the assistant turns
// that called tools and the tools' results (the tools panel's rounds).
type Turn = ChatCompletionMessageParam;

const search = searchPanel(
  {
    docs: $<HTMLTextAreaElement>("search-docs"),
    query: $<HTMLInputElement>("search-query"),
    go: $<HTMLButtonElement>("search-go"),
    results: $<HTMLOListElement>("search-results"),
    stats: $("search-stats"),
  },
  () => engine,
  (running) => setBusy(running ? "generating" : "idle"),
  (e) => showError(describeError(e)),
);

const tools = toolsPanel(
  {
    on: $<HTMLInputElement>("tools-on"),
    choice: $<HTMLSelectElement>("tool-choice"),
    list: $("tool-list"),
    status: $("tools-status"),
    template: $<HTMLButtonElement>("tools-template"),
  },
  () => engine,
  (template) => {
    if (loadedSource) void loadModel(loadedSource, template);
  },
  (e) => showError(describeError(e)),
);

let engine: Engine | null = null;
// From the page's address: ?threads=N, ?exact=1 (bit-exact even where that
// is slow), ?simd=simd128|relaxed (force a build), ?fa=on|off|auto
// (llama.cpp's flash-attention arithmetic; default auto: on).
let engineOptions: CreateEngineOptions = {};
let flashAttention: FlashAttention | undefined;
let serverModels: ServerModel[] = [];
let conversation: Turn[] = [];
let loadedSource: ModelSource | null = null; // what the tools panel loads again with its template
let loading: AbortController | null = null;
let generating: AbortController | null = null;

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

// What the "JSON output" switch starts with: a small object a 135M model can fill.
const DEFAULT_SCHEMA = {
  type: "object",
  properties: {
    answer: { type: "string" },
    confidence: { type: "string", enum: ["low", "medium", "high"] },
    keywords: { type: "array", items: { type: "string" }, maxItems: 3 },
  },
  required: ["answer", "confidence", "keywords"],
  additionalProperties: false,
};

function showError(message: string | null): void {
  ui.error.hidden = !message;
  ui.error.textContent = message ?? "";
}

function describeError(e: unknown): string {
  if (e instanceof EngineError) {
    if (e.code === "crashed") return `The engine stopped (${e.message.split(";")[0]}). Press Load to start it again.`;
    const what: Record<string, string> = {
      not_loaded: "No model is loaded",
      busy: "The engine is busy",
      aborted: "Stopped",
      bad_model: "This file is not a model smolinfer can run",
      network: "The download failed",
      out_of_memory: "Not enough memory",
      bad_input: "Invalid input",
      internal: "Something went wrong",
    };
    return `${what[e.code] ?? e.code}: ${e.message}`;
  }
  return e instanceof Error ? e.message : String(e);
}

function updateRuntime(): void {
  if (!engine) return;
  const s = engine.stats();
  const threads = engine.build.startsWith("mt")
    ? `${s.threads} threads`
    : crossOriginIsolated
      ? "1 thread"
      : "1 thread (page not cross-origin isolated)";
  const simd = engine.build.endsWith("relaxed") ? "relaxed SIMD" : "SIMD128";
  const exact = engine.exact ? "exact" : "fast (not bit-exact)";
  ui.runtime.textContent = `WebAssembly ${simd} · ${threads} · ${exact} · memory ${mb(s.memoryBytes)}`;
}

function setBusy(state: "idle" | "loading" | "generating"): void {
  const loaded = engine?.model != null;
  // An encoder (bert, ...) makes embeddings only: the search, not the chat.
  const chats = loaded && !engine?.model?.encoder;
  ui.load.disabled = state !== "idle";
  ui.source.disabled = state !== "idle";
  ui.prompt.disabled = !chats || state === "loading";
  ui.send.disabled = !chats || state !== "idle";
  search.setReady(loaded && state === "idle");
  tools.setReady(loaded && state === "idle");
  ui.send.hidden = state === "generating";
  ui.stop.hidden = state !== "generating";
  ui.regenerate.disabled = !loaded || state !== "idle" || !conversation.some((m) => m.role === "assistant");
  ui.progress.hidden = state !== "loading";
}

// ---------------------------------------------------------------- model

// One file, or the parts of a split model picked (or dropped) together.
function pickedFiles(list: FileList | null | undefined): ModelSource | null {
  const files = Array.from(list ?? []);
  if (files.length === 0) return null;
  return files.length === 1 ? files[0] : files;
}

// "llama · 135M parameters · Q4_1": what the loaded model is.
function describeModel(info: ModelInfo): string {
  const p = info.parameters;
  const params = p >= 1e9 ? `${(p / 1e9).toFixed(2)}B` : `${Math.round(p / 1e6)}M`;
  return `${info.architecture} · ${params} parameters · ${info.quantization}`;
}

function selectedSource(): ModelSource | null {
  const value = ui.source.value;
  if (value === "url") return ui.url.value.trim() || null;
  if (value === "file") return pickedFiles(ui.file.files);
  if (value === "hub") return { url: HUB_MODEL.url, name: HUB_MODEL.label };
  const m = serverModels[Number(value.slice("server:".length))];
  return m ? { url: m.url, size: m.size, sha256: m.sha256, name: m.name } : null;
}

function showProgress(p: LoadProgress): void {
  const phase = {
    download: "Downloading",
    cache: "Reading the saved copy",
    verify: "Checking",
    store: "Saving for offline use",
    init: "Starting",
  }[p.phase];
  const fraction = p.total > 0 ? p.loaded / p.total : 0;
  ui.progressFill.style.width = `${(fraction * 100).toFixed(1)}%`;
  let text = `${phase}`;
  if (p.phase === "download" || p.phase === "cache" || p.phase === "store") {
    text += ` ${mb(p.loaded)}${p.total ? ` of ${mb(p.total)}` : ""}`;
    if (p.bytesPerSecond > 0) text += ` · ${(p.bytesPerSecond / 1e6).toFixed(1)} MB/s`;
    if (Number.isFinite(p.etaSeconds)) text += ` · ${Math.ceil(p.etaSeconds)} s left`;
  }
  ui.progressText.textContent = text;
}

// The engine, started again if its worker crashed.
async function liveEngine(): Promise<Engine | null> {
  if (engine?.alive) return engine;
  ui.runtime.textContent = "starting the engine…";
  try {
    engine = await createEngine(engineOptions);
  } catch (e) {
    ui.runtime.textContent = "the engine did not start";
    showError(describeError(e));
    return null;
  }
  (window as unknown as { smolinfer: { engine: Engine } }).smolinfer = { engine };
  updateRuntime();
  return engine;
}

/** `chatTemplate`: used instead of the file's (the tools panel's tool-template.jinja). */
async function loadModel(source: ModelSource, chatTemplate?: string): Promise<void> {
  showError(null);
  loading = new AbortController();
  setBusy("loading");
  const engine = await liveEngine();
  if (!engine) {
    loading = null;
    setBusy("idle");
    return;
  }
  ui.modelStatus.textContent = "Loading…";
  showProgress({ phase: "download", loaded: 0, total: 0, bytesPerSecond: 0, etaSeconds: NaN });
  try {
    loadedSource = null;
    tools.setModel(null, false);
    const info = await engine.load(source, { signal: loading.signal, onProgress: showProgress, flashAttention, chatTemplate });
    loadedSource = source;
    tools.setModel(info, chatTemplate !== undefined);
    const local = source instanceof Blob || Array.isArray(source);
    const origin = info.fromCache ? "from the saved copy" : local ? "from your file" : "downloaded";
    const files = info.parts > 1 ? ` in ${info.parts} parts` : "";
    ui.modelStatus.textContent =
      `${info.name || "Model"} · ${describeModel(info)} · ${mb(info.fileBytes)}${files} · ` +
      `context ${info.contextSize} · flash attention ${info.flashAttention ? "on" : "off"} · ${origin}` +
      (chatTemplate !== undefined ? " · the page's tool template" : "");
    for (const w of info.warnings) ui.modelStatus.textContent += ` · note: ${w}`;
    conversation = [];
    renderConversation();
    search.reset();
    ui.empty.textContent = info.encoder
      ? "This is an embedding model: it makes embeddings, not text. Try the semantic search above."
      : "Ask something.";
    if (info.encoder) (ui.search as HTMLDetailsElement).open = true;
  } catch (e) {
    if (e instanceof EngineError && e.code === "aborted") {
      ui.modelStatus.textContent = "Loading cancelled. No model loaded.";
    } else {
      ui.modelStatus.textContent = "No model loaded.";
      showError(describeError(e));
    }
  } finally {
    loading = null;
    setBusy("idle");
    updateRuntime();
  }
}

async function listServerModels(): Promise<void> {
  try {
    const response = await fetch("/models/index.json");
    if (response.ok) {
      const list = (await response.json()) as { models?: ServerModel[] };
      serverModels = (list.models ?? []).filter((m) => m && typeof m.url === "string");
    }
  } catch {
    serverModels = []; // no local server listing: only the hub, URLs and files
  }
  ui.source.innerHTML = "";
  const add = (value: string, label: string) => ui.source.add(new Option(label, value));
  serverModels.forEach((m, i) => {
    const about = m.size ? ` (${mb(m.size)})` : m.parts ? ` (${m.parts} parts)` : "";
    add(`server:${i}`, `${m.name}${about} — this server`);
  });
  add("hub", HUB_MODEL.label);
  add("url", "A model URL…");
  add("file", "A file on this device…");
  onSourceChange();
}

function onSourceChange(): void {
  ui.urlRow.hidden = ui.source.value !== "url";
  ui.fileRow.hidden = ui.source.value !== "file";
}

// ---------------------------------------------------------------- chat

function bubble(role: Turn["role"], text: string): HTMLElement {
  const div = document.createElement("div");
  div.className = `message ${role}`;
  div.textContent = text;
  ui.messages.append(div);
  ui.messages.scrollTop = ui.messages.scrollHeight;
  return div;
}

// A call the model made, and what the tool answered (tools-panel.ts; "error: ..." when it failed).
function toolBubble(name: string, args: string, result: string): void {
  const div = bubble("tool", "");
  const call = document.createElement("code");
  call.className = "call";
  call.textContent = `${name}(${args})`;
  const out = document.createElement("span");
  out.className = result.startsWith("error: ") ? "result failed" : "result";
  out.textContent = result;
  div.append(call, " → ", out);
}

const textOf = (content: Turn["content"]): string => (typeof content === "string" ? content : (content ?? []).map((p) => p.text).join(""));

function renderConversation(): void {
  ui.messages.querySelectorAll(".message").forEach((n) => n.remove());
  ui.empty.hidden = conversation.length > 0;
  for (const m of conversation) {
    if (m.role === "tool") continue; // shown with its call
    const text = textOf(m.content);
    if (m.role === "assistant" && m.tool_calls) {
      if (text) bubble("assistant", text);
      for (const c of m.tool_calls) {
        const result = conversation.find((t) => t.role === "tool" && t.tool_call_id === c.id);
        toolBubble(c.function.name, c.function.arguments, result ? textOf(result.content) : "");
      }
      continue;
    }
    const b = bubble(m.role, text);
    if (m.role === "assistant") showAsJson(b, text);
  }
}

function readOptions() {
  const num = (input: HTMLInputElement) => (input.value.trim() === "" ? undefined : Number(input.value));
  const seed = num(ui.seed);
  return {
    temperature: num(ui.temperature),
    topK: num(ui.topK),
    topP: num(ui.topP),
    minP: num(ui.minP),
    repeatPenalty: num(ui.repeatPenalty),
    maxTokens: num(ui.maxTokens),
    seed: seed ?? Math.floor(Math.random() * 2 ** 31),
  };
}

// The settings as chat.completions.create's fields.
function sampling(o: ReturnType<typeof readOptions>): Sampling {
  return {
    temperature: o.temperature,
    top_k: o.topK,
    top_p: o.topP,
    min_p: o.minP,
    repeat_penalty: o.repeatPenalty,
    max_tokens: o.maxTokens,
    seed: o.seed,
  };
}

// The schema box as an object, or an error message.
function readSchema(): Record<string, unknown> | string {
  try {
    const schema: unknown = JSON.parse(ui.schema.value);
    if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return "The JSON Schema must be an object.";
    return schema as Record<string, unknown>;
  } catch (e) {
    return `The JSON Schema is not valid JSON: ${(e as Error).message}`;
  }
}

// The turns as chat() takes them, or null when some called tools or answer a call.
function plainMessages(turns: Turn[]): ChatMessage[] | null {
  const plain: ChatMessage[] = [];
  for (const t of turns) {
    if (t.role === "tool" || (t.role === "assistant" && t.tool_calls) || typeof t.content !== "string") return null;
    plain.push({ role: t.role, content: t.content });
  }
  return plain;
}

// The answer's pieces: with the tools switch on, the tools panel's round
// trip; else chat() as is, or (the JSON switch on, or earlier tool turns)
// OpenAI's chat completion chunks, with response_format json_schema.
async function* answerPieces(messages: Turn[], signal: AbortSignal, onRound: (round: ToolRound) => void): AsyncGenerator<string> {
  const o = readOptions();
  if (tools.on) {
    yield* tools.answer(messages, sampling(o), signal, onRound);
    return;
  }
  const plain = plainMessages(messages);
  if (!ui.jsonMode.checked && plain) {
    yield* engine!.chat(plain, { ...o, signal });
    return;
  }
  const schema = ui.jsonMode.checked ? readSchema() : undefined;
  if (typeof schema === "string") throw new EngineError("bad_input", schema);
  const chunks = await engine!.chat.completions.create(
    {
      messages,
      stream: true,
      ...sampling(o),
      response_format: schema && { type: "json_schema", json_schema: { name: "answer", schema, strict: true } },
    },
    { signal },
  );
  for await (const chunk of chunks) {
    const text = chunk.choices[0]?.delta.content;
    if (text) yield text;
  }
}

// An answer that parses as JSON, shown pretty-printed.
function showAsJson(out: HTMLElement, text: string): void {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return;
  }
  if (typeof value !== "object" || value === null) return;
  const pre = document.createElement("pre");
  pre.className = "json";
  pre.textContent = JSON.stringify(value, null, 2);
  out.replaceChildren(pre);
}

async function answer(): Promise<void> {
  if (!engine) return;
  showError(null);
  ui.empty.hidden = true;
  const system = ui.system.value.trim();
  const messages: Turn[] = system ? [{ role: "system", content: system }, ...conversation] : [...conversation];
  let out = bubble("assistant", "");
  out.classList.add("streaming");
  generating = new AbortController();
  setBusy("generating");
  let text = "";
  let pieces = 0;
  let first = 0;
  let stopped = false;
  // Each round of tool calls: its text (if any) stays, the calls and results
  // follow, and the next request's answer streams into a new bubble.
  const toolTurns: Turn[] = [];
  const onRound = (round: ToolRound) => {
    out.classList.remove("streaming");
    if (!text) out.remove();
    for (const c of round.calls) toolBubble(c.name, c.arguments, c.result);
    toolTurns.push(...round.messages);
    out = bubble("assistant", "");
    out.classList.add("streaming");
    text = "";
  };
  try {
    for await (const piece of answerPieces(messages, generating.signal, onRound)) {
      text += piece;
      pieces++;
      if (!first) first = performance.now();
      out.textContent = text;
      ui.messages.scrollTop = ui.messages.scrollHeight;
      const seconds = (performance.now() - first) / 1000;
      if (seconds > 0.2) ui.stats.textContent = `generating · ${(pieces / seconds).toFixed(1)} tokens/s`;
    }
  } catch (e) {
    if (e instanceof EngineError && e.code === "aborted") stopped = true;
    else showError(describeError(e));
  } finally {
    out.classList.remove("streaming");
    generating = null;
  }
  conversation.push(...toolTurns, { role: "assistant", content: text });
  showAsJson(out, text);
  if (!engine.alive) ui.modelStatus.textContent = "No model loaded (the engine stopped).";
  const s = engine.stats();
  const meta = document.createElement("span");
  meta.className = "meta";
  meta.textContent = `${stopped ? "stopped · " : ""}${s.generatedTokens} tokens · ${s.decodeTps.toFixed(1)} tokens/s`;
  out.append(meta);
  ui.stats.textContent =
    `prompt ${s.promptTokens} tokens (${s.reusedTokens} reused) at ${s.prefillTps.toFixed(1)} tokens/s · ` +
    `generated ${s.generatedTokens} at ${s.decodeTps.toFixed(1)} tokens/s · ${s.threads} thread${s.threads > 1 ? "s" : ""} · ` +
    `memory ${mb(s.memoryBytes)}`;
  updateRuntime();
  setBusy("idle");
}

// Why an answer cannot be asked for with the switches as they are, or null.
function blocked(): string | null {
  if (!tools.on) return null;
  if (ui.jsonMode.checked) return "JSON output and tools do not go together (a request takes one or the other): switch one off.";
  return tools.problem();
}

async function send(): Promise<void> {
  const content = ui.prompt.value.trim();
  if (!content || !engine?.model || generating) return;
  const why = blocked();
  if (why) {
    showError(why);
    return;
  }
  ui.prompt.value = "";
  conversation.push({ role: "user", content });
  bubble("user", content);
  await answer();
}

async function regenerate(): Promise<void> {
  if (generating || conversation.at(-1)?.role !== "assistant") return;
  const why = blocked();
  if (why) {
    showError(why);
    return;
  }
  // The answer goes, with the rounds of tool calls that led to it: back to the last user turn.
  conversation = conversation.slice(0, conversation.map((m) => m.role).lastIndexOf("user") + 1);
  renderConversation();
  await answer();
}

// ---------------------------------------------------------------- wiring

function wire(): void {
  ui.source.addEventListener("change", onSourceChange);
  ui.file.addEventListener("change", () => {
    const n = ui.file.files?.length ?? 0;
    ui.fileName.textContent = n > 1 ? `${n} files (a split model)` : ui.file.files?.[0]?.name ?? "Choose a .gguf file";
  });
  ui.load.addEventListener("click", () => {
    const source = selectedSource();
    if (!source) {
      showError(ui.source.value === "file" ? "Choose a file first." : "Enter a model URL first.");
      return;
    }
    void loadModel(source);
  });
  ui.cancelLoad.addEventListener("click", () => loading?.abort());
  ui.clearCache.addEventListener("click", async () => {
    const engine = await liveEngine();
    if (!engine) return;
    await engine.clearCache();
    ui.modelStatus.textContent = `${ui.modelStatus.textContent} · saved models cleared`;
  });
  ui.composer.addEventListener("submit", (e) => {
    e.preventDefault();
    void send();
  });
  ui.prompt.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      void send();
    }
  });
  ui.stop.addEventListener("click", () => generating?.abort());
  ui.schema.value = JSON.stringify(DEFAULT_SCHEMA, null, 2);
  ui.jsonMode.addEventListener("change", () => (ui.schemaRow.hidden = !ui.jsonMode.checked));
  ui.regenerate.addEventListener("click", () => void regenerate());
  ui.newChat.addEventListener("click", () => {
    if (generating) return;
    conversation = [];
    renderConversation();
    ui.stats.textContent = "";
    setBusy("idle");
  });
  let dragDepth = 0;
  window.addEventListener("dragenter", (e) => {
    if (e.dataTransfer?.types.includes("Files")) {
      dragDepth++;
      ui.drop.hidden = false;
    }
  });
  window.addEventListener("dragleave", () => {
    if (--dragDepth <= 0) ui.drop.hidden = true;
  });
  window.addEventListener("dragover", (e) => e.preventDefault());
  window.addEventListener("drop", (e) => {
    e.preventDefault();
    dragDepth = 0;
    ui.drop.hidden = true;
    const files = pickedFiles(e.dataTransfer?.files);
    if (files && !loading && !generating) void loadModel(files);
  });
}

async function main(): Promise<void> {
  wire();
  setBusy("loading");
  ui.progress.hidden = true;
  const params = new URLSearchParams(location.search);
  const simd = params.get("simd");
  engineOptions = {
    threads: params.has("threads") ? Number(params.get("threads")) : undefined,
    exact: params.get("exact") === "1",
    simd: simd === "relaxed" || simd === "simd128" ? simd : undefined,
  };
  const fa = params.get("fa");
  flashAttention = fa === "on" || fa === "off" || fa === "auto" ? fa : undefined;
  if (!(await liveEngine())) return;
  await listServerModels();
  setBusy("idle");
  // A model this server offers is the obvious one: load it right away.
  if (serverModels.length > 0 && params.get("autoload") !== "0") {
    const source = selectedSource();
    if (source) await loadModel(source);
  }
}

void main();
