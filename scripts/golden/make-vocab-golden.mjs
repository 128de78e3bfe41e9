// Golden tokenizations for the model families beyond SmolLM2.
//
// Loads llama.cpp's vocabulary-only GGUFs (models/ggml-vocab-<name>.gguf in
// llama.cpp's source tree, which node-llama-cpp 3.21.1 ships; never
// committed here) with node-llama-cpp (vocabOnly), tokenizes every string of
// tests/golden/tokenizer-strings.json (and tests/golden/vocab-strings.json:
// these families' own special tokens) the way make-golden.mjs does for
// SmolLM2 (model.tokenize(text, parse_special) = common_tokenize(vocab, text,
// add_special=false, parse_special): parse_special=true for every string,
// and parse_special=false too where it differs or the string has marker-like
// text), detokenizes the ids (model.detokenize(ids, false) =
// llama_detokenize(remove_special=false, unparse_special=false)) and writes
// tests/golden/vocab/<name>.json. tests/test_vocab_families.cpp compares.
//
// llama.cpp logs "missing tensor 'token_embd.weight'" once per file while
// node-llama-cpp loads it: harmless, the vocabulary loads (vocabOnly).
//
// Usage (from scripts/golden): node make-vocab-golden.mjs --llama-src DIR [--out-dir DIR] [--only name,name]
//   DIR: llama.cpp's source (scripts/llama-cpp-source prints it; $SMOLINFER_LLAMA_SRC)

import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import {fileURLToPath} from "node:url";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PINNED_ENGINE_VERSION = "3.21.1";
const VOCABS = ["llama-spm", "llama-bpe", "qwen2", "phi-3", "gpt-2"];

function assert(cond, msg) {
    if (!cond) throw new Error(`assertion failed: ${msg}`);
}

function log(msg) {
    process.stderr.write(`[make-vocab-golden] ${msg}\n`);
}

function parseArgs(argv) {
    const args = {
        llamaSrc: process.env.SMOLINFER_LLAMA_SRC ?? null,
        goldenDir: path.resolve(HERE, "..", "..", "tests", "golden"),
        outDir: null,
        only: VOCABS
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
            return argv[++i];
        };
        if (a === "--llama-src") args.llamaSrc = next();
        else if (a === "--out-dir") args.outDir = path.resolve(next());
        else if (a === "--only") args.only = next().split(",").map((s) => s.trim()).filter(Boolean);
        else throw new Error(`unknown argument: ${a}`);
    }
    if (!args.llamaSrc) throw new Error("no llama.cpp source (use --llama-src DIR or $SMOLINFER_LLAMA_SRC)");
    for (const n of args.only) assert(VOCABS.includes(n), `unknown vocabulary ${n} (known: ${VOCABS.join(", ")})`);
    args.outDir ??= path.join(args.goldenDir, "vocab");
    fs.mkdirSync(args.outDir, {recursive: true});
    return args;
}

// Same JSON layout as make-golden.mjs: one case per line, invisible
// characters as \u escapes.
const INVISIBLE = /[\p{C}\p{Z}\uFE0E\uFE0F]/gu;

function jsonString(s) {
    return JSON.stringify(s).replace(INVISIBLE, (ch) => {
        if (ch === " ") return ch;
        let out = "";
        for (let i = 0; i < ch.length; i++) out += "\\u" + ch.charCodeAt(i).toString(16).padStart(4, "0");
        return out;
    });
}

function jsonValue(v) {
    if (typeof v === "string") return jsonString(v);
    if (Array.isArray(v)) return "[" + v.map(jsonValue).join(", ") + "]";
    if (v !== null && typeof v === "object")
        return "{" + Object.entries(v).map(([k, x]) => `${jsonString(k)}: ${jsonValue(x)}`).join(", ") + "}";
    return JSON.stringify(v);
}

function arraysEqual(a, b) {
    return a.length === b.length && a.every((x, i) => x === b[i]);
}

function sha256File(file) {
    return crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
}

const args = parseArgs(process.argv.slice(2));

