// Reference golden files for Gemma 3 270M (base, GGUF Q4_K_M;
// scripts/fetch-model gemma-3-270m), from llama.cpp through node-llama-cpp
// (pinned in package.json) running its zen4 CPU library (golden-lib.mjs:
// getReferenceLlama), in the formats of make-golden.mjs (SmolLM2) so the same
// C++ tests read them:
//
//   tokenizer.json   ids for every string of tokenizer-strings.json, with BOS
//                    (add_special = true, as llama_tokenize does it for Gemma)
//   generation.json  greedy continuations (+ top-10 logprobs at every position)
//                    of prompts.json: raw text only (a base model, no chat
//                    template), two of them longer than the 512-token window
//   perplexity.json  llama-perplexity style NLL over ../perplexity.txt, BOS
//                    first in every chunk as llama-perplexity does it
//
// Usage: node make-gemma-golden.mjs --model PATH [--inputs DIR] [--golden-dir DIR]
//            [--out-dir DIR] [--prompts FILE] [--only tokenizer,generation,perplexity]
//   --inputs      tokenizer-strings.json and prompts.json (default tests/golden/gemma-3-270m)
//   --prompts     the prompts' file name in the inputs directory (default prompts.json;
//                 prompts-long.json: one prompt of 2,000 tokens, for GOLDEN_CONTEXT_SIZE=4096
//                 GOLDEN_MAX_TOKENS=200, where the sliding-window cache wraps)
//   --golden-dir  perplexity.txt (default tests/golden)
//   --out-dir     outputs (default: the inputs directory)
// Normally run through scripts/make-golden gemma-3-270m, which runs it again
// with flash attention on into flash-attn/.
//
// Environment knobs (defaults are what the committed golden files use):
//   GOLDEN_THREADS          CPU threads for evaluation            (default 2)
//   GOLDEN_FLASH_ATTENTION  "true" | "false"                      (default false)
//   GOLDEN_CONTEXT_SIZE     context size                          (default 1024)
//   GOLDEN_MAX_TOKENS       greedy tokens per prompt              (default 64)

import fs from "node:fs";
import path from "node:path";
import {fileURLToPath} from "node:url";
import {
    arraysEqual, assert, elapsed, flashAttentionFromLogs, getReferenceLlama, jsonBlock, linesArray, llamaEngineInfo,
    log, num, perplexityChunk, Raw, renderGenerationCase, setLogPrefix, sha256File, topLogprobs, waitForLog, wrappedNumbers,
    writeOutput} from "./golden-lib.mjs";

setLogPrefix("make-gemma-golden");
const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");

const PINNED_ENGINE_VERSION = "3.21.1";
const MODEL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818";  // scripts/fetch-model
const BOS = 2;
const GEN_MAX_TOKENS = positiveInt("GOLDEN_MAX_TOKENS", 64);
const GEN_TOP_K = 10;
const PPL_N_CTX = 512;
const CONTEXT_SIZE = positiveInt("GOLDEN_CONTEXT_SIZE", 1024);
const BATCH_SIZE = 512;

// ---------------------------------------------------------------- arguments

