// The engine's worker as a Node.js worker thread: messages through
// parentPort, models saved in the command-line tool's cache directory, local
// files by path, threads always (Node shares memory between its workers).
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parentPort } from "node:worker_threads";

import { nodeModelStore } from "./node-model-store.js";
import type { Request, WasmAssets } from "./protocol.js";
import { serveEngine } from "./worker-core.js";

if (!parentPort) throw new Error("node-worker.js runs as the engine's worker thread (createEngine starts it)");
const port = parentPort;

// Emscripten 3.1.6's ES module, under Node, reads these CommonJS names.
function commonJsNames(glue: string): void {
  const g = globalThis as Record<string, unknown>;
  g.require ??= createRequire(glue);
  g.__filename ??= glue;
  g.__dirname ??= path.dirname(glue);
}

async function instantiate(assets: WasmAssets, options: object): Promise<unknown> {
  const glue = fileURLToPath(assets.glue);
  commonJsNames(glue);
  const factory = (await import(assets.glue)).default as (options: object) => Promise<unknown>;
  return factory({
    ...options,
    wasmBinary: await fs.promises.readFile(fileURLToPath(assets.wasm)),
    mainScriptUrlOrBlob: assets.glue,
    // Node's Worker takes a path; the threads' script is CommonJS (.cjs in a "type": "module" package).
    locateFile: (file: string) =>
      file.endsWith(".worker.js") && assets.pthread ? fileURLToPath(assets.pthread) : path.join(path.dirname(glue), file),
  });
}

serveEngine({
  post: (message) => port.postMessage(message),
  listen: (handle) => port.on("message", (request: Request) => handle(request)),
  onUnhandledRejection: (handle) => process.on("unhandledRejection", handle),
  canThread: true,
  store: nodeModelStore,
  instantiate,
  openPath: (file) => fs.openAsBlob(file),
});
