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

// The OpenAI layer's Backend (web/src/openai.ts) on a bare WebAssembly
// engine, driving it the way the worker does (web/src/worker-core.ts): the
// chat rendered with the request's tools, each piece with the engine's
// parse of the answer so far.
export function wasmBackend(engine, EngineError, { modelName, contextSize }) {
  return {
    modelName: () => modelName,
    contextSize: () => contextSize,
    run(input, options, signal) {
      return {
        async *[Symbol.asyncIterator]() {
          const prompt =
            input.kind === "chat" ? engine.chatTokens(input.messages, true, options.tools?.tools ?? []) : engine.tokenize(input.prompt, true, true);
          if (prompt.error) throw new EngineError("bad_input", prompt.error);
          if (signal?.aborted) throw new EngineError("aborted", "aborted by the caller");
          const wire = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
          const started = engine.start(prompt.ids, wire);
          if (started.error) throw new EngineError("bad_input", started.error);
          let finished = false;
          try {
            for (;;) {
              if (signal?.aborted) throw new EngineError("aborted", "aborted by the caller");
              const r = engine.next();
              if (r.error) throw new EngineError("internal", r.error);
              if (r.done) {
                finished = true;
                yield { type: "done", stats: r.stats };
                return;
              }
              if (r.text || r.logprobs) yield { type: "piece", text: r.text, logprobs: r.logprobs, tools: r.tools };
              await new Promise((resolve) => setImmediate(resolve));
            }
          } finally {
            if (!finished) engine.cancel();
          }
        },
      };
    },
  };
}
