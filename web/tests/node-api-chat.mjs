// Runs chat.completions.create requests through the Node API
// (build/web/site/node.js: the engine in its worker thread) for
// node-tools.test.mjs, in a process of its own: Node refuses a worker whose
// process was started with V8 flags. Node 20 runs relaxed SIMD only with
// them (see wasm-gtest.mjs), so they are set here, before any WebAssembly is
// compiled (process-wide: the worker's engine is then the relaxed build, as
// in Chromium; the plain SIMD128 build is about five times slower).
//   node node-api-chat.mjs MODEL TEMPLATE < requests.json
// prints, per request, its answer (with stream: true, the list of chunks)
// or { error: { code, message } }.
import fs from "node:fs";
import path from "node:path";
import v8 from "node:v8";

import { repoRoot } from "./wasm-module.mjs";

v8.setFlagsFromString("--experimental-wasm-relaxed-simd");
v8.setFlagsFromString("--no-liftoff");

const [model, template] = process.argv.slice(2);
const requests = JSON.parse(fs.readFileSync(0, "utf8"));
const { createEngine } = await import(path.join(repoRoot, "build", "web", "site", "node.js"));
const engine = await createEngine({ threads: 1, exact: true });
if (engine.build !== "st-relaxed") throw new Error(`the engine runs the ${engine.build} build, not st-relaxed`);
await engine.load(model, { contextSize: requests.contextSize, chatTemplate: fs.readFileSync(template, "utf8") });
const out = [];
for (const request of requests.list) {
  try {
    const r = await engine.chat.completions.create(request);
    if (!request.stream) out.push(r);
    else {
      const chunks = [];
      for await (const c of r) chunks.push(c);
      out.push(chunks);
    }
  } catch (e) {
    out.push({ error: { code: e.code, message: e.message } });
  }
}
process.stdout.write(JSON.stringify(out));
engine.terminate();
