// A chat page on smolinfer: load a GGUF model by URL, then talk to it. The
// answer streams in OpenAI's chat-completion shape. ?model=URL loads that
// model at once, and ?prompt=TEXT then sends one message (how the tests
// drive it); ?max_tokens=N caps each answer.
import { type ChatMessage, createEngine } from "smolinfer";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const status = $<HTMLParagraphElement>("status");
const log = $<HTMLDivElement>("log");
const modelInput = $<HTMLInputElement>("model");
const promptInput = $<HTMLInputElement>("prompt");
const send = $<HTMLButtonElement>("send");
const params = new URLSearchParams(location.search);
const maxTokens = Number(params.get("max_tokens") ?? 256);

// One thread unless the page is cross-origin isolated (COOP/COEP headers).
const engine = await createEngine({ exact: true });
const history: ChatMessage[] = [];

function say(role: "user" | "assistant", text: string): HTMLParagraphElement {
  const p = document.createElement("p");
  p.className = role;
  p.textContent = text;
  log.append(p);
  return p;
}

async function load(url: string): Promise<void> {
  promptInput.disabled = send.disabled = true;
  try {
    const info = await engine.load(url, {
      onProgress: (p) => (status.textContent = `${p.phase}: ${(p.loaded / 1e6).toFixed(0)} of ${(p.total / 1e6).toFixed(0)} MB`),
    });
    status.textContent = `${info.name} (${info.quantization}), ${info.threads} thread(s), ${engine.build}`;
    promptInput.disabled = send.disabled = false;
  } catch (e) {
    status.textContent = `Could not load the model: ${(e as Error).message}`;
  }
}

async function ask(text: string): Promise<string> {
  history.push({ role: "user", content: text });
  say("user", text);
  const answer = say("assistant", "");
  const stream = await engine.chat.completions.create({ messages: history, stream: true, temperature: 0, max_tokens: maxTokens });
  for await (const chunk of stream) answer.textContent += chunk.choices[0]?.delta?.content ?? "";
  history.push({ role: "assistant", content: answer.textContent ?? "" });
  return answer.textContent ?? "";
}

$<HTMLFormElement>("load-form").onsubmit = (e) => {
  e.preventDefault();
  void load(modelInput.value);
};
$<HTMLFormElement>("ask-form").onsubmit = (e) => {
  e.preventDefault();
  const text = promptInput.value;
  promptInput.value = "";
  void ask(text).catch((err: Error) => (status.textContent = `Failed: ${err.message}`));
};

const model = params.get("model");
if (model) {
  modelInput.value = model;
  await load(model);
  const prompt = params.get("prompt");
  if (prompt && engine.model) {
    const reply = await ask(prompt);
    document.body.dataset.reply = reply;
    document.body.dataset.threads = String(engine.stats().threads);
  }
}
document.body.dataset.ready = "1";
