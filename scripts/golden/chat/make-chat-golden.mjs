// Chat-template golden files: each template family's rendering of a set of
// conversations by llama.cpp's own Jinja engine (common/jinja), written to
// tests/golden/chat/<family>.json. tests/test_chat_template_golden.cpp renders
// the same conversations with smolinfer's interpreter and compares bytes.
//
// node-llama-cpp's addon does not expose llama.cpp's template engine (its
// JinjaTemplateChatWrapper runs a JavaScript Jinja), so this script compiles
// render-with-llama-jinja.cpp against llama.cpp's common/jinja sources and
// feeds it one request per line.
//
// Usage: node make-chat-golden.mjs --llama-src DIR --model SMOLLM2.gguf [--out-dir DIR]
//   (defaults: $SMOLINFER_LLAMA_SRC, $SMOLINFER_MODEL, tests/golden/chat)
// Needs g++ (about a minute to build the renderer).
//
// Template texts are never copied here: the golden names where the test finds
// each one (a file of llama.cpp's source, the model's metadata, or a template
// string of llama.cpp's tests/test-chat-template.cpp picked by its test name).
// Zephyr's and Llama 2's templates are in neither place: their published
// Hugging Face texts are given inline (KNOWN_TEMPLATES) and kept in the golden.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {execFileSync, spawnSync} from "node:child_process";
import {fileURLToPath} from "node:url";
import {readGgufFileInfo} from "node-llama-cpp";

const HERE = path.dirname(fileURLToPath(import.meta.url));

function parseArgs(argv) {
    const args = {
        llamaSrc: process.env.SMOLINFER_LLAMA_SRC ?? null,
        model: process.env.SMOLINFER_MODEL ?? null,
        outDir: path.resolve(HERE, "..", "..", "..", "tests", "golden", "chat"),
    };
    for (let i = 2; i < argv.length; ++i) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === "--llama-src") args.llamaSrc = next();
        else if (a === "--model") args.model = next();
        else if (a === "--out-dir") args.outDir = path.resolve(next());
        else throw new Error(`unknown argument ${a}`);
    }
    if (!args.llamaSrc) throw new Error("--llama-src (or SMOLINFER_LLAMA_SRC) is required");
    if (!args.model) throw new Error("--model (or SMOLINFER_MODEL) is required");
    return args;
}

// Fixed clock: 2024-07-26 12:00:00 UTC. llama.cpp formats its date strings
// from the same moment (common_chat_extra_context).
const NOW = 1721995200;
const DATE_STRING = "26 Jul 2024";  // %d %b %Y
const DATETIME = "Jul 26 2024";     // %b %d %Y

const TRICKY = "Ignore <|im_end|> <|eot_id|> [INST] </s> <|end|> {{ x }} {% if %}\n" +
    "  caf\u00e9 \u65e5\u672c\u8a9e \u{1F642} tab\there  ";

const SYS = {role: "system", content: "You are a terse assistant."};
const U1 = {role: "user", content: "Hello!"};
const A1 = {role: "assistant", content: "Hi, how can I help?"};
const U2 = {role: "user", content: "What is 2+2?"};
const A2 = {role: "assistant", content: "4"};

function conversations(extra = []) {
    return [
        {name: "system_user", messages: [SYS, U1], add_generation_prompt: true},
        {name: "user_only", messages: [U1], add_generation_prompt: true},
        {name: "user_only_no_prompt", messages: [U1], add_generation_prompt: false},
        {name: "multi_turn", messages: [SYS, U1, A1, U2], add_generation_prompt: true},
        {name: "multi_turn_ends_with_assistant", messages: [U1, A1, U2, A2], add_generation_prompt: false},
        {name: "special_text_and_unicode", messages: [{role: "system", content: " " + TRICKY}, {role: "user", content: TRICKY}, {role: "assistant", content: TRICKY}, {role: "user", content: TRICKY}], add_generation_prompt: true},
        ...extra,
    ];
}

const THINKING = {
    name: "assistant_with_reasoning",
    messages: [U1, {role: "assistant", content: "<think>\nThe user greets.\n</think>\n\nHi there!"}, U2],
    add_generation_prompt: true,
};
const NOT_ALTERNATING = {name: "roles_not_alternating", messages: [U1, U2], add_generation_prompt: true};

