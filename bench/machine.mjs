// What the benchmark ran on: CPU (model, family, cores, the SIMD flags that
// matter to both engines), memory, OS, compilers and versions, load average.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const read = (file) => {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return "";
  }
};
const tryRun = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "";
  }
};

export const loadavg = () => os.loadavg().map((x) => x.toFixed(2)).join(" ");

/** A CMake build's C++ compiler and a few cache entries, from its CMakeCache.txt. */
function cmakeCache(file) {
  const text = read(file);
  const entry = (name) => (text.match(new RegExp(`^${name}:\\w+=(.*)$`, "m")) ?? [])[1] ?? "";
  const cxx = entry("CMAKE_CXX_COMPILER");
  return { compiler: cxx ? tryRun(cxx, ["--version"]).split("\n")[0] : "", entry };
}

const pinnedVersion = (packageJson, name) => {
  try {
    return JSON.parse(read(packageJson)).dependencies?.[name] ?? "";
  } catch {
    return "";
  }
};
const packageVersion = (dir) => {
  try {
    return JSON.parse(read(path.join(dir, "package.json"))).version ?? "";
  } catch {
    return "";
  }
};

/** llama-bench's build: compiler and GGML_NATIVE from the CMakeCache.txt above its bin/. */
export function llamaBuild(llamaBench) {
  if (!llamaBench) return "";
  const cache = cmakeCache(path.join(path.dirname(llamaBench), "..", "CMakeCache.txt"));
  if (!cache.compiler) return `${llamaBench} (build settings unknown)`;
  const native = cache.entry("GGML_NATIVE");
  return `built with ${cache.compiler}, ${cache.entry("CMAKE_BUILD_TYPE") || "?"}, GGML_NATIVE=${native || "?"}`;
}

export function describeMachine(repo, benchDir) {
  const lscpu = tryRun("lscpu", []);
  const field = (name) => (lscpu.match(new RegExp(`^${name}:\\s*(.*)$`, "m")) ?? [])[1] ?? "";
  const flags = new Set(((read("/proc/cpuinfo").match(/^flags\s*:\s*(.*)$/m) ?? [])[1] ?? "").split(/\s+/));
  const interesting = ["sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw", "avx512vl", "avx512vbmi",
    "avx512_vnni", "avx512_bf16", "amx_tile", "asimd"];
  const gitRev = tryRun("git", ["-C", repo, "rev-parse", "--short", "HEAD"]);
  const dirty = tryRun("git", ["-C", repo, "status", "--porcelain", "--untracked-files=no"]) !== "";
  const family = field("CPU family");
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    cpu: `${field("Model name") || os.cpus()[0]?.model || "?"}${family ? ` (family ${family}, model ${field("Model")})` : ""}`,
    vendor: field("Vendor ID"),
    family,
    model: field("Model"),
    cores: os.cpus().length,
    threadsPerCore: field("Thread\\(s\\) per core"),
    l3: field("L3 cache"),
    hypervisor: field("Hypervisor vendor"),
    flags: interesting.filter((f) => flags.has(f)),
    memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    os: `${(read("/etc/os-release").match(/^PRETTY_NAME="?([^"\n]*)"?$/m) ?? [])[1] ?? os.type()}, Linux ${os.release()}`,
    compiler: cmakeCache(path.join(repo, "build", "native", "CMakeCache.txt")).compiler,
    emcc: (tryRun("emcc", ["--version"]).match(/\d+\.\d+\.\d+/) ?? [""])[0],
    node: process.version,
    smolinfer: gitRev ? `${gitRev}${dirty ? " + uncommitted changes" : ""}` : "",
    wllama: packageVersion(path.join(benchDir, "node_modules", "@wllama", "wllama")),
    // Installed for the golden generators, else the version they pin (the
    // one scripts/llama-cpp-source unpacks the llama.cpp source from).
    nodeLlamaCpp:
      packageVersion(path.join(repo, "scripts", "golden", "node_modules", "node-llama-cpp")) ||
      pinnedVersion(path.join(repo, "scripts", "golden", "package.json"), "node-llama-cpp"),
    loadStart: loadavg(),
    loadEnd: "",
  };
}
