// Helpers shared by the golden-file generators: checks, hashing, logging and
// a JSON printer that keeps one case (or one row) per line so diffs stay small.
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";

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

// The k most likely tokens as [id, natural log of the probability].
// probabilities: Map token -> softmax probability (float32 softmax of the raw
// logits, computed by the addon), re-sorted with a deterministic tie-break
// (lower id first).
export function topLogprobs(probabilities, k) {
    const all = Array.from(probabilities.entries());
    all.sort((a, b) => (b[1] - a[1]) || (a[0] - b[0]));
    return all.slice(0, k).map(([id, p]) => [id, num(Math.log(p))]);
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
