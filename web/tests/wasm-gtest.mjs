// Runs a GoogleTest suite compiled to WebAssembly (web/wasm/CMakeLists.txt:
// kernel-tests-*, golden-tests-*) under Node: the suite sees this process's
// SMOLINFER_* and GTEST_* variables, prints GoogleTest's output, and this
// process exits with its status.
//
//   node [--experimental-wasm-relaxed-simd --no-liftoff] web/tests/wasm-gtest.mjs SUITE.mjs
//
// Node 20 needs both flags for the relaxed-SIMD suites: without the first it
// has no relaxed SIMD, and its baseline compiler (Liftoff) gets
// i32x4.relaxed_dot_i8x16_i7x16_add_s wrong (Chromium does not).
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

const suite = process.argv[2];
if (!suite) {
  console.error("usage: node web/tests/wasm-gtest.mjs SUITE.mjs");
  process.exit(2);
}

// Emscripten 3.1.6's ES-module output expects CommonJS names under Node.
globalThis.require ??= createRequire(import.meta.url);
globalThis.__dirname ??= path.dirname(path.resolve(suite));

let status = null;
const { default: factory } = await import(path.resolve(suite));
try {
  await factory({
    wasmBinary: fs.readFileSync(path.resolve(suite).replace(/\.mjs$/, ".wasm")),
    preRun: [
      (module) => {
        // The suites are compiled without the clone's path (web/wasm/CMakeLists.txt).
        module.ENV.SMOLINFER_GOLDEN_DIR = path.join(repoRoot, "tests", "golden");
        for (const [k, v] of Object.entries(process.env)) {
          if (k.startsWith("SMOLINFER_") || k.startsWith("GTEST_")) module.ENV[k] = v;
        }
      },
    ],
    onExit: (code) => (status = code),
    print: (line) => console.log(line),
    printErr: (line) => console.error(line),
  });
} catch (e) {
  // EXIT_RUNTIME throws its ExitStatus out of the factory.
  if (status === null) {
    console.error(`${path.basename(suite)}: ${e?.message ?? e}`);
    status = 1;
  }
}
process.exit(status ?? 1);
