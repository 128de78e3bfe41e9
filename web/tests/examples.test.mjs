// The npm package as a user gets it: the tarball `make package` writes
// (build/npm/smolinfer-<version>.tgz), installed into fresh directories the
// way a user would (`npm install <tarball>` beside the example's own
// Vite 8 / webpack 5 / TypeScript), each example's TypeScript checked under
// `strict` against the packed .d.ts, the two web apps built with their
// bundler's defaults. Each app is served on an origin of its own (plain,
// and cross-origin isolated on another port), the model from a third origin
// that allows it by CORS, and must print the native CLI's greedy chat
// answer in Chromium and in Firefox: one thread on the plain page, two on
// the isolated one (browsers.mjs). The Node example must print the same
// answer and exit by itself.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { BROWSERS, launchBrowser } from "./browsers.mjs";
import { repoRoot } from "./wasm-module.mjs";

const run = promisify(execFile);
const model = process.env.SMOLINFER_MODEL;
if (!model) throw new Error("SMOLINFER_MODEL is not set: run the tests with 'make test', which fetches the model");
const npmDir = path.join(repoRoot, "build", "npm");
const tarball =
  process.env.SMOLINFER_PACKAGE ??
  path.join(npmDir, fs.readdirSync(npmDir, { withFileTypes: true }).find((f) => f.name.endsWith(".tgz"))?.name ?? "none");
const cli = path.join(repoRoot, "build", "native", "smolinfer");

// Not a prompt of any golden file.
const PROMPT = "Name three rivers in Europe.";
const TOKENS = 24;
const expected = JSON.parse(
  execFileSync(cli, ["run", "-m", model, "--chat", "-p", PROMPT, "-n", String(TOKENS), "--temp", "0", "--json"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  }),
).text;

const work = fs.mkdtempSync(path.join(os.tmpdir(), "smolinfer-examples-"));
const apps = {}; // name -> built app directory

// An example copied out of the repository and installed from the tarball.
async function install(name) {
  const dir = path.join(work, name);
  fs.cpSync(path.join(repoRoot, "examples", name), dir, { recursive: true });
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball], { cwd: dir });
  return dir;
}

// A static server for one built app.
function serve(root, headers) {
  const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    const file = path.join(root, url.pathname === "/" ? "index.html" : decodeURIComponent(url.pathname));
    if (!file.startsWith(root + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404, headers).end();
      return;
    }
    res.writeHead(200, { ...headers, "Content-Type": types[path.extname(file)] ?? "application/octet-stream" });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// What the app shows once it is done, with any error the page threw.
async function report(browser, url) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.ready === "1", null, { timeout: 300_000 });
  const r = await page.evaluate(() => ({
    reply: document.body.dataset.reply,
    threads: document.body.dataset.threads,
    status: document.getElementById("status").textContent,
  }));
  await page.close();
  return { ...r, errors };
}

