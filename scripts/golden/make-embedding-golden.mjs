// Golden files of embedding vectors: llama.cpp (through node-llama-cpp,
// pinned in package.json, on its zen4 CPU library: golden-lib.mjs
// getReferenceLlama) embeds a fixed list of texts with the random-weight
// embedding models that tests/make_random_model writes (--list-embedding:
// bert, bert-mean, nomic-bert, gemma-embedding, qwen3-embedding) and with the
// real SmolLM2-135M-Instruct file (a llama decoder without pooling_type:
// node-llama-cpp returns the last token's output-normed hidden state).
//
// For each model, with flash attention off (tests/golden/embeddings/<name>.json)
// and on (tests/golden/embeddings/flash-attn/<name>.json):
//   llama.loadModel({modelPath, defaultContextFlashAttention: false | true})
//   model.createEmbeddingContext({contextSize: 512, batchSize: 512, threads})
//   getEmbeddingFor(text) for every text
// (createEmbeddingContext takes no flashAttention option: the model's default
// decides, and llama.cpp's context log is checked for what it used). Each case
// records the text, the token ids llama.cpp evaluated (node-llama-cpp's
// tokenize without special tokens, then its _prepareInput: [CLS] ... [SEP] for
// WordPiece, BOS/EOS by the file's add_bos/add_eos otherwise; read from the
// evaluation itself) and the raw vector (not normalised), each float32 value
// as the shortest decimal that reads back as the same float32.
//
// Besides the fixed texts, two are made per vocabulary by appending words to a
// sentence until exactly 48 and 128 tokens are evaluated: token counts that are
// multiples of 16 (llama.cpp's f32 KQ.V product then takes tinyBLAS, else
// ggml_vec_dot_f32), below and above 64 (its flash attention's one-chunk and
// tiled kernels). Every model's cases are checked to cover 1 to 3 tokens,
// n < 64 with n % 16 != 0 and == 0, n >= 64 with n % 16 != 0 and == 0, and
// (models with a sliding window) several texts longer than the window.
//
// Usage: node make-embedding-golden.mjs --bin build/native/tests/make_random_model
//            [--out-dir DIR] [--only a,b] [--no-smollm2]
// Needs SMOLINFER_LLAMA_SRC (llama.cpp's source: vocabularies),
// SMOLINFER_MODEL_GEMMA_3_270M (gemma-embedding's vocabulary) and
// SMOLINFER_MODEL (SmolLM2-135M-Instruct Q4_1: smollm2-135m.json).
// make golden runs it.
//
//   GOLDEN_THREADS          CPU threads for evaluation (default 2)
//   GOLDEN_LOG_DIR          if set, llama.cpp's log of each model load and context goes there

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {execFileSync} from "node:child_process";
import {fileURLToPath} from "node:url";
import {
    arraysEqual, assert, elapsed, flashAttentionFromLogs, getReferenceLlama, jsonBlock, jsonString, jsonValue,
    linesArray, llamaEngineInfo, log, Raw, setLogPrefix, sha256File, waitForLog, wrappedNumbers, writeOutput} from "./golden-lib.mjs";

setLogPrefix("make-embedding-golden");
const HERE = path.dirname(fileURLToPath(import.meta.url));
const PINNED_ENGINE_VERSION = "3.21.1";
const CONTEXT_SIZE = 512;
const BATCH_SIZE = 512;
// SmolLM2-135M-Instruct Q4_1 (scripts/fetch-model).
const SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