const engineDir = (() => {
    let dir = path.dirname(fileURLToPath(import.meta.resolve("node-llama-cpp")));
    while (!fs.existsSync(path.join(dir, "package.json"))) dir = path.dirname(dir);
    return dir;
})();
const enginePkg = JSON.parse(fs.readFileSync(path.join(engineDir, "package.json"), "utf8"));
assert(enginePkg.version === PINNED_ENGINE_VERSION,
    `node-llama-cpp ${enginePkg.version} is installed, ${PINNED_ENGINE_VERSION} is required (run npm ci in scripts/golden)`);
const llamaCppInfo = JSON.parse(fs.readFileSync(path.join(engineDir, "llama", "llama.cpp.info.json"), "utf8"));

// The shared corpus, then strings around these families' own special tokens
// (<s>, Phi-3's and Llama 3's chat markers, FIM tokens, ...).
const strings = [];
for (const name of ["tokenizer-strings.json", "vocab-strings.json"]) {
    const more = JSON.parse(fs.readFileSync(path.join(args.goldenDir, name), "utf8"));
    assert(Array.isArray(more) && more.every((s) => typeof s === "string"), `${name} must be an array of strings`);
    strings.push(...more);
}

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});

for (const name of args.only) {
    const file = path.join(args.llamaSrc, "models", `ggml-vocab-${name}.gguf`);
    assert(fs.existsSync(file), `missing ${file}`);
    const model = await llama.loadModel({modelPath: file, vocabOnly: true});
    const cases = [];
    for (const text of strings) {
        const special = Array.from(model.tokenize(text, true));
        const plain = Array.from(model.tokenize(text, false));
        const variants = [[true, special]];
        if (text.includes("<|") || text.includes("|>") || text.includes("<s>") || text.includes("</s>") ||
            !arraysEqual(special, plain))
            variants.push([false, plain]);
        for (const [parseSpecial, ids] of variants) {
            const c = {text, parse_special: parseSpecial, ids};
            // A JS string cannot carry invalid UTF-8: where llama.cpp's bytes
            // were not valid UTF-8 the text is not recorded.
            const back = model.detokenize(ids, false);
            if (!back.includes("\uFFFD") || text.includes("\uFFFD")) c.detokenized = back;
            cases.push(c);
        }
    }
    // How llama.cpp classes the tokens (by type and by its text-based rules).
    const tokenClasses = {control: [], user_defined: [], unknown: [], rstrip: [], eog: []};
    const nTokens = model.fileInfo.metadata.tokenizer.ggml.tokens.length;
    for (let id = 0; id < nTokens; id++) {
        const a = model.getTokenAttributes(id);
        if (a.control) tokenClasses.control.push(id);
        else if (a.userDefined) tokenClasses.user_defined.push(id);
        if (a.unknown) tokenClasses.unknown.push(id);
        if (a.rstrip) tokenClasses.rstrip.push(id);
        if (model.isEogToken(id)) tokenClasses.eog.push(id);
    }
    const special = {
        n_tokens: nTokens,
        bos: model.tokens.bos,
        eos: model.tokens.eos,
        add_bos: model.tokens.shouldPrependBosToken,
        add_eos: model.tokens.shouldAppendEosToken,
        ...tokenClasses
    };
    await model.dispose();
    const out = "{\n" +
        `  "source": ${jsonValue({
            engine: `node-llama-cpp ${enginePkg.version}`,
            llama_cpp: llamaCppInfo.tag,
            llama_cpp_repo: llamaCppInfo.llamaCppGithubRepo,
            vocab: `models/ggml-vocab-${name}.gguf`,
            tokenize: "model.tokenize(text, parse_special) = common_tokenize(vocab, text, add_special=false, parse_special)",
            detokenize: "model.detokenize(ids, false) = llama_detokenize(vocab, ids, remove_special=false, unparse_special=false)"
        })},\n` +
        `  "vocab_sha256": ${jsonValue(sha256File(file))},\n` +
        `  "special": ${jsonValue(special)},\n` +
        `  "cases": [\n` + cases.map((c) => "    " + jsonValue(c)).join(",\n") + "\n  ]\n}\n";
    JSON.parse(out);
    const target = path.join(args.outDir, `${name}.json`);
    fs.writeFileSync(target + ".tmp", out);
    fs.renameSync(target + ".tmp", target);
    log(`${name}: ${cases.length} cases -> ${path.relative(process.cwd(), target)}`);
}
await llama.dispose();