const origin = (server, host = "127.0.0.1") => `http://${host}:${server.address().port}`;
const isolation = { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" };

let modelServer;
const servers = []; // [app, isolated, server]
before(async () => {
  assert.ok(fs.existsSync(tarball), `no package at ${tarball}: run 'make package'`);
  const [vite, webpack] = await Promise.all([install("vite-chat"), install("webpack-chat")]);
  // `npm run build` type-checks first (tsc, strict), then bundles.
  await Promise.all([run("npm", ["run", "build"], { cwd: vite }), run("npm", ["run", "build"], { cwd: webpack })]);
  apps["vite-chat"] = path.join(vite, "dist");
  apps["webpack-chat"] = path.join(webpack, "dist");
  // The model's origin: CORS, as a model hub answers.
  modelServer = await serve(path.dirname(model), { "Access-Control-Allow-Origin": "*" });
  for (const [name, dir] of Object.entries(apps)) {
    servers.push([name, false, await serve(dir, {})]);
    servers.push([name, true, await serve(dir, isolation)]);
  }
});
after(() => {
  modelServer?.close();
  for (const [, , s] of servers) s.close();
  fs.rmSync(work, { recursive: true, force: true });
});

test("the package: what it ships, its exports, npm publish --dry-run", async () => {
  const listing = JSON.parse((await run("npm", ["pack", "--dry-run", "--json", tarball], { cwd: work })).stdout)[0];
  const files = listing.files.map((f) => f.path).sort();
  for (const f of ["package.json", "README.md", "dist/smolinfer.js", "dist/smolinfer.d.ts", "dist/node.js", "dist/worker.js",
    "dist/node-worker.js", "dist/wasm/smolinfer-st.wasm", "dist/wasm/smolinfer-mt-relaxed.worker.cjs"]) {
    assert.ok(files.includes(f), `the package lacks ${f}`);
  }
  for (const f of files) assert.doesNotMatch(f, /(^|\/)(tests?|src|demo)\/|app\.js|\.ts$(?<!\.d\.ts)|\.map$/, `${f} should not ship`);
  const manifest = JSON.parse(fs.readFileSync(path.join(work, "vite-chat", "node_modules", "smolinfer", "package.json"), "utf8"));
  assert.equal(manifest.type, "module");
  assert.deepEqual(Object.keys(manifest.exports["."]), ["types", "node", "browser", "default"]);
  for (const target of Object.values(manifest.exports["."])) {
    assert.ok(files.includes(target.replace(/^\.\//, "")), `exports names ${target}, which is not in the package`);
  }
  // Clean: no warning but the one every dry run without a login gets.
  const dry = await run("npm", ["publish", "--dry-run", tarball], { cwd: work });
  const warnings = dry.stderr.split("\n").filter((l) => /npm (warn|error)/i.test(l) && !/requires you to be logged in/.test(l));
  assert.deepEqual(warnings, [], dry.stderr);
});

test("Node: the example streams the CLI's chat answer and exits by itself", async () => {
  const dir = await install("node-chat");
  await run("npx", ["tsc"], { cwd: dir });
  const started = Date.now();
  const { stdout, stderr } = await run("node", ["stream.mjs", model, PROMPT, String(TOKENS)], { cwd: dir, timeout: 120_000 });
  assert.equal(stdout, `${expected}\n`, stderr);
  assert.match(stderr, /Q4_1, \d thread\(s\), (mt|st)-(relaxed|simd128)/);
  assert.ok(Date.now() - started < 120_000);
});

test("Node: a model from an http URL is saved in the cache directory, loads from it next time, and a leftover is swept", async () => {
  const dir = path.join(work, "node-chat");
  assert.ok(fs.existsSync(path.join(dir, "node_modules", "smolinfer")), "the Node example's install (the test above) is missing");
  const cache = fs.mkdtempSync(path.join(work, "cache-"));
  const downloads = path.join(cache, "downloads");
  fs.mkdirSync(downloads);
  fs.writeFileSync(path.join(downloads, "0123456789abcdef.4242424242.part"), "left by a process that is gone");
  const url = `${origin(modelServer)}/${path.basename(model)}`;
  const script = `
    import { createEngine } from "smolinfer";
    const engine = await createEngine({ threads: 1 });
    const first = await engine.load(process.argv[1]);
    const second = await engine.load(process.argv[1]);
    console.log(JSON.stringify({ first: first.fromCache, second: second.fromCache, sha256: second.sha256 }));`;
  const { stdout } = await run("node", ["--input-type=module", "-e", script, url], {
    cwd: dir,
    env: { ...process.env, SMOLINFER_CACHE: cache },
    timeout: 120_000,
  });
  const r = JSON.parse(stdout);
  assert.deepEqual([r.first, r.second], [false, true]);
  const sha256 = execFileSync("sha256sum", [model], { encoding: "utf8" }).split(" ")[0];
  assert.equal(r.sha256, sha256);
  const names = fs.readdirSync(downloads).sort();
  assert.equal(names.length, 2, `${names}`);
  assert.match(names[0], /^[0-9a-f]{16}\.gguf$/);
  assert.equal(names[1], names[0].replace(/gguf$/, "json"));
  assert.equal(fs.statSync(path.join(downloads, names[0])).size, fs.statSync(model).size);
});

for (const browserName of BROWSERS) {
  test(`${browserName}: the Vite and webpack apps print the CLI's answer, 1 thread plain and 2 isolated`, { timeout: 900_000 }, async () => {
    const browser = await launchBrowser(browserName);
    try {
      for (const [name, isolated, server] of servers) {
        const modelUrl = `${origin(modelServer, "localhost")}/${path.basename(model)}`;
        const query = new URLSearchParams({ model: modelUrl, prompt: PROMPT, max_tokens: String(TOKENS) });
        const r = await report(browser, `${origin(server)}/?${query}`);
        const what = `${name} in ${browserName}, ${isolated ? "isolated" : "plain"} page (${r.status})`;
        assert.deepEqual(r.errors, [], what);
        assert.equal(r.reply, expected, what);
        // Both browsers have relaxed SIMD with a fused multiply-add: the exact build at full speed.
        assert.match(r.status, /, (mt|st)-relaxed$/, what);
        // createEngine's default: the hardware's threads, up to 4; one where the page cannot share memory.
        if (isolated) assert.ok(Number(r.threads) >= 2, `${what}: ${r.threads} thread(s)`);
        else assert.equal(r.threads, "1", what);
      }
    } finally {
      await browser.close();
    }
  });
}