const args = {bin: null, outDir: null, only: null, smollm2: true};
for (let i = 2; i < process.argv.length; i++) {
    const a = process.argv[i];
    const next = () => process.argv[++i];
    if (a === "--bin") args.bin = path.resolve(next());
    else if (a === "--out-dir") args.outDir = path.resolve(next());
    else if (a === "--only") args.only = new Set(next().split(","));
    else if (a === "--no-smollm2") args.smollm2 = false;
    else throw new Error(`unknown argument: ${a}`);
}
assert(args.bin && fs.existsSync(args.bin), "--bin must name the make_random_model binary (build/native/tests/make_random_model)");
assert(process.env.SMOLINFER_LLAMA_SRC, "SMOLINFER_LLAMA_SRC must point at llama.cpp's source (scripts/llama-cpp-source)");
args.outDir ??= path.resolve(HERE, "..", "..", "tests", "golden", "embeddings");
const threads = Number(process.env.GOLDEN_THREADS ?? 2);
assert(Number.isInteger(threads) && threads >= 1, "GOLDEN_THREADS must be a positive integer");
const engine = llamaEngineInfo(PINNED_ENGINE_VERSION);

// ---------------------------------------------------------------- texts

const TEXTS = [
    "Hi",
    "The quick brown fox jumps over the lazy dog.",
    "Café au lait, s'il vous plaît! Zoë's naïve résumé cost €12.50 — not 13.",
    "東京は日本の首都です。北京是中国的首都。",
    "Numbers: 3.14159, 2.71828, 1,000,000 and 42; dates 2024-06-30 and 1999-12-31.",
    "I love embeddings 🚀🙂 and emoji!",
    "Embedding models turn a piece of text into a fixed-size vector of numbers, so that texts with similar " +
        "meanings end up close together. Search engines, recommendation systems and clustering tools compare " +
        "these vectors with cosine similarity, which is cheap to compute even for millions of documents stored in " +
        "a vector database, often in well under a millisecond per query.",
    "The first mechanical calculators appeared in the seventeenth century, when Blaise Pascal built a machine " +
        "that could add and subtract numbers with a series of interlocking gears. Two hundred years later, Charles " +
        "Babbage designed the Analytical Engine, a general-purpose computer that was never completed in his " +
        "lifetime. Ada Lovelace wrote what many consider the first program for it, describing how the engine could " +
        "compute Bernoulli numbers. Electronic computers arrived in the 1940s; they filled entire rooms, consumed " +
        "enormous amounts of power and were programmed by rewiring panels or feeding in punched cards.",
    "To bake a simple loaf of bread, combine 500 grams of flour, 350 millilitres of warm water, 10 grams of salt " +
        "and 7 grams of dried yeast in a large bowl. Mix until no dry flour remains, then cover the bowl and let " +
        "the dough rest for about an hour, or until it has doubled in size. Turn it out onto a lightly floured " +
        "surface, fold the edges towards the centre a few times, and shape it into a tight ball. Place the ball in " +
        "a greased tin, cover it again and leave it for another 45 minutes. Meanwhile, heat the oven to 220 °C " +
        "(about 430 °F). Bake the loaf for 30 to 35 minutes, until the crust is deep golden brown and the bottom " +
        "sounds hollow when tapped. Let it cool on a wire rack for at least twenty minutes before slicing; cutting " +
        "it too early makes the crumb gummy. Leftover bread keeps for three days in a paper bag."
];
// Texts made per vocabulary: this sentence, then words of PAD_WORDS in turn
// (one skipped when it would overshoot), until exactly `target` tokens are
// evaluated.
const PAD_BASE = "A sentence grown word by word to a chosen length:";
const PAD_WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "red", "green",
    "blue", "and", "the", "cat", "dog", "sun", "sea", "sky"];
const PAD_TARGETS = [48, 128];

// ---------------------------------------------------------------- formatting

// The shortest decimal that reads back as the same float32 (toPrecision's
// correctly rounded digits, the fewest that round-trip through Math.fround).
function f32(x) {
    assert(Number.isFinite(x), `non-finite embedding value ${x}`);
    assert(Math.fround(x) === x, `${x} is not a float32 value`);
    if (x === 0) return Object.is(x, -0) ? "-0" : "0";
    for (let p = 1; p <= 9; p++) {
        const s = x.toPrecision(p);
        if (Math.fround(Number(s)) === x) return String(Number(s));
    }
    throw new Error(`no 9-digit form of ${x}`);
}

