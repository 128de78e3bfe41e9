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
function listModels() {
  if (!fs.existsSync(modelsDir)) return [];
  return fs
    .readdirSync(modelsDir)
    .filter((f) => f.endsWith(".gguf"))
    .sort()
    .map((f) => {
      const file = path.join(modelsDir, f);
      const sha256 = crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
      return { name: f.replace(/\.gguf$/, ""), url: `/models/${encodeURIComponent(f)}`, size: fs.statSync(file).size, sha256 };
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

// Endpoints that misbehave on purpose (with --faults).
function fault(req, res, name) {
  headers(res, true);
  const model = models[0] && path.join(modelsDir, decodeURIComponent(models[0].url.slice("/models/".length)));
  switch (name) {
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
      const size = fs.statSync(model).size;
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": size });
      const stream = fs.createReadStream(model, { start: 0, end: Math.floor(size / 2) });
      stream.on("data", (chunk) => res.write(chunk));
      stream.on("end", () => setTimeout(() => req.socket.destroy(), 50));
      return;
    }
    case "short-length.gguf": {
      // Announces fewer bytes than the file has: the client sees a short file.
      const size = fs.statSync(model).size;
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": Math.floor(size / 2) });
      return fs.createReadStream(model, { start: 0, end: Math.floor(size / 2) - 1 }).pipe(res);
    }
    case "slow.gguf": {
      // The real model at about 2 MB/s.
      const size = fs.statSync(model).size;
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": size });
      const stream = fs.createReadStream(model, { highWaterMark: 64 << 10 });
      stream.on("data", (chunk) => {
        stream.pause();
        res.write(chunk);
        setTimeout(() => stream.resume(), 30);
      });
      stream.on("end", () => res.end());
      req.on("close", () => stream.destroy());
      return;
    }
    default:
      return notFound(res, true);
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
    if (name.includes("/") || !models.some((m) => m.url === `/models/${encodeURIComponent(name)}`)) {
      return notFound(res, isolated);
    }
    return sendFile(req, res, path.join(modelsDir, name), isolated);
  }
  if (faults && pathname.startsWith("/faults/")) return fault(req, res, pathname.slice("/faults/".length));
  const file = path.normalize(path.join(site, pathname === "/" ? "index.html" : pathname));
  if (!file.startsWith(site + path.sep)) return notFound(res, isolated);
  sendFile(req, res, file, isolated);
});

server.listen(port, host, () => {
  console.log(`smolinfer demo: http://${host}:${port}/  (models from ${modelsDir}: ${models.map((m) => m.name).join(", ") || "none"})`);
});
