// Grammar-constrained generation goldens: llama.cpp's greedy tokens under a
// GBNF grammar (node-llama-cpp's LlamaGrammar, i.e. llama.cpp's grammar
// sampler) on the real SmolLM2-135M-Instruct Q4_1 model, one file per grammar
// in tests/golden/grammar/<name>.json (grammar text, prompt ids, ids, text).
// tests/test_grammar_golden.cpp asserts that smolinfer picks the same tokens.
//
// Usage: node make-grammar-golden.mjs --model PATH [--llama-src DIR] [--out-dir DIR] [--only a,b]
//   --llama-src: llama.cpp's source tree ($SMOLINFER_LLAMA_SRC); its
//   grammars/json.gbnf is read here and its text stored in json.json (MIT).
// The other grammars are ours, written below.

import fs from "node:fs";
import path from "node:path";
import {fileURLToPath} from "node:url";
import {LlamaGrammar, LlamaGrammarEvaluationState} from "node-llama-cpp";
import crypto from "node:crypto";
import {assert, elapsed, getReferenceLlama, jsonBlock, linesArray, log, num, Raw, sha256File, writeOutput} from "./golden-lib.mjs";


const HERE = path.dirname(fileURLToPath(import.meta.url));
const PINNED_ENGINE_VERSION = "3.21.1";
const MAX_TOKENS = 48;
const DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

// name, prompt (a chat user message), grammar text (or a file under llama.cpp's grammars/)
const CASES = [
    {name: "json", prompt: "Describe a cat as a JSON object with its name, age and color.", llamaFile: "json.gbnf"},
    {name: "json_arr", prompt: "List two books with title and year as JSON.", grammar: String.raw`
root   ::= "[" ws item ("," ws item)* "]"
item   ::= "{" ws "\"title\":" ws string "," ws "\"year\":" ws year ws "}" ws
string ::= "\"" [^"\\\n]* "\""
year   ::= [12] [0-9]{3}
ws     ::= [ \n]?
`},
    {name: "list", prompt: "Name three fruits.", grammar: String.raw`
root ::= item{3}
item ::= "- " [A-Za-z ]+ "\n"
`},
    {name: "numbers", prompt: "Give me the first prime numbers.", grammar: String.raw`
root ::= num ("," " "? num)*
num  ::= "-"? [0-9]+ ("." [0-9]+)?
`},
    {name: "arithmetic", prompt: "What is 12 plus 30? Show the calculation.", grammar: String.raw`
root ::= expr " = " int
expr ::= term (ws [-+*/] ws term)*
term ::= int | "(" expr ")"
int  ::= [0-9]+
ws   ::= " "?
`},
    {name: "chess", prompt: "Write the first moves of a chess game.", grammar: String.raw`
root    ::= "1. " move " " move ("\n" [1-9] [0-9]? ". " move " " move)*
move    ::= (pawn | piece | castle) [+#]?
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
piece   ::= [NBRQK] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle  ::= "O-O" "-O"?
`},
    {name: "japanese", prompt: "Say hello and good morning in Japanese.", grammar: String.raw`
root ::= jp ([、。 ] jp)* "。"?
jp   ::= [\u3041-\u309F\u30A0-\u30FF\u4E00-\u9FFF]+
`},
    {name: "cyrillic", prompt: "Say hello in Russian.", grammar: String.raw`
root ::= [А-ЯЁ] [а-яё]* ([ ,]+ [А-Яа-яЁё]+)* [.!]
`},
    {name: "repetition", prompt: "Invent a product code and a phone number.", grammar: String.raw`
root  ::= "Code: " [A-Z]{3} "-" [0-9]{2,4} "\nPhone: " digit{3} "-" digit{3,} "\nTags: " tag{1,3}
digit ::= [0-9]
tag   ::= "#" [a-z]{2,8} " "
`},
    {name: "shared_prefix", prompt: "Which word fits: a fruit or a program?", grammar: String.raw`
root ::= word (", " word){0,4} "."
word ::= "apple" | "apricot" | "application" | "apply" | "approach" | "app" | "banana" | "band" | "bandana"
`},
    {name: "yes_no", prompt: "Is the sky blue? Answer yes or no.", grammar: String.raw`
root ::= "Yes" | "No" | "yes" | "no"
`},
    {name: "escapes", prompt: "Write a quoted greeting.", grammar: String.raw`
root ::= "\x22" [\x20-\x21\x23-\x7E]{1,40} "\u0022" "\t" ("\U0000002E" | "\\") "\n"
`},
    {name: "enum_sentence", prompt: "Is water wet?", grammar: String.raw`
root ::= "The answer is " ("true" | "false" | "unknown") ". " [A-Z] [a-z ,']{0,60} "."
`},
    {name: "email", prompt: "Make up an email address for John.", grammar: String.raw`
root   ::= local "@" domain "." tld
local  ::= [a-z] [a-z0-9._]{1,20}
domain ::= [a-z]+ ("-" [a-z]+)?
tld    ::= "com" | "org" | "net" | "io"
`},
    {name: "any_char", prompt: "Write a haiku about the sea.", grammar: String.raw`
root ::= "Title: " [^\n]{1,30} "\n" (. | "\n"){10,60}
`},
    {name: "key_values", prompt: "Describe a dog in key: value lines.", grammar: String.raw`
root  ::= line{2,4}
line  ::= key ": " value "\n"
key   ::= [a-z]+
value ::= [^\n:]+
`},
    {name: "nested", prompt: "Write a nested list using parentheses.", grammar: String.raw`
root  ::= group
group ::= "(" ws (atom | group) (" " (atom | group))* ws ")"
atom  ::= [a-z0-9]+
ws    ::= " "?
`},
    {name: "accents", prompt: "Write a French greeting.", grammar: String.raw`
root ::= [A-ZÀ-Ý] [a-zà-ÿ' ]{2,40} [.!]
`},
    {name: "emoji", prompt: "Reply with happy emojis.", grammar: String.raw`
root ::= [\U0001F600-\U0001F64F] [\U0001F300-\U0001F64F ]{0,6}
`},
];

