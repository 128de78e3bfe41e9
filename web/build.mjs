// Assembles the site in build/web/site: the TypeScript (page, public module
// /smolinfer.js with its .d.ts, worker), the static page, and the two
// WebAssembly builds (which `make web` compiles first with emcmake).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const site = path.join(root, "build", "web", "site");

fs.rmSync(site, { recursive: true, force: true });
fs.mkdirSync(path.join(site, "wasm"), { recursive: true });

const tsc = path.join(here, "node_modules", ".bin", "tsc");
for (const config of ["tsconfig.json", "tsconfig.worker.json"]) {
  execFileSync(tsc, ["-p", path.join(here, config)], { stdio: "inherit" });
}
for (const file of ["index.html", "style.css"]) fs.copyFileSync(path.join(here, "demo", file), path.join(site, file));

// Four engines: one-threaded or pthreads, each as plain SIMD128
// (smolinfer-st.*) and relaxed SIMD (smolinfer-st-relaxed.*).
for (const build of ["st", "mt"]) {
  const dir = path.join(root, "build", `wasm-${build}`, "wasm");
  for (const engine of [`smolinfer-${build}`, `smolinfer-${build}-relaxed`]) {
    const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.startsWith(`${engine}.`)) : [];
    if (!files.some((f) => f.endsWith(".wasm"))) {
      console.error(`build.mjs: ${dir} has no ${engine}.wasm; run 'make web' (it builds the WebAssembly first)`);
      process.exit(1);
    }
    for (const f of files) fs.copyFileSync(path.join(dir, f), path.join(site, "wasm", f));
  }
}
console.log(`site assembled in ${path.relative(root, site)}`);
