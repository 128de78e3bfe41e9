// Loads a WebAssembly build of the engine in Node (for the API tests).
// Emscripten 3.1.6's ES-module output expects CommonJS names under Node.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

// build: "st", "st-relaxed", "mt", "mt-relaxed" (smolinfer-<build>.js in build/wasm-st or build/wasm-mt).
export async function loadWasm(build = "st") {
  const dir = path.join(root, "build", `wasm-${build.split("-")[0]}`, "wasm");
  globalThis.require ??= createRequire(import.meta.url);
  globalThis.__dirname ??= dir;
  const { default: factory } = await import(path.join(dir, `smolinfer-${build}.js`));
  return factory({ wasmBinary: fs.readFileSync(path.join(dir, `smolinfer-${build}.wasm`)), print: () => {}, printErr: () => {} });
}

export const repoRoot = root;