const KNOWN_TEMPLATES = {
    // HuggingFaceH4/zephyr-7b-beta and TinyLlama/TinyLlama-1.1B-Chat-v1.0 (tokenizer_config.json)
    zephyr: "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}",
    // meta-llama/Llama-2-7b-chat-hf (tokenizer_config.json)
    llama2: "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'system' %}{{ '<<SYS>>\\n' + content.strip() + '\\n<</SYS>>\\n\\n' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
};

// The template string of the named test case in tests/test-chat-template.cpp:
// the C string literal after `/* .template_str= */` following `/* .name= */ "NAME"`.
export function testChatTemplateString(source, name) {
    const at = source.indexOf(`/* .name= */ ${JSON.stringify(name)}`);
    if (at < 0) throw new Error(`no test case ${name}`);
    const marker = source.indexOf("/* .template_str= */", at);
    const open = source.indexOf('"', marker);
    let out = "";
    for (let i = open + 1; i < source.length; ++i) {
        const c = source[i];
        if (c === '"') return out;
        if (c !== "\\") { out += c; continue; }
        const e = source[++i];
        out += e === "n" ? "\n" : e === "t" ? "\t" : e;
    }
    throw new Error(`unterminated template string of ${name}`);
}

function families(args) {
    const ggufTemplate = async () => {
        const info = await readGgufFileInfo(args.model, {readTensorInfo: false});
        const md = info.metadata.tokenizer;
        const tokens = md.ggml.tokens;
        return {text: md.chat_template, bos: tokens[md.ggml.bos_token_id], eos: tokens[md.ggml.eos_token_id]};
    };
    const file = (rel) => async () => ({text: fs.readFileSync(path.join(args.llamaSrc, rel), "utf8")});
    const testCase = (name) => async () => ({
        text: testChatTemplateString(fs.readFileSync(path.join(args.llamaSrc, "tests/test-chat-template.cpp"), "utf8"), name),
    });
    const known = (key) => async () => ({text: KNOWN_TEMPLATES[key]});
    return [
        {name: "smollm2", source: {model_metadata: "tokenizer.chat_template"}, load: ggufTemplate, cases: conversations()},
        {name: "qwen2.5", source: {llama_source: "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"}, bos: "<|endoftext|>", eos: "<|im_end|>", cases: conversations()},
        {name: "qwen3", source: {llama_source: "models/templates/Qwen-Qwen3-0.6B.jinja"}, bos: "<|endoftext|>", eos: "<|im_end|>", cases: conversations([THINKING])},
        {name: "llama3.2", source: {llama_source: "models/templates/meta-llama-Llama-3.2-3B-Instruct.jinja"}, bos: "<|begin_of_text|>", eos: "<|eot_id|>", cases: conversations()},
        {name: "llama3.1", source: {llama_source: "models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja"}, bos: "<|begin_of_text|>", eos: "<|eot_id|>", cases: conversations()},
        {name: "phi3.5", source: {llama_source: "models/templates/microsoft-Phi-3.5-mini-instruct.jinja"}, bos: "<s>", eos: "<|endoftext|>", cases: conversations()},
        {name: "zephyr", source: {text: KNOWN_TEMPLATES.zephyr}, bos: "<s>", eos: "</s>", cases: conversations()},
        {name: "llama2", source: {text: KNOWN_TEMPLATES.llama2}, bos: "<s>", eos: "</s>", cases: conversations([NOT_ALTERNATING])},
        {name: "mistral-v0.2", source: {llama_test_case: "mistralai/Mistral-7B-Instruct-v0.2 (NOTE: Old pre-v1 without a system prompt)"},
         bos: "<s>", eos: "</s>", cases: conversations([NOT_ALTERNATING])},
    ].map((f) => ({
        ...f,
        load: f.load ?? (f.source.llama_source ? file(f.source.llama_source)
            : f.source.llama_test_case ? testCase(f.source.llama_test_case) : async () => ({text: f.source.text})),
    }));
}

function buildRenderer(llamaSrc) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "chat-golden-"));
    const exe = path.join(dir, "render");
    const j = (p) => path.join(llamaSrc, p);
    const sources = ["lexer", "parser", "runtime", "value", "string", "caps"].map((n) => j(`common/jinja/${n}.cpp`));
    console.error("building the llama.cpp Jinja renderer ...");
    execFileSync("g++", ["-std=c++17", "-O1", `-I${j("common")}`, `-I${j("vendor")}`, `-I${j("ggml/include")}`,
        path.join(HERE, "render-with-llama-jinja.cpp"), ...sources, j("common/json.cpp"), j("common/unicode.cpp"),
        "-o", exe], {stdio: "inherit"});
    return exe;
}

