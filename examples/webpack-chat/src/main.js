// @ts-check
// A chat page on smolinfer, bundled by webpack with its defaults: load a
// GGUF model by URL, then talk to it; the answer streams in OpenAI's
// chat-completion shape. ?model=URL loads that model at once, and
// ?prompt=TEXT then sends one message (how the tests drive it);
// ?max_tokens=N caps each answer.
import { createEngine } from "smolinfer";

/** @typedef {import("smolinfer").ChatMessage} ChatMessage */

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const status = $("status");
const log = $("log");
const modelInput = /** @type {HTMLInputElement} */ ($("model"));
const promptInput = /** @type {HTMLInputElement} */ ($("prompt"));
const send = /** @type {HTMLButtonElement} */ ($("send"));
const params = new URLSearchParams(location.search);
const maxTokens = Number(params.get("max_tokens") ?? 256);

/** @param {"user" | "assistant"} role @param {string} text */
function say(role, text) {
  const p = document.createElement("p");
  p.className = role;
  p.textContent = text;
  log.append(p);
  return p;
}

async function main() {
  // One thread unless the page is cross-origin isolated (COOP/COEP headers).
  const engine = await createEngine({ exact: true });
  /** @type {ChatMessage[]} */
  const history = [];

  /** @param {string} url */
  async function load(url) {
    promptInput.disabled = send.disabled = true;
    try {
      const info = await engine.load(url, {
        onProgress: (p) => (status.textContent = `${p.phase}: ${(p.loaded / 1e6).toFixed(0)} of ${(p.total / 1e6).toFixed(0)} MB`),
      });
      status.textContent = `${info.name} (${info.quantization}), ${info.threads} thread(s), ${engine.build}`;
      promptInput.disabled = send.disabled = false;
    } catch (e) {
      status.textContent = `Could not load the model: ${/** @type {Error} */ (e).message}`;
    }
  }

  /** @param {string} text */
  async function ask(text) {
    history.push({ role: "user", content: text });
    say("user", text);
    const answer = say("assistant", "");
    const stream = await engine.chat.completions.create({ messages: history, stream: true, temperature: 0, max_tokens: maxTokens });
    for await (const chunk of stream) answer.textContent += chunk.choices[0]?.delta?.content ?? "";
    history.push({ role: "assistant", content: answer.textContent ?? "" });
    return answer.textContent ?? "";
  }

  /** @type {HTMLFormElement} */ ($("load-form")).onsubmit = (e) => {
    e.preventDefault();
    void load(modelInput.value);
  };
  /** @type {HTMLFormElement} */ ($("ask-form")).onsubmit = (e) => {
    e.preventDefault();
    const text = promptInput.value;
    promptInput.value = "";
    ask(text).catch((err) => (status.textContent = `Failed: ${err.message}`));
  };

  const model = params.get("model");
  if (model) {
    modelInput.value = model;
    await load(model);
    const prompt = params.get("prompt");
    if (prompt && engine.model) {
      document.body.dataset.reply = await ask(prompt);
      document.body.dataset.threads = String(engine.stats().threads);
    }
  }
  document.body.dataset.ready = "1";
}

main().catch((e) => (status.textContent = `The engine did not start: ${e.message}`));
