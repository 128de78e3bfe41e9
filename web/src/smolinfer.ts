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
import { DISPOSE_ID, type Request } from "./protocol.js";

export * from "./engine.js";

// Engines being terminated: a new engine starts once they have ended, so
// that two engines never run at once (terminate-then-create, as a page that
// switches builds or models does).
const ending = new Set<Promise<void>>();

function browserPort(worker: Worker): WorkerPort {
  return {
    postMessage: (request) => worker.postMessage(request),
    terminate: (graceful) => {
      if (!graceful) {
        worker.terminate();
        return;
      }
      // The worker ends its session's threads and their workers first
      // (worker-core.ts, "dispose"), then is ended: on its answer, or after
      // 2 s if it is busy or stuck.
      let ended!: () => void;
      const done = new Promise<void>((resolve) => (ended = resolve));
      ending.add(done);
      const end = () => {
        clearTimeout(timer);
        worker.terminate();
        ending.delete(done);
        ended();
      };
      const timer = setTimeout(end, 2000);
      worker.onmessage = (e) => {
        if (e.data?.id === DISPOSE_ID) end();
      };
      worker.onerror = end;
      worker.postMessage({ id: DISPOSE_ID, op: "dispose" } satisfies Request);
    },
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
  await Promise.all(ending);
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