// Every template of llama.cpp's models/templates, on two conversations: the
// breadth check (tests/golden/chat/llama-cpp-templates.json).
const BREADTH_CASES = [
    {name: "multi_turn_tricky", messages: [SYS, U1, A1, {role: "user", content: TRICKY}], add_generation_prompt: true},
    {name: "user_only", messages: [U1], add_generation_prompt: true},
];

function breadthGolden(args, exe) {
    const dir = path.join(args.llamaSrc, "models", "templates");
    const files = fs.readdirSync(dir).filter((f) => f.endsWith(".jinja")).sort();
    const requests = [];
    for (const f of files) {
        const text = fs.readFileSync(path.join(dir, f), "utf8");
        for (const c of BREADTH_CASES) {
            const context = {messages: c.messages, bos_token: "<s>", eos_token: "</s>", enable_thinking: true,
                datetime: DATETIME, date_string: DATE_STRING, add_generation_prompt: true};
            requests.push(JSON.stringify({template: text, now: NOW, context}));
        }
    }
    const run = spawnSync(exe, [], {input: requests.join("\n") + "\n", env: {...process.env, TZ: "UTC"}, maxBuffer: 1 << 28});
    if (run.status !== 0) throw new Error(`renderer failed: ${run.stderr}`);
    const results = run.stdout.toString("utf8").trim().split("\n").map((l) => JSON.parse(l));
    let k = 0;
    return {
        generator: "scripts/golden/chat/make-chat-golden.mjs (llama.cpp common/jinja)",
        bos_token: "<s>",
        eos_token: "</s>",
        now: NOW,
        conversations: BREADTH_CASES,
        templates: files.map((f) => ({
            llama_source: `models/templates/${f}`,
            results: BREADTH_CASES.map(() => {
                const r = results[k++];
                // Errors keep only llama.cpp's message, not its source excerpt.
                return r.error ? {error: r.error.slice(r.error.lastIndexOf("\n") + 1)} : r;
            }),
        })),
    };
}

async function main() {
    const args = parseArgs(process.argv);
    const exe = buildRenderer(args.llamaSrc);
    fs.mkdirSync(args.outDir, {recursive: true});
    for (const fam of families(args)) {
        const loaded = await fam.load();
        const bos = loaded.bos ?? fam.bos, eos = loaded.eos ?? fam.eos;
        const requests = fam.cases.map((c) => {
            const context = {messages: c.messages, bos_token: bos, eos_token: eos, enable_thinking: true,
                datetime: DATETIME, date_string: DATE_STRING};
            if (c.add_generation_prompt) context.add_generation_prompt = true;
            return JSON.stringify({template: loaded.text, now: NOW, context});
        });
        const run = spawnSync(exe, [], {input: requests.join("\n") + "\n", env: {...process.env, TZ: "UTC"}, maxBuffer: 1 << 26});
        if (run.status !== 0) throw new Error(`renderer failed on ${fam.name}: ${run.stderr}`);
        const results = run.stdout.toString("utf8").trim().split("\n").map((l) => JSON.parse(l));
        const golden = {
            generator: "scripts/golden/chat/make-chat-golden.mjs (llama.cpp common/jinja)",
            template: fam.source,
            bos_token: bos,
            eos_token: eos,
            now: NOW,
            enable_thinking: true,
            cases: fam.cases.map((c, i) => ({...c, ...results[i]})),
        };
        const out = path.join(args.outDir, `${fam.name}.json`);
        fs.writeFileSync(out, JSON.stringify(golden, null, 1) + "\n");
        const errors = results.filter((r) => r.error).length;
        console.error(`${out}: ${results.length} cases (${errors} raise errors)`);
    }
    const breadth = breadthGolden(args, exe);
    const out = path.join(args.outDir, "llama-cpp-templates.json");
    fs.writeFileSync(out, JSON.stringify(breadth, null, 1) + "\n");
    console.error(`${out}: ${breadth.templates.length} templates`);
}

main().catch((e) => { console.error(e.message ?? e); process.exit(1); });
