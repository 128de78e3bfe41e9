// Golden files for JSON schema -> grammar, from llama.cpp itself:
//
//   tests/golden/json_schema/<name>.gbnf   the grammar llama.cpp's converter
//       (common/json-schema-to-grammar.cpp, compiled from $SMOLINFER_LLAMA_SRC
//       with llama-json-schema-tool.cpp) writes for <name>.schema.json
//   tests/golden/json_schema/generation.json   for each entry of prompts.json,
//       the real SmolLM2 model's greedy tokens under that grammar (node-llama-cpp
//       3.21.1: llama.createGrammar + LlamaGrammarEvaluationState), each output
//       validated against its schema with ajv
//
// Usage: node make-json-schema-golden.mjs [--model PATH] [--llama-src DIR] [--only gbnf,generation]
// Normally run through scripts/make-json-schema-golden.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import {execFileSync} from "node:child_process";
import {fileURLToPath} from "node:url";
import {LlamaGrammarEvaluationState} from "node-llama-cpp";
import {assert, elapsed, jsonBlock, linesArray, log, Raw, setLogPrefix, sha256File, writeOutput, llamaCpuVariant, getReferenceLlama} from "./golden-lib.mjs";

// Which of llama.cpp's CPU variants computes these numbers (refuses AVX2-only CPUs).
const CPU_VARIANT = llamaCpuVariant();
import {makeValidator, schemaNames, SCHEMA_DIR} from "./json-schema-validator.mjs";

setLogPrefix("make-json-schema-golden");
const HERE = path.dirname(fileURLToPath(import.meta.url));
const PINNED_ENGINE_VERSION = "3.21.1";
const DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face";
const MAX_TOKENS = 96;

function parseArgs(argv) {
    const args = {model: process.env.MODEL ?? null, llamaSrc: process.env.SMOLINFER_LLAMA_SRC ?? null,
        only: new Set(["gbnf", "generation"])};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
            return argv[++i];
        };
        if (a === "--model") args.model = next();
        else if (a === "--llama-src") args.llamaSrc = next();
        else if (a === "--only") args.only = new Set(next().split(",").map((s) => s.trim()).filter(Boolean));
        else throw new Error(`unknown argument: ${a}`);
    }
    for (const o of args.only) assert(["gbnf", "generation"].includes(o), `unknown output: ${o}`);
    assert(args.llamaSrc, "no llama.cpp source tree (--llama-src DIR or $SMOLINFER_LLAMA_SRC)");
    assert(!args.only.has("generation") || args.model, "no model given (--model PATH or $MODEL)");
    return args;
}

// Compiles llama.cpp's converter into a cached tool (keyed by its sources).
function converterTool(llamaSrc) {
    const sources = [
        path.join(HERE, "llama-json-schema-tool.cpp"),
        path.join(llamaSrc, "common", "json-schema-to-grammar.cpp"),
        path.join(llamaSrc, "common", "json.cpp")
    ];
    const headers = ["common/json-schema-to-grammar.h", "common/json.h"].map((h) => path.join(llamaSrc, h));
    const hash = crypto.createHash("sha256");
    for (const f of [...sources, ...headers]) hash.update(fs.readFileSync(f));
    const cacheDir = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "smolinfer");
    const tool = path.join(cacheDir, `llama-json-schema-tool-${hash.digest("hex").slice(0, 16)}`);
    if (!fs.existsSync(tool)) {
        fs.mkdirSync(cacheDir, {recursive: true});
        const t0 = performance.now();
        const include = ["common", "include", "ggml/include", "vendor"].map((d) => `-I${path.join(llamaSrc, d)}`);
        execFileSync("g++", ["-std=c++17", "-O1", ...include, ...sources, "-o", `${tool}.tmp`], {stdio: "inherit"});
        fs.renameSync(`${tool}.tmp`, tool);
        log(`compiled llama.cpp's converter into ${tool} (${elapsed(t0)})`);
    }
    return tool;
}

function llamaGrammar(tool, schemaText) {
    // Bytes, not text: llama.cpp may split a UTF-8 character across
    // character classes (additionalProperties next to non-ASCII names), and
    // decoding would replace those bytes.
    return execFileSync(tool, [], {input: schemaText, stdio: ["pipe", "pipe", "pipe"]});
}

const args = parseArgs(process.argv.slice(2));
const llamaInfoPath = path.join(HERE, "node_modules", "node-llama-cpp", "llama", "llama.cpp.info.json");
const llamaTag = JSON.parse(fs.readFileSync(llamaInfoPath, "utf8")).tag;
const tool = converterTool(args.llamaSrc);

if (args.only.has("gbnf")) {
    const t0 = performance.now();
    const names = schemaNames();
    for (const name of names) {
        const schemaText = fs.readFileSync(path.join(SCHEMA_DIR, `${name}.schema.json`), "utf8");
        // Written as llama.cpp prints it (writeOutput is for JSON files).
        fs.writeFileSync(path.join(SCHEMA_DIR, `${name}.gbnf`), llamaGrammar(tool, schemaText));
    }
    log(`gbnf: ${names.length} grammars in ${elapsed(t0)}`);
}