function positiveInt(name, fallback) {
    const v = process.env[name];
    if (v == null || v === "") return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer (got ${v})`);
    return n;
}

function parseArgs(argv) {
    const args = {
        model: null,
        inputs: path.join(REPO, "tests", "golden", "gemma-3-270m"),
        goldenDir: path.join(REPO, "tests", "golden"),
        outDir: null,
        prompts: "prompts.json",
        only: new Set(["tokenizer", "generation", "perplexity"])
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
            return argv[++i];
        };
        if (a === "--model") args.model = next();
        else if (a === "--inputs") args.inputs = path.resolve(next());
        else if (a === "--golden-dir") args.goldenDir = path.resolve(next());
        else if (a === "--out-dir") args.outDir = path.resolve(next());
        else if (a === "--prompts") args.prompts = next();
        else if (a === "--only") args.only = new Set(next().split(",").map((s) => s.trim()).filter(Boolean));
        else if (a === "-h" || a === "--help") {
            console.log("usage: node make-gemma-golden.mjs --model PATH [--inputs DIR] [--golden-dir DIR] [--out-dir DIR] " +
                "[--prompts FILE] [--only tokenizer,generation,perplexity]");
            process.exit(0);
        } else throw new Error(`unknown argument: ${a}`);
    }
    if (!args.model) throw new Error("no model given (--model PATH; scripts/fetch-model gemma-3-270m prints it)");
    args.outDir ??= args.inputs;
    fs.mkdirSync(args.outDir, {recursive: true});
    for (const o of args.only)
        if (!["tokenizer", "generation", "perplexity"].includes(o)) throw new Error(`unknown output: ${o}`);
    return args;
}

function parseFlashAttention(v) {
    if (v == null || v === "" || v === "false" || v === "0") return false;
    if (v === "true" || v === "1") return true;
    throw new Error(`GOLDEN_FLASH_ATTENTION must be true or false (got ${v}); the tests need a definite setting`);
}

// ---------------------------------------------------------------- setup

const tStart = performance.now();
const args = parseArgs(process.argv.slice(2));
const threads = Number(process.env.GOLDEN_THREADS ?? 2);
assert(Number.isInteger(threads) && threads >= 1, "GOLDEN_THREADS must be a positive integer");
const flashAttention = parseFlashAttention(process.env.GOLDEN_FLASH_ATTENTION);
const engine = llamaEngineInfo(PINNED_ENGINE_VERSION);

const modelPath = path.resolve(args.model);
assert(fs.existsSync(modelPath), `model not found: ${modelPath}`);
let t0 = performance.now();
const modelSha256 = sha256File(modelPath);
log(`model ${modelPath} sha256 ${modelSha256} (${elapsed(t0)})`);
assert(modelSha256 === MODEL_SHA256, `the model is not gemma-3-270m-q4_k_m.gguf (sha256 ${MODEL_SHA256})`);

const {llama, cpu, cpuBackend, cpuBackendPath, logs: llamaLogs} = await getReferenceLlama();
const model = await llama.loadModel({modelPath});

const sourceBase = {
    engine: `node-llama-cpp ${engine.version}`,
    llama_cpp: engine.llamaCppTag,
    llama_cpp_repo: engine.llamaCppRepo,
    cpu,
    cpu_backend: cpuBackend,
    cpu_backend_forced: "the package's bins copied with only libggml-cpu-zen4.so among the CPU variants " +
        "(scripts/golden/golden-lib.mjs: getReferenceLlama); llama.cpp's log: loaded CPU backend from .../" +
        path.basename(cpuBackendPath ?? "?"),
    model: {file: path.basename(modelPath), sha256: modelSha256}
};

// What this generator relies on about the file's tokenizer.
const ggmlTok = model.fileInfo.metadata.tokenizer.ggml;
assert(ggmlTok.model === "llama", `tokenizer.ggml.model is ${ggmlTok.model}, expected llama (SentencePiece)`);
assert(ggmlTok.add_bos_token === true, "the model is expected to have add_bos_token=true");
assert(ggmlTok.add_space_prefix === false, "the model is expected to have add_space_prefix=false");
assert(ggmlTok.add_eos_token !== true, "the model is expected not to add EOS");
assert(model.tokens.bos === BOS && model.tokens.shouldPrependBosToken === true, "BOS is expected to be token 2, prepended");

// llama_tokenize(vocab, text, add_special = true, parse_special): node-llama-cpp's
// model.tokenize is common_tokenize(..., add_special = false, ...); for a
// SentencePiece vocabulary without add_space_prefix, add_special only puts BOS
// first (llama-vocab.cpp, llama_vocab::impl::tokenize, LLAMA_VOCAB_TYPE_SPM).
const tokenizeWithBos = (text, parseSpecial) => [BOS, ...model.tokenize(text, parseSpecial)];
const tokenizeNote = "[BOS] + model.tokenize(text, parse_special) = llama_tokenize(vocab, text, add_special=true, parse_special) " +
    "(SentencePiece, add_bos_token=true, add_space_prefix=false: add_special only puts BOS (2) first)";

function readJson(dir, name) {
    return JSON.parse(fs.readFileSync(path.join(dir, name), "utf8"));
}

// ---------------------------------------------------------------- tokenizer

if (args.only.has("tokenizer")) {
    t0 = performance.now();
    const strings = readJson(args.inputs, "tokenizer-strings.json");
    assert(Array.isArray(strings) && strings.every((s) => typeof s === "string"), "tokenizer-strings.json must be an array of strings");
    const cases = [];
    let extra = 0;
    for (const text of strings) {
        const special = tokenizeWithBos(text, true);
        cases.push({text, parse_special: true, ids: special});
        const plain = tokenizeWithBos(text, false);
        // Marker-looking text is recorded both ways even where the ids agree
        // (user-defined tokens such as <table> are cut out in both modes).
        if (/<[^<>\s]+>|\[multimodal\]/.test(text) || !arraysEqual(special, plain)) {
            cases.push({text, parse_special: false, ids: plain});
            extra++;
        }
    }
    const out = jsonBlock({
        source: {...sourceBase, tokenize: tokenizeNote},
        model_sha256: modelSha256,
        add_special: true,
        cases: new Raw(linesArray(cases, 2))
    }, 0);
    writeOutput(args.outDir, "tokenizer.json", out);
    log(`tokenizer: ${strings.length} strings, ${cases.length} cases (${extra} with parse_special=false) in ${elapsed(t0)}`);
}

// ---------------------------------------------------------------- context

let context = null;
let sequence = null;
const swaSize = model.fileInsights.swaSize ?? 0;
const contextOptions = {contextSize: CONTEXT_SIZE, batchSize: BATCH_SIZE, threads, flashAttention, swaFullCache: false};
let contextLog = {};
if (args.only.has("generation") || args.only.has("perplexity")) {
    const logsBefore = llamaLogs.length;
    context = await model.createContext({...contextOptions, sequences: 1});
    sequence = context.getSequence();
    // The last lines llama.cpp logs for an SWA model's context: both caches' sizes.
    assert(await waitForLog(llamaLogs, /llama_kv_cache: size = /, {count: 2, from: logsBefore}), "llama.cpp did not log both KV caches' sizes");
    // node-llama-cpp hands over one log line per message, without its newline.
    const contextLogs = llamaLogs.slice(logsBefore).map((m) => m.trim());
    const fa = flashAttentionFromLogs(contextLogs);
    const grab = (re) => Number(contextLogs.map((m) => m.match(re)?.[1]).find((v) => v != null));
    contextLog = {
        n_ctx: grab(/^llama_context: n_ctx\s*=\s*(\d+)/),
        n_batch: grab(/^llama_context: n_batch\s*=\s*(\d+)/),
        n_ubatch: grab(/^llama_context: n_ubatch\s*=\s*(\d+)/),
        swa_cells: grab(/^llama_kv_cache_iswa: creating SWA KV cache, size = (\d+) cells/),
        kv_cache: contextLogs.filter((m) => /^llama_kv_cache(_iswa)?: (creating|size = )/.test(m)).map((m) => m.replace(/\s+/g, " "))
    };
    log(`context: size ${context.contextSize}, batch ${context.batchSize} (llama.cpp n_batch ${contextLog.n_batch}, ` +
        `n_ubatch ${contextLog.n_ubatch}), threads ${context.currentThreads}, flashAttention ${flashAttention} -> ` +
        `effective ${fa}, cpu backend ${cpuBackend}`);
    for (const l of contextLog.kv_cache) log(`  ${l}`);
    contextOptions.effectiveFlashAttention = fa;
    assert(fa === flashAttention, `llama.cpp reports flash attention ${fa}, ${flashAttention} was asked for`);
    assert(context.contextSize === CONTEXT_SIZE, `context size is ${context.contextSize}`);
    assert(swaSize === 512, `sliding window is ${swaSize}, expected 512`);
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
            swaFullCache: false,
            sequences: 1,
            kvCacheType: "f16 (default)",
            gpu: false,
            llama_cpp_n_ctx: contextLog.n_ctx,
            llama_cpp_n_batch: contextLog.n_batch,
            llama_cpp_n_ubatch: contextLog.n_ubatch
        },
        sliding_window: `${swaSize} (layers 5, 11, 17 global). node-llama-cpp gives a model with a sliding window ` +
            `n_batch = n_ubatch = batchSize + 1 (${BATCH_SIZE + 1}; "+1 to handle edge cases with SWA KV cache", ` +
            `LlamaContext.js), so llama.cpp sizes the SWA cache PAD(min(n_ctx, n_swa + n_ubatch), 256) = ` +
            `${contextLog.swa_cells} cells here` +
            (contextLog.swa_cells >= contextLog.n_ctx ? ", the whole context: no position ever wraps" :
                `, a ring: position p is in cell p mod ${contextLog.swa_cells}`) + `. The JS side still sends at most ` +
            `batchSize (${BATCH_SIZE}) tokens per llama_decode, each one micro-batch: a prompt of n tokens is ` +
            `decoded as ${BATCH_SIZE}, ${BATCH_SIZE}, ..., the rest; then one token per decode`,
        kv_cache_log: contextLog.kv_cache,
        ...extra
    };
}

// ---------------------------------------------------------------- generation

// The shortest prefix of perplexity.txt that ends a sentence (just after its
// full stop) and tokenizes (with BOS) to at least n tokens.
function perplexityPrefix(n) {
    const text = fs.readFileSync(path.join(args.goldenDir, "perplexity.txt"), "utf8");
    for (const m of text.matchAll(/[.!?](?=\s)/g)) {
        const prefix = text.slice(0, m.index + 1);
        if (tokenizeWithBos(prefix, true).length >= n) return prefix;
    }
    throw new Error(`perplexity.txt has fewer than ${n} tokens`);
}

if (args.only.has("generation")) {
    t0 = performance.now();
    const prompts = readJson(args.inputs, args.prompts);
    const cases = [];
    for (const p of prompts) {
        assert(typeof p.name === "string", "prompt needs a name");
        assert(p.mode === "raw", `prompt ${p.name}: a base model: raw prompts only`);
        const text = p.perplexity_prefix_tokens != null ? perplexityPrefix(p.perplexity_prefix_tokens) : p.text;
        assert(typeof text === "string" && text.length > 0, `prompt ${p.name} needs text or perplexity_prefix_tokens`);
        const promptIds = tokenizeWithBos(text, true);
        assert(promptIds.length + GEN_MAX_TOKENS <= CONTEXT_SIZE, `prompt ${p.name} is too long for the context`);

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
        assert(sequence.nextTokenIndex <= CONTEXT_SIZE, "the context must not have shifted");
        log(`generation ${p.name}: ${promptIds.length} prompt ids, ${ids.length} generated` +
            `${stoppedAtEog ? " (EOG)" : ""} in ${elapsed(tc)}: ${JSON.stringify(model.detokenize(ids, true))}`);
        cases.push({
            name: p.name,
            mode: p.mode,
            text,
            system: null,
            prompt_string: text,
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
            prompts: "raw text (a base model: no chat template), tokenized with BOS and parse_special=true; long_N is " +
                "the shortest sentence-ending prefix of perplexity.txt with at least N prompt ids, past the sliding window",
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
    // llama-perplexity: common_tokenize(ctx, text, add_special = true) -> BOS first.
    const tokens = tokenizeWithBos(text, false);
    const nChunks = Math.floor(tokens.length / PPL_N_CTX);
    assert(tokens.length >= 2 * PPL_N_CTX, "llama-perplexity needs at least 2 * n_ctx tokens");
    const first = PPL_N_CTX / 2;
    const chunks = [];
    let totalNll = 0;
    let totalCount = 0;
    for (let c = 0; c < nChunks; c++) {
        const tc = performance.now();
        const chunk = tokens.slice(c * PPL_N_CTX, (c + 1) * PPL_N_CTX);
        // llama-perplexity puts BOS in place of each chunk's first token when
        // the vocabulary adds BOS (perplexity.cpp: "add BOS token for the first
        // batch of each chunk"); the targets are the original tokens.
        const input = chunk.slice();
        input[0] = BOS;
        const {nll_sum: nll, count} = await perplexityChunk(sequence, input, chunk, first, `chunk ${c}`);
        chunks.push({nll_sum: nll, count});
        totalNll += nll;
        totalCount += count;
        log(`perplexity chunk ${c}: nll ${nll.toFixed(4)} over ${count} tokens, ppl ${Math.exp(nll / count).toFixed(4)} (${elapsed(tc)})`);
    }
    const ppl = Math.exp(totalNll / totalCount);
    const out = jsonBlock({
        source: contextSource({
            method: "llama-perplexity style: token_ids = llama_tokenize(text, add_special=true, parse_special=false), BOS first; " +
                "per chunk c a fresh (cleared) sequence evaluates tokens[c*n_ctx .. c*n_ctx+n_ctx-1] in one batch with its first token " +
                "replaced by BOS (add_bos, as llama-perplexity does for every chunk); score -log p(tokens[c*n_ctx+j+1]) for " +
                "j = n_ctx/2 .. n_ctx-2 with p the softmax of the raw logits normalized in double, as llama-perplexity (golden-lib.mjs logMass)",
            tokenize: tokenizeNote + ", parse_special=false"
        }),
        model_sha256: modelSha256,
        n_ctx: PPL_N_CTX,
        add_bos: true,
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
