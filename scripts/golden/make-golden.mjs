// Reference golden-file generator for smolinfer.
//
// Runs llama.cpp (through node-llama-cpp, pinned in package.json) on the real
// SmolLM2-135M-Instruct Q4_1 model and writes small JSON golden files that the
// C++ tests compare against:
//
//   tokenizer.json   token ids for every string of tokenizer-strings.json
//   generation.json  greedy continuations (+ top-10 logprobs) of prompts.json
//   perplexity.json  llama-perplexity style NLL over perplexity.txt
//
// Usage: node make-golden.mjs --model PATH [--golden-dir DIR] [--out-dir DIR] [--only tokenizer,generation,perplexity]
// Inputs (prompts.json, tokenizer-strings.json, perplexity.txt) come from the
// golden dir, outputs go to the out dir (default: the golden dir).
// Normally run through scripts/make-golden.
//
// Environment knobs (defaults are what the committed golden files use):
//   GOLDEN_THREADS          CPU threads for evaluation            (default 2)
//   GOLDEN_FLASH_ATTENTION  "true" | "false" | "auto"             (default false)

import fs from "node:fs";
import path from "node:path";
import {fileURLToPath} from "node:url";
import {
    arraysEqual, assert, elapsed, getReferenceLlama, jsonBlock, linesArray, log, num, perplexityChunk, Raw,
    renderGenerationCase, sha256File, topLogprobs, waitForLog, wrappedNumbers, writeOutput} from "./golden-lib.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));

const PINNED_ENGINE_VERSION = "3.21.1";
const DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

const GEN_MAX_TOKENS = 64;
const GEN_TOP_K = 10;
const PPL_N_CTX = 512;

// ---------------------------------------------------------------- arguments

function parseArgs(argv) {
    const args = {
        model: process.env.MODEL ?? null,
        goldenDir: path.resolve(HERE, "..", "..", "tests", "golden"),
        outDir: null,
        only: new Set(["tokenizer", "generation", "perplexity"])
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
            return argv[++i];
        };
        if (a === "--model") args.model = next();
        else if (a === "--golden-dir") args.goldenDir = path.resolve(next());
        else if (a === "--out-dir") args.outDir = path.resolve(next());
        else if (a === "--only") args.only = new Set(next().split(",").map((s) => s.trim()).filter(Boolean));
        else if (a === "-h" || a === "--help") {
            console.log("usage: node make-golden.mjs --model PATH [--golden-dir DIR] [--out-dir DIR] [--only tokenizer,generation,perplexity]");
            process.exit(0);
        } else throw new Error(`unknown argument: ${a}`);
    }
    if (!args.model) throw new Error("no model given (use --model PATH or $MODEL)");
    args.outDir ??= args.goldenDir;
    fs.mkdirSync(args.outDir, { recursive: true });
    for (const o of args.only)
        if (!["tokenizer", "generation", "perplexity"].includes(o)) throw new Error(`unknown output: ${o}`);
    return args;
}

function parseFlashAttention(v) {
    if (v == null || v === "" || v === "false" || v === "0") return false;
    if (v === "true" || v === "1") return true;
    if (v === "auto") return "auto";
    throw new Error(`GOLDEN_FLASH_ATTENTION must be true, false or auto (got ${v})`);
}

// ---------------------------------------------------------------- main

const tStart = performance.now();
const args = parseArgs(process.argv.slice(2));
const threads = Number(process.env.GOLDEN_THREADS ?? 2);
assert(Number.isInteger(threads) && threads >= 1, "GOLDEN_THREADS must be a positive integer");
const flashAttention = parseFlashAttention(process.env.GOLDEN_FLASH_ATTENTION);

// the package's "exports" hide package.json; read it from the import's resolved location
const engineDir = (() => {
    let dir = path.dirname(fileURLToPath(import.meta.resolve("node-llama-cpp")));
    while (!fs.existsSync(path.join(dir, "package.json"))) dir = path.dirname(dir);
    return dir;
})();
const enginePkg = JSON.parse(fs.readFileSync(path.join(engineDir, "package.json"), "utf8"));
assert(enginePkg.name === "node-llama-cpp", `unexpected package at ${engineDir}`);
assert(enginePkg.version === PINNED_ENGINE_VERSION,
    `node-llama-cpp ${enginePkg.version} is installed, ${PINNED_ENGINE_VERSION} is required (run npm ci in scripts/golden)`);