function renderCase(c) {
    const lines = [
        `      "text": ${jsonString(c.text)}`,
        `      "n_tokens": ${c.ids.length}`,
        `      "ids": ${jsonValue(c.ids)}`,
        `      "embedding": ${wrappedNumbers(c.embedding.map(f32), 6, 16)}`
    ];
    return "{\n" + lines.join(",\n") + "\n    }";
}

const POOLING_NAMES = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"};

// The value of llama.cpp's print_info line "print_info: <key> = <value>".
function infoValue(lines, key) {
    const re = new RegExp(`print_info: ${key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s+= (.*)$`);
    for (const l of lines) {
        const m = l.trim().match(re);
        if (m) return m[1].trim();
    }
    return null;
}

// ---------------------------------------------------------------- models

const {llama, cpu, logs} = await getReferenceLlama();

const models = [];
const randomNames = execFileSync(args.bin, ["--list-embedding"], {encoding: "utf8"}).trim().split("\n");
for (const name of randomNames) models.push({name, random: true});
if (args.smollm2) models.push({name: "smollm2-135m", random: false});

function wanted(name) {
    return !args.only || args.only.has(name);
}

// Texts of exactly `target` evaluated tokens for this model.
function paddedText(count, target) {
    let text = PAD_BASE;
    let n = count(text);
    assert(n < target, `the padding sentence alone has ${n} tokens, more than ${target}`);
    let w = 0;
    let misses = 0;
    while (n < target) {
        const candidate = `${text} ${PAD_WORDS[w++ % PAD_WORDS.length]}`;
        const m = count(candidate);
        if (m <= target) {
            text = candidate;
            n = m;
            misses = 0;
        } else if (++misses > PAD_WORDS.length) {
            throw new Error(`cannot pad to exactly ${target} tokens (stuck at ${n})`);
        }
    }
    return text;
}

