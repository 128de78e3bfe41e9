// What the npm package weighs (make bench's "Package size"): the tarball
// `make package` wrote, and each WebAssembly build with its glue, raw and
// gzipped (what a browser downloads for the build it picks).
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { execFileSync } from "node:child_process";

export function packageSizes(repo) {
  const npm = path.join(repo, "build", "npm");
  const tarballs = fs.existsSync(npm) ? fs.readdirSync(npm).filter((f) => /^smolinfer-.*\.tgz$/.test(f)) : [];
  if (tarballs.length !== 1) throw new Error(`expected one smolinfer-<version>.tgz in build/npm (make package), found ${tarballs.length}`);
  const tarball = path.join(npm, tarballs[0]);
  // tar's verbose listing: the size is the third column.
  const listing = execFileSync("tar", ["-tvzf", tarball], { encoding: "utf8" }).trim().split("\n");
  const unpackedBytes = listing.reduce((sum, line) => sum + Number(line.trim().split(/\s+/)[2] || 0), 0);
  const wasmDir = path.join(repo, "build", "web", "site", "wasm");
  const size = (f) => fs.statSync(f).size;
  const gz = (f) => zlib.gzipSync(fs.readFileSync(f), { level: 9 }).length;
  const builds = fs.readdirSync(wasmDir).filter((f) => f.endsWith(".wasm")).sort().map((f) => {
    const wasm = path.join(wasmDir, f);
    const glue = wasm.replace(/\.wasm$/, ".js");
    return { name: f.replace(/\.wasm$/, ""), wasm: size(wasm), wasmGz: gz(wasm), glue: size(glue), glueGz: gz(glue) };
  });
  return { tarball: path.basename(tarball), tarballBytes: size(tarball), unpackedBytes, files: listing.length, builds };
}
