// The engine's Web Worker in a browser: messages through `self`, models saved
// in the Origin Private File System, threads where the page is cross-origin
// isolated. The package ships this module bundled into one file (worker.js),
// so that an app's bundler can copy it as it is.
/// <reference lib="webworker" />
import * as store from "./model-store.js";
import type { WasmAssets } from "./protocol.js";
import { serveEngine } from "./worker-core.js";

declare const self: DedicatedWorkerGlobalScope;

// The threads' script as a same-origin blob: a bundler may have inlined the
// small file as a data: URL (an opaque origin, which cannot share memory),
// and renamed the files beside it that Emscripten would look for.
async function threadScript(url: string): Promise<string> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  return URL.createObjectURL(new Blob([await response.text()], { type: "text/javascript" }));
}

async function instantiate(assets: WasmAssets, options: object): Promise<unknown> {
  const factory = (await import(assets.glue)).default as (options: object) => Promise<unknown>;
  const pthread = assets.pthread ? await threadScript(assets.pthread) : "";
  return factory({
    ...options,
    mainScriptUrlOrBlob: assets.glue,
    locateFile: (file: string) => (file.endsWith(".wasm") ? assets.wasm : file.endsWith(".worker.js") ? pthread : file),
  });
}

serveEngine({
  post: (message) => self.postMessage(message),
  listen: (handle) => {
    self.onmessage = (event) => handle(event.data);
  },
  onUnhandledRejection: (handle) => self.addEventListener("unhandledrejection", (event) => handle(event.reason)),
  canThread: self.crossOriginIsolated === true && typeof SharedArrayBuffer !== "undefined",
  store,
  instantiate,
});
