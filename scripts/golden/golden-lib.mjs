// Helpers shared by the golden-file generators: checks, hashing, logging and
// a JSON printer that keeps one case (or one row) per line so diffs stay small.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import {register} from "node:module";
import {fileURLToPath, pathToFileURL} from "node:url";

let logPrefix = "make-golden";
export function setLogPrefix(p) {
    logPrefix = p;
}

export function assert(cond, msg) {
    if (!cond) throw new Error(`assertion failed: ${msg}`);
}

export function sha256File(file) {
    const hash = crypto.createHash("sha256");
    const fd = fs.openSync(file, "r");
    try {
        const buf = Buffer.allocUnsafe(1 << 22);
        let n;
        while ((n = fs.readSync(fd, buf, 0, buf.length, null)) > 0) hash.update(buf.subarray(0, n));
    } finally {
        fs.closeSync(fd);
    }
    return hash.digest("hex");
}

export function arraysEqual(a, b) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
}

export function elapsed(t0) {
    return `${((performance.now() - t0) / 1000).toFixed(2)}s`;
}

export function log(msg) {
    process.stderr.write(`[${logPrefix}] ${msg}\n`);
}

// Round to 9 significant digits: far more than float32 logits carry, and it keeps
// the files stable and readable.
export function num(x) {
    assert(Number.isFinite(x), `non-finite number ${x}`);
    return Number(x.toPrecision(9));
}

// ---------------------------------------------------------------- JSON output
// Hand-rolled pretty printer: one case (or one logprob row) per line so diffs stay small.
// Invisible characters (controls, format characters, separators other than U+0020,
// variation selectors) are written as \u escapes.

const INVISIBLE = /[\p{C}\p{Z}\uFE0E\uFE0F]/gu;

export function jsonString(s) {
    return JSON.stringify(s).replace(INVISIBLE, (ch) => {
        if (ch === " ") return ch;
        let out = "";
        for (let i = 0; i < ch.length; i++) out += "\\u" + ch.charCodeAt(i).toString(16).padStart(4, "0");
        return out;
    });
}

export function jsonValue(v) {
    if (typeof v === "string") return jsonString(v);
    if (Array.isArray(v)) return "[" + v.map(jsonValue).join(", ") + "]";
    if (v !== null && typeof v === "object")
        return "{" + Object.entries(v).map(([k, x]) => `${jsonString(k)}: ${jsonValue(x)}`).join(", ") + "}";
    return JSON.stringify(v);
}

export function jsonBlock(v, indent) {
    // multi-line object whose values are rendered by jsonValue, except values that are Raw
    const pad = " ".repeat(indent);
    const entries = Object.entries(v).map(([k, x]) => {
        const rendered = x instanceof Raw ? x.text : jsonValue(x);
        return `${pad}  ${jsonString(k)}: ${rendered}`;
    });
    return "{\n" + entries.join(",\n") + "\n" + pad + "}";
}

export class Raw {
    constructor(text) {
        this.text = text;
    }
}

export function linesArray(items, indent, render = jsonValue) {
    if (items.length === 0) return "[]";
    const pad = " ".repeat(indent + 2);
    return "[\n" + items.map((x) => pad + render(x)).join(",\n") + "\n" + " ".repeat(indent) + "]";
}

export function wrappedNumbers(nums, indent, perLine = 32) {
    const rows = [];
    for (let i = 0; i < nums.length; i += perLine) rows.push(nums.slice(i, i + perLine).join(", "));
    if (rows.length <= 1) return "[" + (rows[0] ?? "") + "]";
    const pad = " ".repeat(indent + 2);
    return "[\n" + rows.map((r) => pad + r).join(",\n") + "\n" + " ".repeat(indent) + "]";
}

export function writeOutput(dir, name, text) {
    const file = path.join(dir, name);
    const tmp = file + ".tmp";
    JSON.parse(text); // must be valid JSON
    fs.writeFileSync(tmp, text.endsWith("\n") ? text : text + "\n");
    fs.renameSync(tmp, file);
    log(`wrote ${path.relative(process.cwd(), file)} (${fs.statSync(file).size} bytes)`);
}

// ---------------------------------------------------------------- generation

// log of the total of node-llama-cpp's probabilities, summed in double.
// The addon normalizes its softmax with a float32 sum taken over the tokens
// from the most to the least likely: once that sum nears 1, a probability
// below half its last bit (2^-25) adds nothing, so the vocabulary's long
// tail is left out (about 1.4e-4 of the mass at each position of SmolLM2,
// more on Gemma's 262,144 tokens) and every probability it returns is too
// large by the same factor. llama.cpp's own tools sum in double
// (llama-perplexity's log_softmax, the server's probabilities): log p =
// log(returned p) - logMass(probabilities) is theirs.
export function logMass(probabilities) {
    let sum = 0;
    for (const p of probabilities.values()) sum += p;
    return Math.log(sum);
}