// Checks that the cases exercise every kernel choice the token count makes.
function checkCoverage(name, counts, slidingWindow) {
    const has = (f, what) => assert(counts.some(f), `${name}: no text with ${what} tokens (counts ${counts.join(", ")})`);
    has((n) => n >= 1 && n <= 3, "1 to 3");
    has((n) => n > 3 && n < 64 && n % 16 !== 0, "4 to 63, not a multiple of 16,");
    has((n) => n < 64 && n % 16 === 0, "fewer than 64, a multiple of 16,");
    has((n) => n >= 64 && n % 16 !== 0, "64 or more, not a multiple of 16,");
    has((n) => n >= 64 && n % 16 === 0, "64 or more, a multiple of 16,");
    assert(counts.every((n) => n < BATCH_SIZE), `${name}: a text does not fit one batch`);
    if (slidingWindow > 0) {
        const longer = counts.filter((n) => n > slidingWindow + 1).length;
        assert(longer >= 3, `${name}: only ${longer} texts are longer than the window of ${slidingWindow}`);
    }
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "embedding-golden-"));
try {
    for (const m of models) {
        if (!wanted(m.name)) continue;
        const t0 = performance.now();
        let file;
        let sha;
        if (m.random) {
            file = path.join(tmp, `${m.name}.gguf`);
            sha = execFileSync(args.bin, [m.name, file], {encoding: "utf8"}).trim();
            assert(sha === sha256File(file), `${m.name}: the printed sha256 is not the file's`);
        } else {
            file = process.env.SMOLINFER_MODEL;
            assert(file && fs.existsSync(file), "SMOLINFER_MODEL must name SmolLM2-135M-Instruct's Q4_1 file (scripts/fetch-model)");
            sha = sha256File(file);
            assert(sha === SMOLLM2_SHA256, `SMOLINFER_MODEL is not SmolLM2-135M-Instruct's Q4_1 file (sha256 ${SMOLLM2_SHA256})`);
        }
        let texts = null;
        let reference = null;  // the flash-attention-off run's cases, to compare ids
        for (const flashAttention of [false, true]) {
            const from = logs.length;
            const model = await llama.loadModel({modelPath: file, defaultContextFlashAttention: flashAttention});
            const context = await model.createEmbeddingContext({contextSize: CONTEXT_SIZE, batchSize: BATCH_SIZE, threads});
            assert(await waitForLog(logs, /flash_attn\s+=/, {from}), `${m.name}: no flash_attn line in llama.cpp's log`);
            const lines = logs.slice(from);
            if (process.env.GOLDEN_LOG_DIR) fs.writeFileSync(path.join(process.env.GOLDEN_LOG_DIR, `${m.name}-fa${+flashAttention}.log`), lines.join("\n"));
            const fa = flashAttentionFromLogs(lines);
            assert(fa === flashAttention, `${m.name}: llama.cpp's log says flash attention ${fa}, wanted ${flashAttention}`);
            const arch = infoValue(lines, "arch");
            // The file's pooling_type (-1: none in the file; the context then pools NONE).
            const filePooling = Number(infoValue(lines, "pooling type"));
            const pooling = filePooling < 0 ? 0 : filePooling;
            const nLayer = Number(infoValue(lines, "n_layer"));
            const nEmbdOut = Number(infoValue(lines, "n_embd_out"));
            const nSwa = Number(infoValue(lines, "n_swa"));
            const ctxValue = (key) => lines.map((l) => l.match(new RegExp(`llama_context: ${key}\\s+= (\\S+)`))?.[1]).find(Boolean);
            const nUbatch = Number(ctxValue("n_ubatch"));
            const nCtx = Number(ctxValue("n_ctx"));
            assert(nCtx === CONTEXT_SIZE, `${m.name}: n_ctx ${nCtx}`);
            assert(nUbatch >= BATCH_SIZE, `${m.name}: n_ubatch ${nUbatch}`);
            const causal = Number(ctxValue("causal_attn"));
            // The sliding window as llama.cpp loaded it: which layers use it
            // (load_tensors' debug lines) and their RoPE base.
            let window = null;
            if (nSwa > 0) {
                const swa = lines.map((l) => l.match(/load_tensors: layer\s+(\d+) assigned to device \S+, is_swa = (\d)/))
                    .filter(Boolean).map((x) => [Number(x[1]), Number(x[2])]).filter((x) => x[0] < nLayer);  // (layer n_layer: the output)
                assert(swa.length === nLayer, `${m.name}: is_swa of ${swa.length} layers in the log, ${nLayer} layers`);
                window = {
                    n_swa: nSwa,
                    swa_layers: swa.filter((x) => x[1]).map((x) => x[0]),
                    full_layers: swa.filter((x) => !x[1]).map((x) => x[0]),
                    rope_freq_base_swa: Number(infoValue(lines, "freq_base_swa")),
                    rope_freq_base: Number(infoValue(lines, "freq_base_train"))
                };
                log(`${m.name}: ${JSON.stringify(window)}`);
            }

            // What node-llama-cpp evaluates: its tokenize, then _prepareInput.
            const prepared = (text) => {
                const ids = model.tokenize(text, false);
                context._prepareInput(ids);
                return ids;
            };
            if (texts == null) {
                texts = [...TEXTS, ...PAD_TARGETS.map((t) => paddedText((s) => prepared(s).length, t))];
                texts.sort((a, b) => prepared(a).length - prepared(b).length);
            }
            // The tokens each getEmbeddingFor evaluates, as it hands them to the sequence.
            const sequence = context._sequence;
            assert(sequence && typeof sequence.evaluate === "function", "node-llama-cpp's embedding context changed: no _sequence.evaluate");
            const evaluated = [];
            const evaluate = sequence.evaluate.bind(sequence);
            sequence.evaluate = (tokens, options) => {
                evaluated.push(Array.from(tokens));
                return evaluate(tokens, options);
            };
            const cases = [];
            for (const text of texts) {
                evaluated.length = 0;
                const embedding = await context.getEmbeddingFor(text);
                assert(evaluated.length === 1, `${m.name}: ${evaluated.length} evaluations for one text`);
                const ids = evaluated[0];
                assert(arraysEqual(ids, prepared(text)), `${m.name}: evaluated ids differ from tokenize + _prepareInput`);
                assert(embedding.vector.length === nEmbdOut, `${m.name}: ${embedding.vector.length} values, n_embd_out ${nEmbdOut}`);
                cases.push({text, ids, embedding: [...embedding.vector]});
            }
            // Nothing carries over from one text to the next: the first again gives the same vector.
            const again = await context.getEmbeddingFor(texts[0]);
            assert(arraysEqual([...again.vector], cases[0].embedding), `${m.name}: the first text again gave another vector`);
            checkCoverage(m.name, cases.map((c) => c.ids.length), nSwa);
            if (reference) {
                for (const [i, c] of cases.entries())
                    assert(arraysEqual(c.ids, reference[i].ids), `${m.name}: ids differ with flash attention`);
            }
            reference = cases;

            const out = jsonBlock({
                source: {
                    engine: `node-llama-cpp ${engine.version}`,
                    llama_cpp: engine.llamaCppTag,
                    cpu,
                    model: m.random
                        ? `tests/make_random_model ${m.name} (random weights; make_random_model --list-embedding)`
                        : "SmolLM2-135M-Instruct Q4_1 (scripts/fetch-model; $SMOLINFER_MODEL)",
                    context: {
                        contextSize: CONTEXT_SIZE, batchSize: BATCH_SIZE, threads, flashAttention, llama_cpp_n_ubatch: nUbatch,
                        gpu: false,
                        how: "llama.loadModel({modelPath, defaultContextFlashAttention}) then " +
                            "model.createEmbeddingContext({contextSize, batchSize, threads}); flash attention as llama.cpp's context log says"
                    },
                    ids: "the tokens getEmbeddingFor(text) evaluated in one batch from position 0: model.tokenize(text, false), " +
                        "then LlamaEmbeddingContext._prepareInput ([CLS]/[SEP] for WordPiece, else BOS/EOS as the file's add_bos/add_eos say)",
                    embedding: "getEmbeddingFor(text).vector: llama_get_embeddings_seq for pooled models, " +
                        "llama_get_embeddings_ith(-1) (the last token) without pooling; not normalised; " +
                        "each float32 value as the shortest decimal that reads back as the same float32",
                    texts: `fixed texts plus two made for this vocabulary (\"${PAD_BASE}\" and words, to exactly ` +
                        `${PAD_TARGETS.join(" and ")} tokens); in order of token count`
                },
                model: m.name,
                model_sha256: sha,
                architecture: arch,
                pooling: POOLING_NAMES[pooling] ?? String(pooling),
                pooling_type: pooling,
                pooling_type_in_file: filePooling,
                n_embd_out: nEmbdOut,
                causal_attn: causal === 1,
                ...(window ? {sliding_window: window} : {}),
                cases: new Raw(linesArray(cases, 2, renderCase))
            }, 0);
            const dir = flashAttention ? path.join(args.outDir, "flash-attn") : args.outDir;
            fs.mkdirSync(dir, {recursive: true});
            writeOutput(dir, `${m.name}.json`, out);
            log(`${m.name} (flash attention ${flashAttention ? "on" : "off"}, ${arch}, pooling ${POOLING_NAMES[pooling]}): ` +
                `tokens ${cases.map((c) => c.ids.length).join("/")}`);
            await context.dispose();
            await model.dispose();
        }
        if (m.random) fs.rmSync(file);
        log(`${m.name}: ${elapsed(t0)}`);
    }
} finally {
    fs.rmSync(tmp, {recursive: true, force: true});
}
await llama.dispose();