const llamaCppInfo = JSON.parse(fs.readFileSync(
    path.join(engineDir, "llama", "llama.cpp.info.json"), "utf8"));

const modelPath = path.resolve(args.model);
assert(fs.existsSync(modelPath), `model not found: ${modelPath}`);
let t0 = performance.now();
const modelSha256 = sha256File(modelPath);
log(`model ${modelPath} sha256 ${modelSha256} (${elapsed(t0)})`);
// scripts/fetch-model and scripts/quantized-model verify the model against
// their recorded sha256; the outputs record it too.

// llama.cpp with its zen4 CPU library, whichever this CPU would get by
// default (golden-lib.mjs: getReferenceLlama); refuses CPUs that cannot run it.
const {llama, cpu: CPU_VARIANT, cpuBackend: loadedCpuBackend, logs: llamaLogs} = await getReferenceLlama();
const model = await llama.loadModel({modelPath});

const sourceBase = {
    engine: `node-llama-cpp ${enginePkg.version}`,
    llama_cpp: llamaCppInfo.tag,
    cpu: CPU_VARIANT,
    llama_cpp_repo: llamaCppInfo.llamaCppGithubRepo
};
const tokenizeNote = "model.tokenize(text, parse_special) = common_tokenize(vocab, text, add_special=false, parse_special)";

// sanity checks on the tokenizer configuration this generator relies on
const ggmlTok = model.fileInfo.metadata.tokenizer.ggml;
assert(ggmlTok.add_bos_token === false, "model is expected to have add_bos_token=false");
assert(model.tokens.shouldPrependBosToken === false, "node-llama-cpp should not prepend BOS for this model");

const IM_START = model.tokenize("<|im_start|>", true);
const IM_END = model.tokenize("<|im_end|>", true);
assert(IM_START.length === 1 && IM_END.length === 1, "ChatML markers must be single special tokens");

function readJson(name) {
    return JSON.parse(fs.readFileSync(path.join(args.goldenDir, name), "utf8"));
}

// ---------------------------------------------------------------- tokenizer

if (args.only.has("tokenizer")) {
    t0 = performance.now();
    const strings = readJson("tokenizer-strings.json");
    assert(Array.isArray(strings) && strings.every((s) => typeof s === "string"), "tokenizer-strings.json must be an array of strings");
    const cases = [];
    let extra = 0;
    for (const text of strings) {
        const special = model.tokenize(text, true);
        cases.push({text, parse_special: true, ids: special});
        const plain = model.tokenize(text, false);
        if (text.includes("<|") || text.includes("|>") || !arraysEqual(special, plain)) {
            cases.push({text, parse_special: false, ids: plain});
            extra++;
        }
    }
    const out = jsonBlock({
        source: {...sourceBase, tokenize: tokenizeNote},
        model_sha256: modelSha256,
        cases: new Raw(linesArray(cases, 2))
    }, 0);
    writeOutput(args.outDir, "tokenizer.json", out);
    log(`tokenizer: ${strings.length} strings, ${cases.length} cases (${extra} with parse_special=false) in ${elapsed(t0)}`);
}

// ---------------------------------------------------------------- context

let context = null;
let sequence = null;
const contextOptions = {contextSize: 1024, batchSize: 512, threads, flashAttention};
if (args.only.has("generation") || args.only.has("perplexity")) {
    context = await model.createContext({...contextOptions, sequences: 1});
    sequence = context.getSequence();
    await waitForLog(llamaLogs, /flash_attn\s*=|Flash Attention/);  // the log line may come a little later
    const fa = (() => {
        const logs = llamaLogs.join("");
        if (/Flash Attention enabled|flash_attn\s*=\s*enabled/.test(logs)) return true;
        if (/flash_attn\s*=\s*disabled/.test(logs)) return false;
        return null;
    })();
    log(`context: size ${context.contextSize}, batch ${context.batchSize}, threads ${context.currentThreads}, ` +
        `flashAttention option ${JSON.stringify(flashAttention)} -> effective ${fa}, cpu backend ${loadedCpuBackend}`);
    contextOptions.effectiveFlashAttention = fa;
    assert(context.contextSize === contextOptions.contextSize, `context size is ${context.contextSize}`);
}