function parseArgs(argv) {
    const args = {
        model: process.env.MODEL ?? null,
        llamaSrc: process.env.SMOLINFER_LLAMA_SRC ?? null,
        outDir: path.resolve(HERE, "..", "..", "tests", "golden", "grammar"),
        only: null
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
            return argv[++i];
        };
        if (a === "--model") args.model = next();
        else if (a === "--llama-src") args.llamaSrc = next();
        else if (a === "--out-dir") args.outDir = path.resolve(next());
        else if (a === "--only") args.only = new Set(next().split(",").filter(Boolean));
        else throw new Error(`unknown argument: ${a}`);
    }
    if (!args.model) throw new Error("no model given (use --model PATH or $MODEL)");
    if (!args.llamaSrc) throw new Error("no llama.cpp source tree (use --llama-src DIR or $SMOLINFER_LLAMA_SRC)");
    fs.mkdirSync(args.outDir, {recursive: true});
    return args;
}

const tStart = performance.now();
const args = parseArgs(process.argv.slice(2));

const engineDir = (() => {
    let dir = path.dirname(fileURLToPath(import.meta.resolve("node-llama-cpp")));
    while (!fs.existsSync(path.join(dir, "package.json"))) dir = path.dirname(dir);
    return dir;
})();
const enginePkg = JSON.parse(fs.readFileSync(path.join(engineDir, "package.json"), "utf8"));
assert(enginePkg.version === PINNED_ENGINE_VERSION,
    `node-llama-cpp ${enginePkg.version} is installed, ${PINNED_ENGINE_VERSION} is required`);
const llamaCppInfo = JSON.parse(fs.readFileSync(path.join(engineDir, "llama", "llama.cpp.info.json"), "utf8"));

const modelPath = path.resolve(args.model);
const modelSha256 = sha256File(modelPath);
// llama.cpp with its zen4 CPU library (golden-lib.mjs: getReferenceLlama).
const {llama, cpu: CPU_VARIANT, cpuBackend} = await getReferenceLlama();
const model = await llama.loadModel({modelPath});
const context = await model.createContext({contextSize: 1024, batchSize: 512, threads: 2, flashAttention: false, sequences: 1});
const sequence = context.getSequence();
const vocabSize = model.fileInfo.metadata.tokenizer.ggml.tokens.length;
const addon = llama._bindings.AddonSampler;

// llama.cpp's allowed-token set at each position of ids: the grammar
// sampler asked about every token of the vocabulary (end-of-generation
// tokens included). Stored as a count and the sha256 of the bitset (bit i
// of byte i/8, little-endian bit order), the ids themselves when few.
function allowedSets(grammar, ids) {
    const state = new LlamaGrammarEvaluationState({model, grammar});
    const out = [];
    for (const id of ids) {
        const bits = new Uint8Array(Math.ceil(vocabSize / 8));
        const allowed = [];
        for (let t = 0; t < vocabSize; t++) {
            if (addon.canBeNextTokenForGrammarEvaluationState(state._state, t)) {
                bits[t >> 3] |= 1 << (t & 7);
                allowed.push(t);
            }
        }
        assert(allowed.includes(id), `llama.cpp chose ${id}, which its grammar does not allow`);
        out.push({
            count: allowed.length,
            sha256: crypto.createHash("sha256").update(bits).digest("hex"),
            ids: allowed.length <= 16 ? allowed : null
        });
        if (!model.isEogToken(id)) addon.acceptGrammarEvaluationStateToken(state._state, id);
    }
    return out;
}

