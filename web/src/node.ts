// smolinfer in Node.js (>= 20): the browser's API (engine.ts), with the
// engine in a worker thread.
//
//   import { createEngine } from "smolinfer";
//   const engine = await createEngine({ exact: true });
//   await engine.load("./SmolLM2-135M-Instruct.Q4_1.gguf");   // a path, a URL or bytes
//   for await (const piece of engine.generate("The capital of France is", { maxTokens: 16, temperature: 0 })) {
//     process.stdout.write(piece);
//   }
//
// Models loaded from http(s) URLs are saved in the command-line tool's cache
// directory (node-model-store.ts). Threads are worker threads sharing the
// engine's memory. The relaxed-SIMD build runs where Node has relaxed SIMD
// (22 and later); elsewhere the plain SIMD128 one. The worker thread holds
// the process only while a request is pending: a script ends by itself
// once its last call has settled, with or without unload().
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";

import { wasmAssets } from "./assets.js";
import { type CreateEngineOptions, type Engine, type WorkerPort, startEngine } from "./engine.js";
import type { BuildName, WasmAssets } from "./protocol.js";

export * from "./engine.js";

function nodePort(worker: Worker): WorkerPort {
  worker.unref();
  return {
    postMessage: (request) => worker.postMessage(request),
    // Node ends a worker's own worker threads with it, at once.
    terminate: () => void worker.terminate(),
    connect: (message, failed) => {
      worker.removeAllListeners();
      worker.on("message", message);
      worker.on("error", (e) => failed(e instanceof Error ? e.message : String(e)));
      worker.on("messageerror", () => failed("a message from it could not be read"));
      worker.on("exit", (code) => failed(`its thread exited (code ${code})`));
    },
    busy: (pending) => (pending ? worker.ref() : worker.unref()),
  };
}

// Node's Worker takes the threads' script by path, and as CommonJS: the
// package ships it as .cjs too (this package is "type": "module").
function nodeAssets(): Record<BuildName, WasmAssets> {
  const all = wasmAssets();
  for (const assets of Object.values(all)) {
    if (assets.pthread) assets.pthread = assets.pthread.replace(/\.js$/, ".cjs");
  }
  return all;
}

// A string that is not an http(s): or file: URL is a local path.
function localPath(source: string): string | undefined {
  if (/^https?:\/\//i.test(source)) return undefined;
  if (/^file:/i.test(source)) return fileURLToPath(source);
  return path.resolve(source);
}

/** Starts the engine in a worker thread. */
export async function createEngine(options: CreateEngineOptions = {}): Promise<Engine> {
  // The worker inherits node's flags but for --input-type, which names how
  // the main script is read and makes a worker fail to start.
  const execArgv = process.execArgv.filter((a) => !a.startsWith("--input-type"));
  const worker = new Worker(new URL("./node-worker.js", import.meta.url), { name: "smolinfer", execArgv });
  return startEngine(
    {
      port: nodePort(worker),
      defaultThreads: Math.min(os.availableParallelism(), 4),
      assets: nodeAssets(),
      baseUrl: pathToFileURL(process.cwd() + path.sep).href,
      path: localPath,
    },
    options,
  );
}
