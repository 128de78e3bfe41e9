// The demo server: the site with the headers that make the page
// cross-origin isolated (so the multi-threaded build can run), the models in
// the cache directory under /models/ with a /models/index.json, and, with
// --faults, deliberately broken endpoints under /faults/ for the tests.
//
//   node web/serve.mjs [--port 8080] [--host 127.0.0.1] [--site DIR] [--models DIR] [--faults]
//
// A page opened with ?isolation=off is served without the isolation headers
// (it then runs the single-threaded build).
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const port = Number(flag("--port", process.env.PORT ?? "8080"));
const host = flag("--host", "127.0.0.1");
const site = path.resolve(flag("--site", path.join(here, "..", "build", "web", "site")));
const cacheHome = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");
const modelsDir = path.resolve(flag("--models", process.env.SMOLINFER_CACHE ?? path.join(cacheHome, "smolinfer")));
const faults = args.includes("--faults");

const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".wasm": "application/wasm",
  ".ts": "text/plain; charset=utf-8",
  ".gguf": "application/octet-stream",
  ".png": "image/png",
};

// Models listed once at startup (hashing 100 MB takes a fraction of a second).
// A split model (llama.cpp's gguf-split: "<name>-00001-of-00003.gguf", ...)
// is listed once, by its first part, which is what the engine loads; all
// its parts are served.
const splitPart = /-(\d{5})-of-(\d{5})\.gguf$/;
const served = new Set(); // file names under /models/
// In pieces: a cached file may be larger than one read can return (2 GiB).
function sha256OfFile(file) {
  const hash = crypto.createHash("sha256");
  const buf = Buffer.alloc(16 << 20);
  const fd = fs.openSync(file, "r");
  try {
    for (let n; (n = fs.readSync(fd, buf, 0, buf.length, null)) > 0; ) hash.update(buf.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest("hex");
}
function listModels() {
  if (!fs.existsSync(modelsDir)) return [];
  const files = fs.readdirSync(modelsDir).filter((f) => f.endsWith(".gguf")).sort();
  for (const f of files) served.add(f);
  return files
    .filter((f) => {
      const m = splitPart.exec(f);
      return !m || (Number(m[1]) === 1 && Number(m[2]) > 1);
    })
    .map((f) => {
      const file = path.join(modelsDir, f);
      const url = `/models/${encodeURIComponent(f)}`;
      const m = splitPart.exec(f);
      if (m && Number(m[2]) > 1) {
        // The engine fetches the parts by name; size and sha256 describe single files only.
        return { name: f.replace(splitPart, ""), url, parts: Number(m[2]) };
      }
      const sha256 = sha256OfFile(file);
      return { name: f.replace(/\.gguf$/, ""), url, size: fs.statSync(file).size, sha256 };
    });
}
const models = listModels();

function headers(res, isolated) {
  if (isolated) {
    res.setHeader("Cross-Origin-Opener-Policy", "same-origin");
    res.setHeader("Cross-Origin-Embedder-Policy", "require-corp");
  }
  res.setHeader("Cross-Origin-Resource-Policy", "same-origin");
  res.setHeader("Cache-Control", "no-cache");
}

function sendFile(req, res, file, isolated) {
  fs.stat(file, (err, st) => {
    if (err || !st.isFile()) return notFound(res, isolated);
    headers(res, isolated);
    res.setHeader("Content-Type", types[path.extname(file)] ?? "application/octet-stream");
    res.setHeader("Content-Length", st.size);
    if (req.method === "HEAD") return res.end();
    fs.createReadStream(file).pipe(res);
  });
}

function notFound(res, isolated) {
  headers(res, isolated);
  res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" });
  res.end("not found\n");
}

// Endpoints that misbehave on purpose (with --faults), serving slices of the
// first model where a GGUF is needed:
//   /faults/404, /faults/500          those statuses
//   /faults/not-gguf.gguf             1 MB of bytes that are not a GGUF file
//   /faults/truncated.gguf            announces the model, sends half, drops the connection
//   /faults/dropped-chunked.gguf      no Content-Length (chunked), drops the connection mid-way
//   /faults/short-length.gguf         Content-Length says half the model, the whole model follows
//   /faults/long-length.gguf          Content-Length says 1 MB more than the model, the model, then close
//   /faults/corrupt.gguf              the model with one byte of its weights changed
//   /faults/long-context.gguf         the model claiming a training context of 2^24 tokens
//   /faults/slow.gguf                 the model at about 2 MB/s
//   /faults/stalled.gguf              announces the model, sends 1 MB, then nothing (until the client leaves)
//   /faults/huge.gguf?length=N        announces N bytes (default 5 GB), sends 1 MB, then nothing
//   /faults/huge-0000i-of-0000n.gguf  part i of a split model of n parts of 2.5 GB each (?length=N), the same way
//   /faults/open                      {"paths": [...], "hugeDownloads": m}: the paths of fault responses
//                                     still sending (to see aborts close them), GET requests for
//                                     huge.gguf and huge-*-of-*.gguf so far (a refused model must cause none)
const openPaths = new Map(); // response -> the path it answers, while it is sending
let hugeDownloads = 0; // GET requests for huge.gguf and huge-*-of-*.gguf

function track(req, res) {
  openPaths.set(res, req.url);
  res.once("close", () => openPaths.delete(res)); // the response ended or its connection closed
}

// Writes a response straight to the socket, so that its headers may lie
// (Node's own response object refuses a body that contradicts Content-Length).
function rawHead(req, headerLines) {
  const lines = [
    "HTTP/1.1 200 OK",
    "Content-Type: application/octet-stream",
    "Cross-Origin-Resource-Policy: same-origin",
    "Cache-Control: no-store",
    "Connection: close",
    ...headerLines,
  ];
  req.socket.write(`${lines.join("\r\n")}\r\n\r\n`);
}

// Streams bytes [start, end) of `file` to `out` (a response or a socket),
// `chunk` bytes every `delay` ms; calls `then` at the end. A HEAD gets the
// headers already written and no body (the engine asks for a file's size first).
function trickle(res, out, file, { start = 0, end, chunk = 64 << 10, delay = 0, then }) {
  if (res.req.method === "HEAD") return void out.end();
  const stream = fs.createReadStream(file, { start, end: end - 1, highWaterMark: chunk });
  stream.on("data", (data) => {
    if (!delay) {
      if (!out.write(data)) {
        stream.pause();
        out.once("drain", () => stream.resume());
      }
      return;
    }
    stream.pause();
    out.write(data);
    setTimeout(() => stream.resume(), delay);
  });
  stream.on("end", () => then?.());
  res.once("close", () => stream.destroy());
}

function fault(req, res, name, query) {
  headers(res, true);
  res.setHeader("Cache-Control", "no-store");
  const single = models.find((m) => m.parts === undefined);
  const model = single && path.join(modelsDir, decodeURIComponent(single.url.slice("/models/".length)));
  const size = model ? fs.statSync(model).size : 0;
  if (name.endsWith(".gguf") && !model) return notFound(res, true);
  const head = req.method === "HEAD"; // the same headers, no body (trickle)
  switch (name) {
    case "open":
      res.writeHead(200, { "Content-Type": types[".json"] });
      return res.end(JSON.stringify({ paths: [...openPaths.values()], hugeDownloads }));
    case "404":
      return notFound(res, true);
    case "500":
      res.writeHead(500, { "Content-Type": "text/plain" });
      return res.end("internal error\n");
    case "not-gguf.gguf": {
      const body = crypto.createHash("sha512").update("not a model").digest();
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": body.length * 1000 });
      for (let i = 0; i < 1000; i++) res.write(body);
      return res.end();
    }
    case "truncated.gguf": {
      // Announces the whole model, sends half, then drops the connection.
      track(req, res);
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": size });
      const half = Math.floor(size / 2);
      return trickle(res, res, model, { end: half, then: () => setTimeout(() => req.socket.destroy(), 50) });
    }
    case "dropped-chunked.gguf": {
      // No length announced: the only sign of the drop is the missing last chunk.
      track(req, res);
      res.writeHead(200, { "Content-Type": "application/octet-stream" });
      return trickle(res, res, model, { end: Math.floor(size / 3), then: () => setTimeout(() => req.socket.destroy(), 50) });
    }
    case "short-length.gguf":
      // Announces half the model and sends all of it: the client keeps what was announced.
      track(req, res);
      rawHead(req, [`Content-Length: ${Math.floor(size / 2)}`]);
      return trickle(res, req.socket, model, { end: size, then: () => req.socket.end() });
    case "long-length.gguf":
      // Announces 1 MB more than it sends, then closes.
      track(req, res);
      rawHead(req, [`Content-Length: ${size + (1 << 20)}`]);
      return trickle(res, req.socket, model, { end: size, then: () => req.socket.end() });
    case "corrupt.gguf": {
      // The right length, one wrong byte in the last tensor's data.
      const body = fs.readFileSync(model);
      body[body.length - 4096] ^= 0x55;
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": body.length });
      return res.end(body);
    }
    case "long-context.gguf": {
      // A model whose metadata claims 2^24 positions of training context, so
      // that a load may ask for a KV cache larger than WebAssembly memory.
      const body = fs.readFileSync(model);
      const key = Buffer.from("llama.context_length");
      const at = body.indexOf(key) + key.length;
      if (at < key.length || body.readUInt32LE(at) !== 4) return notFound(res, true); // not a uint32: not this model
      body.writeUInt32LE(1 << 24, at + 4);
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": body.length });
      return res.end(body);
    }
    case "slow.gguf":
      // The real model at about 2 MB/s.
      track(req, res);
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": size });
      return trickle(res, res, model, { end: size, delay: 30, then: () => res.end() });
    case "stalled.gguf":
    case "huge.gguf": {
      // Sends 1 MB of the model and then nothing, until the client goes away.
      track(req, res);
      const length = name === "huge.gguf" ? Number(query.get("length") ?? 5e9) : size;
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": length });
      if (name === "huge.gguf" && !head) hugeDownloads++;
      return trickle(res, res, model, { end: Math.min(1 << 20, size) });
    }
    default: {
      // huge-0000i-of-0000n.gguf?length=N: a split model of n parts of N
      // bytes each (default 2.5 GB), announced (HEAD too) but never sent past 1 MB.
      const split = /^huge-(\d{5})-of-(\d{5})\.gguf$/.exec(name);
      if (!split) return notFound(res, true);
      track(req, res);
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": Number(query.get("length") ?? 2.5e9) });
      if (!head) hugeDownloads++;
      return trickle(res, res, model, { end: Math.min(1 << 20, size) });
    }
  }
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://localhost");
  const pathname = decodeURIComponent(url.pathname);
  const isolated = url.searchParams.get("isolation") !== "off";
  if (pathname === "/models/index.json") {
    headers(res, isolated);
    res.writeHead(200, { "Content-Type": types[".json"] });
    return res.end(JSON.stringify({ models }, null, 2));
  }
  if (pathname.startsWith("/models/")) {
    const name = pathname.slice("/models/".length);
    if (name.includes("/") || !served.has(name)) {
      return notFound(res, isolated);
    }
    return sendFile(req, res, path.join(modelsDir, name), isolated);
  }
  if (faults && pathname.startsWith("/faults/")) return fault(req, res, pathname.slice("/faults/".length), url.searchParams);
  const file = path.normalize(path.join(site, pathname === "/" ? "index.html" : pathname));
  if (!file.startsWith(site + path.sep)) return notFound(res, isolated);
  sendFile(req, res, file, isolated);
});

server.listen(port, host, () => {
  console.log(`smolinfer demo: http://${host}:${port}/  (models from ${modelsDir}: ${models.map((m) => m.name).join(", ") || "none"})`);
});