// The k most likely tokens as [id, natural log of the probability].
// probabilities: Map token -> softmax probability (float32 softmax of the raw
// logits, computed by the addon; renormalized here, see logMass), re-sorted
// with a deterministic tie-break (lower id first).
// (A selection, not a sort of the whole vocabulary: the same k entries in the
// same order as sorting everything, at a fraction of the cost for 262k tokens.)
export function topLogprobs(probabilities, k) {
    const cmp = (a, b) => (b[1] - a[1]) || (a[0] - b[0]);  // < 0: a ranks before b
    const best = [];  // the best entries so far, in rank order, at most k
    for (const e of probabilities.entries()) {
        let i;
        if (best.length < k) {
            best.push(e);
            i = best.length - 1;
        } else if (cmp(e, best[k - 1]) < 0) {
            i = k - 1;
        } else {
            continue;
        }
        while (i > 0 && cmp(e, best[i - 1]) < 0) {
            best[i] = best[i - 1];
            i--;
        }
        best[i] = e;
    }
    const mass = logMass(probabilities);
    return best.map(([id, p]) => [id, num(Math.log(p) - mass)]);
}

// One generation case per block: its fields on one line each, then one line
// per position of its top_logprobs.
export function renderGenerationCase(c) {
    const rest = {...c};
    delete rest.top_logprobs;
    const head = Object.entries(rest).map(([k, v]) => `      ${jsonString(k)}: ${jsonValue(v)}`);
    head.push(`      "top_logprobs": ${linesArray(c.top_logprobs, 6)}`);
    return "{\n" + head.join(",\n") + "\n    }";
}

// llama.cpp's prebuilt CPU library comes in variants by instruction set, and
// they round differently (ggml_vec_dot_f16 sums 16 lanes with AVX-512, 8
// with AVX2). smolinfer reproduces the AVX-512 ("zen4") variant, on which
// the golden files are made: on a CPU without AVX-512 llama.cpp runs its
// AVX2 ("haswell") variant and a golden file would record other numbers.
// Refuses then, unless GOLDEN_ALLOW_AVX2=1 (the file then says so).
export function llamaCpuVariant() {
    let flags = "";
    try {
        flags = fs.readFileSync("/proc/cpuinfo", "utf8");
    } catch {
        // Not Linux: cannot tell.
    }
    const avx512 = /\bavx512f\b/.test(flags) && /\bavx512_?vnni\b/.test(flags);
    if (!avx512 && process.env.GOLDEN_ALLOW_AVX2 !== "1") {
        throw new Error("this CPU has no AVX-512 (avx512f + avx512vnni): llama.cpp would run its AVX2 variant, " +
            "which rounds differently from the one smolinfer reproduces; generate on an AVX-512 machine " +
            "(or set GOLDEN_ALLOW_AVX2=1 to record the AVX2 variant's numbers anyway)");
    }
    return avx512 ? "AVX-512 (llama.cpp's zen4-class CPU variant)" : "AVX2 only (llama.cpp's haswell CPU variant: not the arithmetic smolinfer reproduces)";
}

// ---------------------------------------------------------------- llama.cpp pinned to its zen4 CPU variant

// node-llama-cpp's prebuilt Linux x64 package (@node-llama-cpp/linux-x64)
// ships one ggml CPU library per x86 level (libggml-cpu-{x64,sse42,...,
// haswell,skylakex,icelake,zen4,sapphirerapids,...}.so) next to its addon.
// ggml's loader (ggml_backend_load_best, ggml/src/ggml-backend-reg.cpp)
// dlopens every libggml-cpu-*.so in the addon's directory and keeps the one
// with the highest ggml_backend_score (the sum of the CPU features it was
// built for, all of which the CPU must have). On an Intel CPU with AMX
// (Sapphire Rapids and later) that is libggml-cpu-sapphirerapids.so, which
// also runs AMX and AVX512-FP16 code and rounds differently from the zen4
// build that smolinfer reproduces. So the golden files are made with
// getReferenceLlama: it copies that package (package.json, dist/ and
// bins/linux-x64 without the other libggml-cpu-*.so) into a temporary
// directory, redirects the import of "@node-llama-cpp/linux-x64" to the copy
// with a module resolve hook (node:module register), and calls getLlama:
// node-llama-cpp then loads its addon from the copy, and ggml finds only
// libggml-cpu-zen4.so beside it. The "loaded CPU backend from ..." line of
// llama.cpp's log proves which library was loaded; anything but the copy's
// zen4 library is an error.
//
// Returns {llama, cpu, cpuBackend, cpuBackendPath, logs}: cpu describes the
// variant, cpuBackend is the loaded library's name (e.g. "libggml-cpu-zen4"),
// logs the array that collects every log message, one line each, without its
// newline (the caller may keep reading it: context creation logs its
// settings there).
//
// A CPU without zen4's features (AVX-512 F/CD/VL/DQ/BW, VBMI, VNNI, BF16)
// cannot run that library: refused, unless GOLDEN_ALLOW_AVX2=1, in which case
// whatever ggml picks is loaded and recorded (not the arithmetic smolinfer
// reproduces).
const LLAMA_BINARIES_PACKAGE = "@node-llama-cpp/linux-x64";
export const REFERENCE_CPU_BACKEND = "libggml-cpu-zen4";
const ZEN4_CPU_FLAGS = ["avx2", "fma", "f16c", "bmi2", "avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw",
    "avx512vbmi", "avx512_vnni", "avx512_bf16"];