const IM_START = model.tokenize("<|im_start|>", true);
const IM_END = model.tokenize("<|im_end|>", true);
// The SmolLM2 ChatML prompt, as make-golden.mjs builds it.
function chatPromptIds(text) {
    const plain = (s) => model.tokenize(s, false);
    return [
        ...IM_START, ...plain("system\n" + DEFAULT_SYSTEM), ...IM_END, ...plain("\n"),
        ...IM_START, ...plain("user\n" + text), ...IM_END, ...plain("\n"),
        ...IM_START, ...plain("assistant\n")
    ];
}

let written = 0;
for (const c of CASES) {
    if (args.only && !args.only.has(c.name)) continue;
    const t0 = performance.now();
    const grammarText = c.llamaFile
        ? fs.readFileSync(path.join(args.llamaSrc, "grammars", c.llamaFile), "utf8")
        : c.grammar.replace(/^\n/, "");
    const grammar = new LlamaGrammar(llama, {grammar: grammarText});
    const state = new LlamaGrammarEvaluationState({model, grammar});
    const promptIds = chatPromptIds(c.prompt);
    await sequence.clearHistory();
    const ids = [];
    const tops = [];  // per position: the 3 most likely tokens among the allowed, [id, log p of the raw logits]
    let stoppedAtEog = false;
    const probabilities = [];  // per position, softmax of the raw logits
    for await (const out of sequence.evaluateWithMetadata(promptIds, {probabilities: true},
        {temperature: 0, grammarEvaluationState: state, yieldEogToken: true})) {
        const token = out.token;
        ids.push(token);
        probabilities.push(out.probabilities);
        if (model.isEogToken(token)) {
            stoppedAtEog = true;
            break;
        }
        if (ids.length >= MAX_TOKENS) break;
    }
    const text = model.detokenize(ids.filter((t) => !model.isEogToken(t)), false);
    const sets = allowedSets(grammar, ids);
    for (let k = 0; k < ids.length; k++) {
        const probs = probabilities[k];
        const bitsOk = (t) => sets[k].ids ? sets[k].ids.includes(t) : true;
        // the allowed set is only known as a hash when large: rank by probability among
        // the tokens the grammar state allows, asking llama.cpp again
        const ranked = Array.from(probs.entries()).sort((a, b) => b[1] - a[1] || a[0] - b[0]);
        const top = [];
        const st = new LlamaGrammarEvaluationState({model, grammar});
        for (let j = 0; j < k; j++) if (!model.isEogToken(ids[j])) addon.acceptGrammarEvaluationStateToken(st._state, ids[j]);
        for (const [t, p] of ranked) {
            if (top.length >= 3) break;
            if (bitsOk(t) && addon.canBeNextTokenForGrammarEvaluationState(st._state, t)) top.push([t, num(Math.log(p))]);
        }
        tops.push(top);
    }
    assert(tops.every((t, k) => t[0][0] === ids[k]), `${c.name}: llama.cpp's pick is not its most likely allowed token`);
    log(`${c.name}: ${ids.length} ids${stoppedAtEog ? " (EOG)" : ""} in ${elapsed(t0)}: ${JSON.stringify(text)}`);
    const out = jsonBlock({
        source: {
            generator: "scripts/golden/make-grammar-golden.mjs",
            engine: `node-llama-cpp ${enginePkg.version} (llama.cpp ${llamaCppInfo.tag ?? "?"})`,
            cpu: CPU_VARIANT,
            sampling: "greedy (temperature 0) under LlamaGrammar(grammar) via sequence.evaluateWithMetadata(prompt_ids, {probabilities: true}, {temperature: 0, grammarEvaluationState, yieldEogToken: true})",
            grammar_source: c.llamaFile ? `llama.cpp grammars/${c.llamaFile} (MIT)` : "smolinfer (written for this test)",
            prompt: "SmolLM2 ChatML with the default system prompt; user text parse_special=false",
            cpu_backend: cpuBackend,
            allowed: "per position of ids, before it: llama.cpp's allowed tokens (canBeNextTokenForGrammarEvaluationState over the whole vocabulary): count, sha256 of the bitset (bit i = byte i/8, bit i%8), the ids when <= 16",
            top_allowed: "per position: the 3 most likely allowed tokens, [id, natural log of the softmax probability of the raw logits]"
        },
        model_sha256: modelSha256,
        name: c.name,
        grammar: grammarText,
        user_text: c.prompt,
        prompt_ids: promptIds,
        max_tokens: MAX_TOKENS,
        ids,
        stopped_at_eog: stoppedAtEog,
        text,
        vocab_size: vocabSize,
        allowed: new Raw(linesArray(sets, 2)),
        top_allowed: new Raw(linesArray(tops, 2))
    }, 0);
    writeOutput(args.outDir, `${c.name}.json`, out);
    written++;
}
log(`wrote ${written} grammar goldens to ${args.outDir} in ${elapsed(tStart)}`);
await context.dispose();
await model.dispose();
await llama.dispose();
