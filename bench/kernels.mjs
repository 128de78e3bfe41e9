// The WebAssembly kernel benchmark (bench/kernel_bench.cpp, built by
// `make bench` as build/wasm-st/wasm/kernel-bench-{simd128,relaxed}.mjs) in
// headless Chromium, where the engine runs for real, and optionally in Node.
// Nanoseconds per weight block, the best of KERNEL_BENCH_REPS samples (10).
//
//   node bench/kernels.mjs [--node] [--compare OTHER_DIR]
//
// --compare runs the same benchmark from another build directory (e.g. a
// copy of build/wasm-st/wasm from before a change) interleaved with this
// one, and prints the ratio per kernel.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const args = process.argv.slice(2);
const inNode = args.includes("--node");
const compare = args.includes("--compare") ? path.resolve(args[args.indexOf("--compare") + 1]) : null;
const dirs = [path.join(repo, "build", "wasm-st", "wasm"), ...(compare ? [compare] : [])];
const flavours = ["relaxed", "simd128"];
const reps = process.env.KERNEL_BENCH_REPS ?? "10";

for (const dir of dirs) {
  for (const f of flavours) {
    if (!fs.existsSync(path.join(dir, `kernel-bench-${f}.mjs`))) throw new Error(`no ${dir}/kernel-bench-${f}.mjs (make bench builds it)`);
  }
}

function serve(dirList) {
  const server = http.createServer((req, res) => {
    if (req.url === "/") {
      res.writeHead(200, { "Content-Type": "text/html" }).end("<!doctype html><title>kernels</title>");
      return;
    }
    const [, index, name] = req.url.match(/^\/(\d+)\/([\w.-]+)$/) ?? [];
    const file = index !== undefined ? path.join(dirList[Number(index)], name) : null;
    if (!file || !fs.existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    const type = file.endsWith(".wasm") ? "application/wasm" : file.endsWith(".mjs") ? "text/javascript" : "text/html";
    res.writeHead(200, { "Content-Type": type }).end(fs.readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const parse = (text) =>
  text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));

async function runChromium(page, origin, index, flavour) {
  return page.evaluate(
    async ({ url, reps }) => {
      const lines = [];
      const { default: factory } = await import(url);
      await factory({ print: (l) => lines.push(l), printErr: () => {}, preRun: [(m) => (m.ENV.KERNEL_BENCH_REPS = reps)] });
      return lines.join("\n");
    },
    { url: `${origin}/${index}/kernel-bench-${flavour}.mjs`, reps },
  );
}

function runNode(dir, flavour) {
  const flags = flavour === "relaxed" ? ["--experimental-wasm-relaxed-simd", "--no-liftoff"] : [];
  return execFileSync(process.execPath, [...flags, "--no-experimental-fetch", "--input-type=module", "-e",
    `import f from ${JSON.stringify(path.join(dir, `kernel-bench-${flavour}.mjs`))}; await f({ preRun: [(m) => (m.ENV.KERNEL_BENCH_REPS = ${JSON.stringify(reps)})] });`],
  { encoding: "utf8" });
}

const server = await serve(dirs);
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const results = []; // [dirIndex][key] = best ns
try {
  const page = await browser.newPage();
  await page.goto(`${origin}/`);
  for (let round = 0; round < (compare ? 3 : 1); ++round) {
    for (const [index, dir] of dirs.entries()) {
      for (const flavour of flavours) {
        const text = inNode ? runNode(dir, flavour) : await runChromium(page, origin, index, flavour);
        for (const r of parse(text)) {
          const key = `${r.kernels} ${r.type} ${r.rows}x${r.cols} t=${r.tokens}`;
          results[index] ??= {};
          results[index][key] = Math.min(results[index][key] ?? Infinity, r.ns_per_block);
        }
      }
    }
  }
} finally {
  await browser.close();
  server.close();
}
const where = inNode ? `Node ${process.version}` : "headless Chromium";
console.log(`ns per weight block (best of ${reps}${compare ? " x 3 rounds" : ""}), ${where}:`);
for (const key of Object.keys(results[0])) {
  const a = results[0][key];
  const line = `${key.padEnd(44)} ${a.toFixed(2).padStart(8)}`;
  if (compare) {
    const b = results[1]?.[key];
    console.log(`${line} ${b?.toFixed(2).padStart(8) ?? "—"}  ${b ? (b / a).toFixed(2) + "x faster" : ""}`);
  } else {
    console.log(line);
  }
}
