// `make package`: the npm package smolinfer from the assembled site
// (web/build.mjs): the library's modules and types, both workers and the
// four WebAssembly builds under dist/, this folder's README.md, and a
// package.json whose version is the project's (CMakeLists.txt). Packs it
// with `npm pack` into build/npm/smolinfer-<version>.tgz: exactly what
// `npm publish` would ship. Prints the tarball's path last.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..");
const site = path.join(root, "build", "web", "site");
const out = path.join(root, "build", "npm");
const pkg = path.join(out, "package");

const cmake = fs.readFileSync(path.join(root, "CMakeLists.txt"), "utf8");
const version = /project\(smolinfer VERSION (\d+\.\d+\.\d+)/.exec(cmake)?.[1];
if (!version) throw new Error("pack.mjs: no 'project(smolinfer VERSION x.y.z' in CMakeLists.txt");
if (!fs.existsSync(path.join(site, "smolinfer.js"))) {
  console.error("pack.mjs: no build/web/site/smolinfer.js: run 'make web' first");
  process.exit(1);
}

// The page (app.*, index.html, style.css) stays out, and so does
// wasm-features.js, which the worker bundles (the site has it for its Node
// test); every other module is in.
const page = new Set(["app.js", "app.d.ts", "index.html", "style.css", "wasm-features.js", "wasm-features.d.ts"]);
fs.rmSync(pkg, { recursive: true, force: true });
fs.mkdirSync(path.join(pkg, "dist", "wasm"), { recursive: true });
for (const f of fs.readdirSync(site)) {
  if (page.has(f) || !/\.(js|d\.ts)$/.test(f)) continue;
  fs.copyFileSync(path.join(site, f), path.join(pkg, "dist", f));
}
for (const f of fs.readdirSync(path.join(site, "wasm"))) {
  fs.copyFileSync(path.join(site, "wasm", f), path.join(pkg, "dist", "wasm", f));
}
fs.copyFileSync(path.join(here, "README.md"), path.join(pkg, "README.md"));

const manifest = {
  name: "smolinfer",
  version,
  description:
    "Small GGUF language models (SmolLM2, Gemma 3, Qwen, Llama, Phi) in the browser and in Node.js: " +
    "WebAssembly, token for token what llama.cpp computes, with an OpenAI-shaped API",
  keywords: ["llm", "gguf", "webassembly", "wasm", "inference", "llama.cpp", "smollm2", "gemma", "openai", "browser", "node"],
  type: "module",
  license: "UNLICENSED",
  engines: { node: ">=20" },
  exports: {
    ".": {
      types: "./dist/smolinfer.d.ts",
      node: "./dist/node.js",
      browser: "./dist/smolinfer.js",
      default: "./dist/smolinfer.js",
    },
    "./package.json": "./package.json",
  },
  main: "./dist/node.js",
  browser: "./dist/smolinfer.js",
  types: "./dist/smolinfer.d.ts",
  files: ["dist"],
  sideEffects: false,
};
fs.writeFileSync(path.join(pkg, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);

for (const f of fs.readdirSync(out)) if (f.endsWith(".tgz")) fs.rmSync(path.join(out, f));
const packed = JSON.parse(
  execFileSync("npm", ["pack", "--json", "--pack-destination", out], { cwd: pkg, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }),
)[0];
const tarball = path.join(out, packed.filename);
console.log(`pack.mjs: ${packed.entryCount} files, ${(packed.size / 1e6).toFixed(2)} MB packed, ${(packed.unpackedSize / 1e6).toFixed(2)} MB unpacked`);
console.log(tarball);
