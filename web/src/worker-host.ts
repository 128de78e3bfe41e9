// What the engine's worker (worker-core.ts) needs from where it runs: a browser's
// Web Worker (browser-worker.ts) or a Node.js worker thread (node-worker.ts).
import type { Request, Response, WasmAssets } from "./protocol.js";
import type { ModelStore } from "./stored-model.js";

export interface WorkerHost {
  post(message: Response): void;
  /** Calls `handle` with every request the engine's front sends. */
  listen(handle: (request: Request) => void): void;
  /** Calls `handle` with the reason of every promise nobody handled. */
  onUnhandledRejection(handle: (reason: unknown) => void): void;
  /** Whether threads can share memory here (a cross-origin isolated page, or Node). */
  canThread: boolean;
  store: ModelStore;
  /** Starts one WebAssembly build's Emscripten module from its files. */
  instantiate(assets: WasmAssets, options: { onAbort: (what: unknown) => void }): Promise<unknown>;
  /** A local file by its path; undefined where there are no paths (a browser). */
  openPath?: (path: string) => Promise<Blob>;
}
