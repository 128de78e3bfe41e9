// smolinfer in the browser. The engine runs in a Web Worker; this module is
// its typed front (engine.ts):
//
//   import { createEngine } from "smolinfer";
//   const engine = await createEngine();
//   await engine.load("/models/SmolLM2-135M-Instruct.Q4_1.gguf", { onProgress: (p) => console.log(p) });
//   for await (const piece of engine.chat([{ role: "user", content: "Hi!" }], { temperature: 0 })) {
//     output.textContent += piece;
//   }
//
// The same engine in OpenAI's shape (openai-types.ts):
//   const answer = await engine.chat.completions.create({ messages: [{ role: "user", content: "Hi!" }] });
//   for await (const chunk of await engine.chat.completions.create({ messages, stream: true })) { ... }
//
// Every method rejects with an EngineError whose `code` says what went
// wrong: not_loaded, busy, aborted, bad_model, network, out_of_memory,
// bad_input, crashed (the worker died: create a new engine), internal.
import { wasmAssets, workerUrl } from "./assets.js";
import { type CreateEngineOptions, type Engine, type WorkerPort, startEngine } from "./engine.js";

export * from "./engine.js";

function browserPort(worker: Worker): WorkerPort {
  return {
    postMessage: (request) => worker.postMessage(request),
    terminate: () => worker.terminate(),
    connect: (message, failed) => {
      worker.onmessage = (e) => message(e.data);
      worker.onerror = (e) => {
        e.preventDefault();
        failed(e.message || "an uncaught error");
      };
      worker.onmessageerror = () => failed("a message from it could not be read");
    },
  };
}

/** Starts the engine's worker (threads when the page is cross-origin isolated). */
export async function createEngine(options: CreateEngineOptions = {}): Promise<Engine> {
  const hardware = typeof navigator !== "undefined" ? navigator.hardwareConcurrency || 1 : 1;
  const worker = new Worker(workerUrl(), { type: "module", name: "smolinfer" });
  return startEngine(
    {
      port: browserPort(worker),
      defaultThreads: Math.min(hardware, 4),
      assets: wasmAssets(),
      baseUrl: typeof document !== "undefined" ? document.baseURI : globalThis.location?.href ?? "",
    },
    options,
  );
}