function contextSource(extra = {}) {
    return {
        ...sourceBase,
        context: {
            contextSize: context.contextSize,
            batchSize: context.batchSize,
            threads: contextOptions.threads,
            flashAttention: contextOptions.flashAttention,
            flashAttentionEffective: contextOptions.effectiveFlashAttention,
            sequences: 1,
            kvCacheType: "f16 (default)",
            gpu: false
        },
        cpu_backend: loadedCpuBackend,
        ...extra
    };
}

// ---------------------------------------------------------------- generation


function chatPromptIds(text, system) {
    // Mirrors the SmolLM2 ChatML template, with user/system text tokenized as plain
    // text (parse_special=false). Each plain-text run between two markers is tokenized
    // as ONE run, exactly like llama.cpp does after splitting on special tokens.
    const sys = system ?? DEFAULT_SYSTEM;
    const plain = (s) => model.tokenize(s, false);
    return [
        ...IM_START, ...plain("system\n" + sys), ...IM_END, ...plain("\n"),
        ...IM_START, ...plain("user\n" + text), ...IM_END, ...plain("\n"),
        ...IM_START, ...plain("assistant\n")
    ];
}

function chatPromptString(text, system) {
    const sys = system ?? DEFAULT_SYSTEM;
    return `<|im_start|>system\n${sys}<|im_end|>\n<|im_start|>user\n${text}<|im_end|>\n<|im_start|>assistant\n`;
}

if (args.only.has("generation")) {
    t0 = performance.now();
    const prompts = readJson("prompts.json");
    const cases = [];
    for (const p of prompts) {
        assert(typeof p.name === "string" && typeof p.text === "string", "prompt needs name and text");
        assert(p.mode === "raw" || p.mode === "chat", `prompt ${p.name}: mode must be raw or chat`);
        assert(p.mode === "chat" || p.system == null, `prompt ${p.name}: system is only valid in chat mode`);
        let promptIds;
        if (p.mode === "raw") {
            promptIds = model.tokenize(p.text, true);
        } else {
            promptIds = chatPromptIds(p.text, p.system);
            const hasMarkers = (s) => !arraysEqual(model.tokenize(s, true), model.tokenize(s, false));
            const naive = model.tokenize(chatPromptString(p.text, p.system), true);
            if (!hasMarkers(p.text) && !hasMarkers(p.system ?? DEFAULT_SYSTEM))
                assert(arraysEqual(promptIds, naive), `prompt ${p.name}: piecewise ChatML tokenization != tokenize(template, true)`);
            else
                log(`prompt ${p.name}: text contains special markers; kept as plain text ` +
                    `(${promptIds.length} ids vs ${naive.length} with parse_special on the whole string)`);
        }

        await sequence.clearHistory();
        assert(sequence.nextTokenIndex === 0, "sequence must be empty");
        const ids = [];
        const rows = [];
        let stoppedAtEog = false;
        const tc = performance.now();
        for await (const out of sequence.evaluateWithMetadata(promptIds, {probabilities: true},
            {temperature: 0, yieldEogToken: true})) {
            const top = topLogprobs(out.probabilities, GEN_TOP_K);
            assert(top[0][0] === out.token, `prompt ${p.name}: greedy token ${out.token} is not the argmax ${top[0][0]}`);
            ids.push(out.token);
            rows.push(top);
            if (model.isEogToken(out.token)) {
                stoppedAtEog = true;
                break;
            }
            if (ids.length >= GEN_MAX_TOKENS) break;
        }
        log(`generation ${p.name}: ${promptIds.length} prompt ids, ${ids.length} generated` +
            `${stoppedAtEog ? " (EOG)" : ""} in ${elapsed(tc)}: ${JSON.stringify(model.detokenize(ids, true))}`);
        cases.push({
            name: p.name,
            mode: p.mode,
            text: p.text,
            system: p.system ?? null,
            prompt_string: p.mode === "chat" ? chatPromptString(p.text, p.system) : p.text,
            prompt_ids: promptIds,
            ids,
            stopped_at_eog: stoppedAtEog,
            output_text: model.detokenize(ids, false),
            top_logprobs: rows
        });
    }
    const out = jsonBlock({
        source: contextSource({
            sampling: "greedy (temperature 0), no repeat penalty, no token bias; evaluateWithMetadata(prompt_ids, {probabilities: true}, {temperature: 0, yieldEogToken: true})",
            top_logprobs: "natural log of the softmax probability of the raw logits (normalized in double: golden-lib.mjs logMass), 10 most likely tokens per generated position, ties broken by lower id",
            chat_template: "SmolLM2 ChatML; template parts parse_special=true, system/user text parse_special=false (see prompt construction in make-golden.mjs)",
            tokenize: tokenizeNote
        }),
        model_sha256: modelSha256,
        context_size: context.contextSize,
        max_new_tokens: GEN_MAX_TOKENS,
        eog_ids: Array.from(model.iterateAllTokens()).filter((t) => model.isEogToken(t)),
        cases: new Raw(linesArray(cases, 2, renderGenerationCase))
    }, 0);
    writeOutput(args.outDir, "generation.json", out);
    log(`generation: ${cases.length} prompts, ${cases.filter((c) => c.stopped_at_eog).length} stopped at EOG, in ${elapsed(t0)}`);
}