function missingZen4Flags() {
    let cpuinfo = "";
    try {
        cpuinfo = fs.readFileSync("/proc/cpuinfo", "utf8");
    } catch {
        return ["(no /proc/cpuinfo: cannot tell)"];
    }
    const flags = new Set((cpuinfo.match(/^flags\s*:(.*)$/m)?.[1] ?? "").trim().split(/\s+/));
    return ZEN4_CPU_FLAGS.filter((f) => !flags.has(f));
}

let zen4PackageDir = null;

function redirectBinariesToZen4Copy() {
    if (zen4PackageDir) return zen4PackageDir;
    const entry = fileURLToPath(import.meta.resolve(LLAMA_BINARIES_PACKAGE));  // .../dist/index.js
    const packageDir = path.dirname(path.dirname(entry));
    const binsDir = path.join(packageDir, "bins", "linux-x64");
    assert(fs.existsSync(path.join(binsDir, REFERENCE_CPU_BACKEND + ".so")),
        `${REFERENCE_CPU_BACKEND}.so is missing from ${binsDir}`);
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), "smolinfer-llama-zen4-"));
    const remove = () => fs.rmSync(copy, {recursive: true, force: true});
    process.on("exit", remove);
    for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]]) {
        process.on(signal, () => {
            remove();
            process.exit(code);
        });
    }
    fs.copyFileSync(path.join(packageDir, "package.json"), path.join(copy, "package.json"));
    fs.cpSync(path.join(packageDir, "dist"), path.join(copy, "dist"), {recursive: true});
    fs.mkdirSync(path.join(copy, "bins", "linux-x64"), {recursive: true});
    for (const name of fs.readdirSync(binsDir)) {
        if (/^libggml-cpu-.*\.so$/.test(name) && name !== REFERENCE_CPU_BACKEND + ".so") continue;
        fs.copyFileSync(path.join(binsDir, name), path.join(copy, "bins", "linux-x64", name));
    }
    const target = pathToFileURL(path.join(copy, path.relative(packageDir, entry))).href;
    const hook = `export async function resolve(specifier, context, next) {
        if (specifier === ${JSON.stringify(LLAMA_BINARIES_PACKAGE)}) return {url: ${JSON.stringify(target)}, shortCircuit: true};
        return next(specifier, context);
    }`;
    register("data:text/javascript," + encodeURIComponent(hook));
    zen4PackageDir = copy;
    return copy;
}

