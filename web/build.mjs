// Assembles the site in build/web/site: the TypeScript (page, public module
// /smolinfer.js with its .d.ts, Node's entry node.js), the engine's two
// workers bundled each into one file (worker.js for browsers, node-worker.js
// for Node), the static page, and the four WebAssembly builds (which `make
// web` compiles first with emcmake). `make package` packs the library part
// of it (web/package/pack.mjs).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const site = path.join(root, "build", "web", "site");

fs.rmSync(site, { recursive: true, force: true });
fs.mkdirSync(path.join(site, "wasm"), { recursive: true });

// Type-checks all three; only the page's project emits (the page, the
// library's modules, and wasm-features.js for its Node test; the workers
// and node.js are esbuild's below).
const tsc = path.join(here, "node_modules", ".bin", "tsc");
for (const config of ["tsconfig.json", "tsconfig.worker.json", "tsconfig.node.json"]) {
  execFileSync(tsc, ["-p", path.join(here, config)], { stdio: "inherit" });
}
const src = (file) => path.join(here, "src", file);
const common = { bundle: true, format: "esm", target: "es2022", logLevel: "warning", legalComments: "none" };
await esbuild.build({ ...common, entryPoints: [src("browser-worker.ts")], outfile: path.join(site, "worker.js"), platform: "browser" });
await esbuild.build({ ...common, entryPoints: [src("node-worker.ts")], outfile: path.join(site, "node-worker.js"), platform: "node" });
// node.ts beside the page's modules, which it imports (engine.js, assets.js, ...).
await esbuild.build({ ...common, bundle: false, entryPoints: [src("node.ts")], outfile: path.join(site, "node.js"), platform: "node" });

// tool-template.jinja: the chat template the page's tools panel loads SmolLM2 with.
for (const file of ["index.html", "style.css", "tool-template.jinja"]) fs.copyFileSync(path.join(here, "demo", file), path.join(site, file));

// Four engines: one-threaded or pthreads, each as plain SIMD128
// (smolinfer-st.*) and relaxed SIMD (smolinfer-st-relaxed.*). The threads'
// script again as .cjs for Node, which reads a .js of this "type": "module"
// package as an ES module.
for (const build of ["st", "mt"]) {
  const dir = path.join(root, "build", `wasm-${build}`, "wasm");
  for (const engine of [`smolinfer-${build}`, `smolinfer-${build}-relaxed`]) {
    const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.startsWith(`${engine}.`)) : [];
    if (!files.some((f) => f.endsWith(".wasm"))) {
      console.error(`build.mjs: ${dir} has no ${engine}.wasm; run 'make web' (it builds the WebAssembly first)`);
      process.exit(1);
    }
    for (const f of files) fs.copyFileSync(path.join(dir, f), path.join(site, "wasm", f));
    if (build === "mt") fs.copyFileSync(path.join(dir, `${engine}.worker.js`), path.join(site, "wasm", `${engine}.worker.cjs`));
  }
}
console.log(`site assembled in ${path.relative(root, site)}`);