if (args.only.has("generation")) {
    const t0 = performance.now();
    const enginePkg = JSON.parse(fs.readFileSync(path.join(HERE, "node_modules", "node-llama-cpp", "package.json"), "utf8"));
    assert(enginePkg.version === PINNED_ENGINE_VERSION,
        `node-llama-cpp ${enginePkg.version} is installed, ${PINNED_ENGINE_VERSION} is required (run npm ci in scripts/golden)`);
    const modelPath = path.resolve(args.model);
    const modelSha256 = sha256File(modelPath);
    // llama.cpp with its zen4 CPU library (golden-lib.mjs: getReferenceLlama).
    const {llama} = await getReferenceLlama();
    const model = await llama.loadModel({modelPath});
    // One thread by default: on a busy two-core machine llama.cpp's spinning
    // worker threads slow grammar-constrained decoding down a hundredfold,
    // and the thread count does not change its CPU results.
    const threads = Number(process.env.GOLDEN_THREADS ?? 1);
    const context = await model.createContext({contextSize: 1024, batchSize: 512, threads, flashAttention: false, sequences: 1});
    const sequence = context.getSequence();
    const IM_START = model.tokenize("<|im_start|>", true);
    const IM_END = model.tokenize("<|im_end|>", true);
    assert(IM_START.length === 1 && IM_END.length === 1, "ChatML markers must be single special tokens");
    // SmolLM2's ChatML template, with the texts tokenized as plain text between the markers.
    const chatPromptIds = (text) => {
        const plain = (s) => model.tokenize(s, false);
        return [...IM_START, ...plain("system\n" + DEFAULT_SYSTEM), ...IM_END, ...plain("\n"),
            ...IM_START, ...plain("user\n" + text), ...IM_END, ...plain("\n"),
            ...IM_START, ...plain("assistant\n")];
    };

    const validate = makeValidator();
    const prompts = JSON.parse(fs.readFileSync(path.join(SCHEMA_DIR, "prompts.json"), "utf8"));
    const cases = [];
    const leftOut = [];
    for (const p of prompts) {
        const gbnf = fs.readFileSync(path.join(SCHEMA_DIR, `${p.schema}.gbnf`), "utf8");
        const grammar = await llama.createGrammar({grammar: gbnf});
        const state = new LlamaGrammarEvaluationState({model, grammar});
        const promptIds = chatPromptIds(p.prompt);
        const tc = performance.now();
        await sequence.clearHistory();
        const ids = [];
        let stop = "length";
        for await (const token of sequence.evaluate(promptIds, {temperature: 0, grammarEvaluationState: state, yieldEogToken: true})) {
            ids.push(token);
            if (model.isEogToken(token)) {
                stop = "eog";
                break;
            }
            if (ids.length >= MAX_TOKENS) break;
        }
        const text = model.detokenize(stop === "eog" ? ids.slice(0, -1) : ids);
        if (stop !== "eog") {
            // An unfinished JSON text cannot be validated: such a prompt is
            // left out (and should be rephrased or dropped from prompts.json).
            log(`${p.schema}: LEFT OUT, the grammar did not complete within ${MAX_TOKENS} tokens: ${JSON.stringify(text)}`);
            leftOut.push(p.schema);
            continue;
        }
        const verdict = validate(p.schema, text);
        assert(verdict.ok, `${p.schema}: output breaks its schema (${verdict.errors}): ${JSON.stringify(text)}`);
        log(`${p.schema}: ${ids.length} tokens in ${elapsed(tc)}: ${JSON.stringify(text)}`);
        cases.push({schema: p.schema, prompt: p.prompt, prompt_ids: promptIds, ids, stop, text});
    }
    const out = jsonBlock({
        source: {
            engine: `node-llama-cpp ${enginePkg.version}`,
            llama_cpp: llamaTag,
            cpu: CPU_VARIANT,
            grammar: "<schema>.gbnf (llama.cpp's converter) through llama.createGrammar; greedy (temperature 0)",
            context: {contextSize: 1024, batchSize: 512, threads, flashAttention: false},
            validator: "ajv 2020-12 + ajv-formats"
        },
        model_sha256: modelSha256,
        max_tokens: MAX_TOKENS,
        note: "ids are the generated tokens, ending with the end-of-generation token when stop is \"eog\"; text is their detokenized text without it",
        cases: new Raw(linesArray(cases, 2))
    }, 0);
    assert(cases.length >= 15, `only ${cases.length} prompts completed (left out: ${leftOut.join(", ")})`);
    writeOutput(SCHEMA_DIR, "generation.json", out);
    log(`generation: ${cases.length} cases in ${elapsed(t0)}${leftOut.length ? `; left out: ${leftOut.join(", ")}` : ""}`);
}