// ---------------------------------------------------------------- perplexity

if (args.only.has("perplexity")) {
    t0 = performance.now();
    const text = fs.readFileSync(path.join(args.goldenDir, "perplexity.txt"), "utf8");
    const tokens = model.tokenize(text, false);
    const nChunks = Math.floor(tokens.length / PPL_N_CTX);
    assert(nChunks >= 1, "perplexity text is shorter than one chunk");
    const first = PPL_N_CTX / 2;
    const chunks = [];
    let totalNll = 0;
    let totalCount = 0;
    for (let c = 0; c < nChunks; c++) {
        const tc = performance.now();
        const chunk = tokens.slice(c * PPL_N_CTX, (c + 1) * PPL_N_CTX);
        const {nll_sum: nll, count} = await perplexityChunk(sequence, chunk, chunk, first, `chunk ${c}`);
        chunks.push({nll_sum: nll, count});
        totalNll += nll;
        totalCount += count;
        log(`perplexity chunk ${c}: nll ${nll.toFixed(4)} over ${count} tokens, ppl ${Math.exp(nll / count).toFixed(4)} (${elapsed(tc)})`);
    }
    const ppl = Math.exp(totalNll / totalCount);
    const out = jsonBlock({
        source: contextSource({
            method: "llama-perplexity style: no BOS; per chunk a fresh (cleared) sequence evaluates tokens[c*n_ctx .. c*n_ctx+n_ctx-1] in one batch; " +
                "score -log p(tokens[c*n_ctx+j+1]) for j = n_ctx/2 .. n_ctx-2 with p the softmax of the raw logits normalized in double, as llama-perplexity (golden-lib.mjs logMass)",
            tokenize: tokenizeNote + ", parse_special=false"
        }),
        model_sha256: modelSha256,
        n_ctx: PPL_N_CTX,
        n_tokens: tokens.length,
        n_chunks: nChunks,
        chunks: new Raw(linesArray(chunks.map((ch) => ({nll_sum: num(ch.nll_sum), count: ch.count})), 2)),
        total_nll: num(totalNll),
        total_count: totalCount,
        ppl: num(ppl),
        token_ids: new Raw(wrappedNumbers(tokens, 2))
    }, 0);
    writeOutput(args.outDir, "perplexity.json", out);
    log(`perplexity: ${tokens.length} tokens, ${nChunks} chunks, ppl ${ppl.toFixed(6)} in ${elapsed(t0)}`);
}

if (context) await context.dispose();
await model.dispose();
await llama.dispose();
log(`done in ${elapsed(tStart)}`);
