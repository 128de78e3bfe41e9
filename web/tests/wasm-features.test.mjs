// Which WebAssembly build the worker picks (web/src/wasm-features.ts): the
// probe against engines that have relaxed SIMD, lack it, or get it wrong
// (Node 20 with its baseline compiler), and the choice for every case.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { test } from "node:test";

import { repoRoot } from "./wasm-module.mjs";

const features = path.join(repoRoot, "build", "web", "site", "wasm-features.js");
const { chooseBuild } = await import(features);

function probeIn(...flags) {
  const script = `import { probeRelaxedSimd } from ${JSON.stringify(features)}; console.log(JSON.stringify(probeRelaxedSimd()));`;
  return JSON.parse(execFileSync(process.execPath, [...flags, "--input-type=module", "-e", script], { encoding: "utf8" }));
}

test("the probe sees relaxed SIMD, a fused madd and a correct dot where the engine has them", () => {
  assert.deepEqual(probeIn("--experimental-wasm-relaxed-simd", "--no-liftoff"), { supported: true, fusedMadd: true, dotOk: true });
});

test("the probe sees no relaxed SIMD where the engine lacks it", () => {
  assert.deepEqual(probeIn(), { supported: false, fusedMadd: false, dotOk: false });
});

test("the probe catches an engine whose relaxed dot product is wrong (Node 20's baseline compiler)", () => {
  assert.equal(probeIn("--experimental-wasm-relaxed-simd", "--liftoff-only").dotOk, false);
});

test("the fastest build that keeps the promise is chosen", () => {
  const fused = { supported: true, fusedMadd: true, dotOk: true };
  const unfused = { supported: true, fusedMadd: false, dotOk: true };
  const none = { supported: false, fusedMadd: false, dotOk: false };
  const broken = { supported: true, fusedMadd: true, dotOk: false };
  // Relaxed SIMD with a fused madd: exact at full speed, asked for or not.
  assert.deepEqual(chooseBuild(fused, false), { simd: "relaxed", exact: true });
  assert.deepEqual(chooseBuild(fused, true), { simd: "relaxed", exact: true });
  // Unfused madd: relaxed and fast, unless exact results are asked for.
  assert.deepEqual(chooseBuild(unfused, false), { simd: "relaxed", exact: false });
  assert.deepEqual(chooseBuild(unfused, true), { simd: "simd128", exact: true });
  // No (working) relaxed SIMD: plain SIMD128, fast or exact.
  for (const s of [none, broken]) {
    assert.deepEqual(chooseBuild(s, false), { simd: "simd128", exact: false });
    assert.deepEqual(chooseBuild(s, true), { simd: "simd128", exact: true });
  }
  // Forced builds.
  assert.deepEqual(chooseBuild(fused, false, "simd128"), { simd: "simd128", exact: false });
  assert.deepEqual(chooseBuild(unfused, true, "relaxed"), { simd: "relaxed", exact: false });
  assert.throws(() => chooseBuild(none, false, "relaxed"), /no \(working\) relaxed SIMD/);
  assert.throws(() => chooseBuild(broken, false, "relaxed"), /no \(working\) relaxed SIMD/);
});
