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
// WordPiece (bert-bge) gets more: add_special = true (always [CLS] ... [SEP]
// there, whatever the file's add_* keys say), strings of its own
// (tests/golden/vocab-strings-bert.json: [CLS]/[SEP]/[MASK], accents, CJK,
// controls, unknown and very long words) and byte strings that are not valid
// UTF-8 (its "bytes_hex"; one is beyond U+10FFFF, which llama.cpp's WordPiece
// rejects with an exception, recorded as "error"). node-llama-cpp can ask
// neither (its tokenize passes add_special = false, and a JavaScript string
// cannot carry invalid UTF-8), so these go through llama-tokenize-tool.cpp:
// llama.cpp's llama_tokenize/llama_detokenize from the same libllama
// node-llama-cpp loads. Text that is not valid UTF-8 is recorded as
// "text_hex", a detokenized text that is not as "detokenized_hex";
// "detokenized_special" is llama_detokenize(unparse_special = true).
//
// llama.cpp logs "missing tensor 'token_embd.weight'" once per file while
// node-llama-cpp loads it: harmless, the vocabulary loads (vocabOnly).
//
// Usage (from scripts/golden): node make-vocab-golden.mjs --llama-src DIR [--out-dir DIR] [--only name,name]
//   DIR: llama.cpp's source (scripts/llama-cpp-source prints it; $SMOLINFER_LLAMA_SRC)

import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import os from "node:os";
import {execFileSync} from "node:child_process";
import {fileURLToPath} from "node:url";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PINNED_ENGINE_VERSION = "3.21.1";
const VOCABS = ["llama-spm", "llama-bpe", "qwen2", "phi-3", "gpt-2", "bert-bge"];
// Vocabularies that also get the add_special, own-string and byte cases.
const EXTRA_STRINGS = {"bert-bge": "vocab-strings-bert.json"};

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

// Compiles llama-tokenize-tool.cpp against llama.h of the source tree and
// node-llama-cpp's own prebuilt libllama, into a cached tool keyed by both.
function tokenizeTool() {
    const platform = `${process.platform}-${process.arch}`;
    const libDir = path.join(engineDir, "..", "@node-llama-cpp", platform, "bins", platform);
    const lib = fs.readdirSync(libDir).find((f) => /^libllama[.\w]*\.so$/.test(f));
    assert(lib, `no prebuilt libllama in ${libDir}`);
    const source = path.join(HERE, "llama-tokenize-tool.cpp");
    const hash = crypto.createHash("sha256");
    for (const f of [source, path.join(args.llamaSrc, "include", "llama.h"), path.join(libDir, lib)])
        hash.update(fs.readFileSync(f));
    const cacheDir = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "smolinfer");
    const tool = path.join(cacheDir, `llama-tokenize-tool-${hash.digest("hex").slice(0, 16)}`);
    if (!fs.existsSync(tool)) {
        fs.mkdirSync(cacheDir, {recursive: true});
        const include = ["include", "ggml/include"].map((d) => `-I${path.join(args.llamaSrc, d)}`);
        execFileSync("g++", ["-std=c++17", "-O1", ...include, source, `-L${libDir}`, `-l:${lib}`,
            `-Wl,-rpath,${libDir}`, "-o", `${tool}.tmp`], {stdio: "inherit"});
        fs.renameSync(`${tool}.tmp`, tool);
        log(`compiled ${path.basename(source)} into ${tool}`);
    }
    return tool;
}

// Runs llama.cpp's tokenize (and detokenize) on each request {bytes,
// addSpecial, parseSpecial}: [{ids, detokenized, detokenizedSpecial} | {error}].
function llamaTokenize(tool, vocabFile, requests) {
    const input = Buffer.concat(requests.flatMap((r) => [
        Buffer.from(`${r.addSpecial ? 1 : 0} ${r.parseSpecial ? 1 : 0} ${r.bytes.length}\n`), r.bytes]));
    const out = execFileSync(tool, [vocabFile], {input, maxBuffer: 1 << 28}).toString("utf8");
    const lines = out.split("\n").slice(0, -1);
    assert(lines.length === requests.length, `llama-tokenize-tool answered ${lines.length} of ${requests.length}`);
    return lines.map((line) => {
        if (line.startsWith("error ")) return {error: line.slice(6)};
        assert(line.startsWith("ok "), `unexpected answer: ${line}`);
        const [ids, back, backSpecial] = line.slice(3).split("|");
        return {
            ids: ids === "" ? [] : ids.split(" ").map(Number),
            detokenized: Buffer.from(back, "hex"),
            detokenizedSpecial: Buffer.from(backSpecial, "hex")
        };
    });
}

// Bytes as a JSON field: the text when it is valid UTF-8, else hex.
function textField(name, bytes) {
    try {
        return {[name]: new TextDecoder("utf-8", {fatal: true}).decode(bytes)};
    } catch {
        return {[`${name}_hex`]: bytes.toString("hex")};
    }
}

// The add_special cases of the corpus, and every case of the vocabulary's own strings.
function extraCases(name, file) {
    const own = JSON.parse(fs.readFileSync(path.join(args.goldenDir, EXTRA_STRINGS[name]), "utf8"));
    assert(Array.isArray(own.strings) && Array.isArray(own.bytes_hex), `${EXTRA_STRINGS[name]}: strings and bytes_hex`);
    const requests = strings.map((text) => ({bytes: Buffer.from(text, "utf8"), addSpecial: true, parseSpecial: true}));
    const inputs = [...own.strings.map((t) => Buffer.from(t, "utf8")), ...own.bytes_hex.map((h) => Buffer.from(h, "hex"))];
    for (const bytes of inputs)
        for (const addSpecial of [false, true])
            for (const parseSpecial of [true, false]) requests.push({bytes, addSpecial, parseSpecial});
    const answers = llamaTokenize(tokenizeTool(), file, requests);
    return requests.map((r, i) => {
        const a = answers[i];
        const c = {...textField("text", r.bytes), parse_special: r.parseSpecial, add_special: r.addSpecial};
        if (a.error !== undefined) return {...c, error: a.error};
        return {...c, ids: a.ids, ...textField("detokenized", a.detokenized),
            ...textField("detokenized_special", a.detokenizedSpecial)};
    });
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
        ...(EXTRA_STRINGS[name] ? {sep: model.tokens.sep} : {}),
        add_bos: model.tokens.shouldPrependBosToken,
        add_eos: model.tokens.shouldAppendEosToken,
        ...tokenClasses
    };
    await model.dispose();
    if (EXTRA_STRINGS[name]) cases.push(...extraCases(name, file));
    const out = "{\n" +
        `  "source": ${jsonValue({
            engine: `node-llama-cpp ${enginePkg.version}`,
            llama_cpp: llamaCppInfo.tag,
            llama_cpp_repo: llamaCppInfo.llamaCppGithubRepo,
            vocab: `models/ggml-vocab-${name}.gguf`,
            tokenize: "model.tokenize(text, parse_special) = common_tokenize(vocab, text, add_special=false, parse_special)",
            detokenize: "model.detokenize(ids, false) = llama_detokenize(vocab, ids, remove_special=false, unparse_special=false)",
            ...(EXTRA_STRINGS[name] ? {
                add_special_and_bytes: "cases with add_special: llama-tokenize-tool.cpp = llama_tokenize(vocab, text, add_special, parse_special), " +
                    "llama_detokenize(vocab, ids, remove_special=false, unparse_special=false and true), with node-llama-cpp's libllama"
            } : {})
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
