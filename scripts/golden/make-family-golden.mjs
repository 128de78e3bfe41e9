// Golden files for the model families whose real weights cannot be fetched
// here (llama with SentencePiece, Llama 3, Qwen2, Qwen3, Phi-3): llama.cpp
// (through node-llama-cpp, pinned in package.json) runs the random-weight
// models that tests/make_random_model writes, in each family's real layout
// with a real vocabulary, and records greedy continuations with the top-10
// log-probabilities at every position, for prompts of token ids.
//
// With --large: SmolLM2-360M and -1.7B shapes (make_random_model
// --list-large) into tests/golden/large/, two prompts, 8 new tokens each.
//
// Usage: node make-family-golden.mjs --bin build/native/tests/make_random_model [--large] [--out-dir DIR] [--only a,b]
// Needs SMOLINFER_LLAMA_SRC (llama.cpp's source, scripts/llama-cpp-source)
// for the vocabularies, and SMOLINFER_MODEL (SmolLM2's) for --large.
// make golden runs both.
//
//   GOLDEN_THREADS          CPU threads for evaluation (default 2)

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {execFileSync} from "node:child_process";
import {fileURLToPath} from "node:url";
import {
    assert, elapsed, jsonBlock, linesArray, log, Raw, renderGenerationCase, setLogPrefix, sha256File, topLogprobs, writeOutput, getReferenceLlama} from "./golden-lib.mjs";

setLogPrefix("make-family-golden");
const HERE = path.dirname(fileURLToPath(import.meta.url));
const TOP_K = 10;
const CONTEXT_SIZE = 256;

const args = {bin: null, outDir: null, only: null, large: false};
for (let i = 2; i < process.argv.length; i++) {
    const a = process.argv[i];
    const next = () => process.argv[++i];
    if (a === "--bin") args.bin = path.resolve(next());
    else if (a === "--out-dir") args.outDir = path.resolve(next());
    else if (a === "--only") args.only = new Set(next().split(","));
    else if (a === "--large") args.large = true;
    else throw new Error(`unknown argument: ${a}`);
}
assert(args.bin && fs.existsSync(args.bin), "--bin must name the make_random_model binary (build/native/tests/make_random_model)");
assert(process.env.SMOLINFER_LLAMA_SRC, "SMOLINFER_LLAMA_SRC must point at llama.cpp's source (scripts/llama-cpp-source)");
args.outDir ??= path.resolve(HERE, "..", "..", "tests", "golden", args.large ? "large" : "families");
fs.mkdirSync(args.outDir, {recursive: true});
const MAX_NEW_TOKENS = args.large ? 8 : 32;
// Prompt lengths: one token, short ones, and batches that fill the kernels' tiles.
const PROMPT_LENGTHS = args.large ? [5, 40] : [1, 3, 8, 21, 60];
const threads = Number(process.env.GOLDEN_THREADS ?? 2);

const engineDir = path.join(HERE, "node_modules", "node-llama-cpp");
const enginePkg = JSON.parse(fs.readFileSync(path.join(engineDir, "package.json"), "utf8"));
const llamaCppInfo = JSON.parse(fs.readFileSync(path.join(engineDir, "llama", "llama.cpp.info.json"), "utf8"));

// llama.cpp with its zen4 CPU library (golden-lib.mjs: getReferenceLlama).
const {llama, cpu: CPU_VARIANT} = await getReferenceLlama();

// Deterministic prompt ids (a linear congruential generator), skipping
// end-of-generation tokens so that every prompt is evaluated whole.
function promptIds(model, length, seed) {
    const nVocab = model.tokens.count ?? model.fileInfo.metadata.tokenizer.ggml.tokens.length;
    let x = seed >>> 0;
    const ids = [];
    while (ids.length < length) {
        x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
        const id = x % nVocab;
        if (!model.isEogToken(id)) ids.push(id);
    }
    return ids;
}


const names = execFileSync(args.bin, [args.large ? "--list-large" : "--list"], {encoding: "utf8"}).trim().split("\n");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "family-golden-"));
try {
    for (const name of names) {
        if (args.only && !args.only.has(name)) continue;
        const t0 = performance.now();
        const file = path.join(tmp, `${name}.gguf`);
        const sha = execFileSync(args.bin, [name, file], {encoding: "utf8"}).trim();
        assert(sha === sha256File(file), `${name}: the printed sha256 is not the file's`);
        const model = await llama.loadModel({modelPath: file});
        const context = await model.createContext({contextSize: CONTEXT_SIZE, batchSize: 512, threads, flashAttention: false, sequences: 1});
        assert(context.contextSize === CONTEXT_SIZE, `${name}: context size ${context.contextSize}, wanted ${CONTEXT_SIZE}`);
        const sequence = context.getSequence();
        const cases = [];
        for (const [i, length] of PROMPT_LENGTHS.entries()) {
            const prompt = promptIds(model, length, 1000 * (i + 1) + length);
            await sequence.clearHistory();
            const ids = [];
            const rows = [];
            let eog = false;
            for await (const out of sequence.evaluateWithMetadata(prompt, {probabilities: true}, {temperature: 0, yieldEogToken: true})) {
                const top = topLogprobs(out.probabilities, TOP_K);
                assert(top[0][0] === out.token, `${name}: greedy token ${out.token} is not the argmax ${top[0][0]}`);
                ids.push(out.token);
                rows.push(top);
                if (model.isEogToken(out.token)) {
                    eog = true;
                    break;
                }
                if (ids.length >= MAX_NEW_TOKENS) break;
            }
            cases.push({name: `prompt${length}`, prompt_ids: prompt, ids, stopped_at_eog: eog, top_logprobs: rows});
        }
            const out = jsonBlock({
            source: {
                engine: `node-llama-cpp ${enginePkg.version}`,
                llama_cpp: llamaCppInfo.tag,
                cpu: CPU_VARIANT,
                model: `tests/make_random_model ${name} (random weights, the vocabulary of ${args.large ? "SmolLM2-135M-Instruct" : "llama.cpp's models/ggml-vocab-*.gguf"})`,
                context: {contextSize: CONTEXT_SIZE, batchSize: 512, threads, flashAttention: false, sequences: 1, gpu: false},
                sampling: "greedy; evaluateWithMetadata(prompt_ids, {probabilities: true}, {temperature: 0, yieldEogToken: true})",
                top_logprobs: "natural log of the softmax probability of the raw logits (normalized in double: golden-lib.mjs logMass), 10 most likely tokens per generated position, ties broken by lower id"
            },
            model_sha256: sha,
            context_size: CONTEXT_SIZE,
            max_new_tokens: MAX_NEW_TOKENS,
            cases: new Raw(linesArray(cases, 2, renderGenerationCase))
        }, 0);
        writeOutput(args.outDir, `${name}.json`, out);
        log(`${name}: ${cases.map((c) => c.ids.length).join("/")} tokens in ${elapsed(t0)}`);
        await context.dispose();
        await model.dispose();
        fs.rmSync(file);
    }
} finally {
    fs.rmSync(tmp, {recursive: true, force: true});
}