export async function getReferenceLlama({logger = null} = {}) {
    const {getLlama, LlamaLogLevel} = await import("node-llama-cpp");
    assert(!process.env.GGML_BACKEND_PATH, "GGML_BACKEND_PATH is set: it would load another ggml backend; unset it");
    const missing = missingZen4Flags();
    const forced = missing.length === 0 && process.platform === "linux" && process.arch === "x64";
    if (!forced && process.env.GOLDEN_ALLOW_AVX2 !== "1") {
        throw new Error(`this CPU lacks ${missing.join(", ")}: it cannot run llama.cpp's zen4 CPU library, whose ` +
            "arithmetic smolinfer reproduces; generate on an AVX-512 machine with those features (or set " +
            "GOLDEN_ALLOW_AVX2=1 to record whichever variant ggml picks, which is not that arithmetic)");
    }
    const copy = forced ? redirectBinariesToZen4Copy() : null;
    const logs = [];
    const llama = await getLlama({
        gpu: false,
        build: "never",
        logLevel: LlamaLogLevel.debug,
        logger: (level, message) => {
            logs.push(message);
            if (logger) logger(level, message);
            else if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) process.stderr.write(message);
        }
    });
    await waitForLog(logs, /loaded CPU backend from/);
    const loaded = logs.join("\n").match(/loaded CPU backend from (\S+)/);
    const cpuBackendPath = loaded?.[1] ?? null;
    const cpuBackend = cpuBackendPath ? path.basename(cpuBackendPath).replace(/\.so$/, "") : null;
    // The CPU libraries mapped into this process, as a second witness.
    const mapped = [...new Set(fs.readFileSync("/proc/self/maps", "utf8").split("\n")
        .map((l) => l.match(/(\/\S*libggml-cpu-[\w-]+\.so)$/)?.[1]).filter(Boolean))];
    if (forced) {
        const want = path.join(copy, "bins", "linux-x64", REFERENCE_CPU_BACKEND + ".so");
        if (cpuBackendPath !== want || mapped.length !== 1 || mapped[0] !== want) {
            await llama.dispose();
            throw new Error(`llama.cpp loaded its CPU backend from ${cpuBackendPath ?? "(no 'loaded CPU backend' log line)"} ` +
                `(mapped: ${mapped.join(", ") || "none"}), not ${want}: refusing to write golden files from another CPU variant`);
        }
        log(`llama.cpp CPU backend: ${cpuBackendPath} (forced; the package's other libggml-cpu-*.so left out)`);
    } else {
        log(`llama.cpp CPU backend: ${cpuBackendPath} (GOLDEN_ALLOW_AVX2=1: NOT the zen4 variant smolinfer reproduces)`);
    }
    const cpu = forced
        ? "AVX-512 (llama.cpp's zen4 CPU variant, forced: the only libggml-cpu-*.so ggml was shown)"
        : `${cpuBackend} (GOLDEN_ALLOW_AVX2=1; not the zen4 arithmetic smolinfer reproduces)`;
    return {llama, cpu, cpuBackend, cpuBackendPath, logs};
}

// node-llama-cpp hands llama.cpp's log lines to JavaScript through the event
// loop: a line may arrive after the call that logged it has returned. Waits
// (up to `ms`) until `count` messages of `logs`, from index `from` on, match
// `re`; says whether they did.
export async function waitForLog(logs, re, {count = 1, from = 0, ms = 2000} = {}) {
    const seen = () => logs.slice(from).filter((m) => re.test(m)).length >= count;
    for (const t0 = performance.now(); !seen() && performance.now() - t0 < ms;)
        await new Promise((resolve) => setTimeout(resolve, 10));
    return seen();
}

// What node-llama-cpp is installed (checked against the pinned version) and
// which llama.cpp release it carries.
export function llamaEngineInfo(pinnedVersion) {
    let dir = path.dirname(fileURLToPath(import.meta.resolve("node-llama-cpp")));
    while (!fs.existsSync(path.join(dir, "package.json"))) dir = path.dirname(dir);
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
    assert(pkg.name === "node-llama-cpp", `unexpected package at ${dir}`);
    assert(pkg.version === pinnedVersion,
        `node-llama-cpp ${pkg.version} is installed, ${pinnedVersion} is required (run npm ci in scripts/golden)`);
    const info = JSON.parse(fs.readFileSync(path.join(dir, "llama", "llama.cpp.info.json"), "utf8"));
    return {version: pkg.version, llamaCppTag: info.tag, llamaCppRepo: info.llamaCppGithubRepo};
}

// Whether llama.cpp's context log says flash attention is on (true/false), or null.
export function flashAttentionFromLogs(logs) {
    const text = logs.join("");
    if (/Flash Attention enabled|flash_attn\s*=\s*enabled/.test(text)) return true;
    if (/flash_attn\s*=\s*disabled/.test(text)) return false;
    return null;
}

/**
 * llama-perplexity's score of one chunk: a cleared sequence evaluates `input`
 * (the chunk, its first token possibly replaced by BOS) in one batch, and
 * positions first .. input.length - 2 score -log p(targets[j + 1]), p the
 * softmax of the raw logits normalized in double (logMass), as
 * llama-perplexity's. Returns {nll_sum, count}.
 */
export async function perplexityChunk(sequence, input, targets, first, label) {
    const n = input.length;
    await sequence.clearHistory();
    assert(sequence.nextTokenIndex === 0, "sequence must be empty");
    // logits are requested for positions first .. n-2; position j predicts targets[j+1]
    const evalInput = input.map((t, j) => (j >= first && j <= n - 2) ? [t, {generateNext: {probabilities: true}}] : t);
    let nll = 0;
    let count = 0;
    const seen = new Set();
    await sequence.controlledEvaluate(evalInput, {
        onTokenResult(j, result) {
            const p = result.next.probabilities.get(targets[j + 1]);
            assert(p != null && p > 0, `${label} position ${j}: no probability for target token`);
            nll -= Math.log(p) - logMass(result.next.probabilities);
            count++;
            seen.add(j);
            result.next.probabilities = undefined; // free memory early
        }
    });
    assert(count === n - 1 - first && seen.size === count, `${label}: scored ${count} positions`);
    return {nll_sum: nll, count};
}
