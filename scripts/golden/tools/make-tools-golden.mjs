// Tool-calling golden files: what llama.cpp (common/chat.cpp, the code
// llama-server --jinja runs) makes of tools + messages for each template
// family, written to tests/golden/tools/:
//   prompts.json  the template's tool-call format (llama.cpp's auto-analyser)
//                 and the rendered prompt of several tools + messages cases
//                 (tests/test_chat_tools_golden.cpp compares ours byte for byte);
//   parse.json    what llama.cpp's output parser makes of model outputs
//                 (content, tool calls, or an error) per template, tool_choice
//                 and parallel_tool_calls (tests/test_tool_output_golden.cpp).
//
// llama.cpp's chat code is not in node-llama-cpp's JavaScript API, so this
// script compiles llama-chat-tools-tool.cpp against the common library
// node-llama-cpp ships prebuilt (the same commit as its source tree) and
// feeds it one request per line.
//
// Usage: node make-tools-golden.mjs [--llama-src DIR] [--model SMOLLM2.gguf] [--llama-lib DIR] [--out-dir DIR]
//   (defaults: $SMOLINFER_LLAMA_SRC, $SMOLINFER_MODEL, the linux-x64 binaries
//   of scripts/golden/node_modules, tests/golden/tools)
//
// Templates are never copied: the golden names the llama.cpp source file or
// the model metadata key the test reads them from. llama.cpp dates Llama 3.x
// prompts with the real local clock (not inputs.now), so the script records
// the moment it ran, runs with TZ=UTC, and the test renders at that moment.

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
        llamaLib: path.resolve(HERE, "..", "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64"),
        outDir: path.resolve(HERE, "..", "..", "..", "tests", "golden", "tools"),
    };
    for (let i = 2; i < argv.length; ++i) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === "--llama-src") args.llamaSrc = next();
        else if (a === "--model") args.model = next();
        else if (a === "--llama-lib") args.llamaLib = path.resolve(next());
        else if (a === "--out-dir") args.outDir = path.resolve(next());
        else throw new Error(`unknown argument ${a}`);
    }
    if (!args.llamaSrc) throw new Error("--llama-src (or SMOLINFER_LLAMA_SRC) is required");
    if (!args.model) throw new Error("--model (or SMOLINFER_MODEL) is required");
    if (!fs.existsSync(path.join(args.llamaLib, "libllama-common.so"))) {
        throw new Error(`no libllama-common.so in ${args.llamaLib} (npm ci in scripts/golden, or --llama-lib)`);
    }
    return args;
}

function buildTool(args) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tools-golden-"));
    const exe = path.join(dir, "chat-tools");
    const j = (p) => path.join(args.llamaSrc, p);
    const lib = args.llamaLib;
    const libs = fs.readdirSync(lib);
    const pick = (re) => {
        const f = libs.find((n) => re.test(n));
        if (!f) throw new Error(`no library matching ${re} in ${lib}`);
        return `-l:${f}`;
    };
    console.error("building the llama.cpp chat-tools tool ...");
    execFileSync("g++", ["-std=c++17", "-O0", `-I${j("common")}`, `-I${j("include")}`, `-I${j("ggml/include")}`,
        `-I${j("vendor")}`, path.join(HERE, "llama-chat-tools-tool.cpp"), `-L${lib}`, "-l:libllama-common.so",
        pick(/^libllama\.v[0-9.]+\.so$/), pick(/^libggml\.v[0-9.]+\.so$/), "-l:libggml-base.so", `-Wl,-rpath,${lib}`,
        "-o", exe], {stdio: "inherit"});
    return exe;
}

// ---- the cases --------------------------------------------------------------

const WEATHER = {type: "function", function: {name: "get_weather", description: "Get the weather",
    parameters: {type: "object", properties: {location: {type: "string"}, unit: {type: "string", enum: ["c", "f"]}},
        required: ["location"]}}};
const ADD = {type: "function", function: {name: "add",
    parameters: {type: "object", properties: {a: {type: "integer"}, b: {type: "integer"}}, required: ["a", "b"]}}};
// No description, no parameters: llama.cpp fills in "" and {}.
const NOW_TOOL = {type: "function", function: {name: "current_time"}};
// Markup-looking text, quotes, non-ASCII and numbers in a schema.
const TRICKY = {type: "function", function: {name: "do-it.now",
    description: "Say \"hi\" <|im_end|> caf\u00e9 \u65e5\u672c {{ x }}\n\tend",
    parameters: {type: "object", properties: {n: {type: "number", minimum: 0.5, maximum: 10}, tags:
        {type: "array", items: {type: "string"}}, opt: {type: ["string", "null"]}, flag: {type: "boolean"}},
        required: ["n"]}}};

const SYS = {role: "system", content: "You are a careful assistant."};
const ASK = {role: "user", content: "What's the weather in Paris?"};
const CALL1 = {id: "call_1", type: "function", function: {name: "get_weather", arguments: "{\"location\": \"Paris\"}"}};
const CALL2 = {id: "call_2", type: "function", function: {name: "add", arguments: "{\"a\":1,\"b\":2}"}};
const RESULT1 = {role: "tool", tool_call_id: "call_1", name: "get_weather", content: "22C"};
const RESULT2 = {role: "tool", tool_call_id: "call_2", name: "add", content: "3"};
const THANKS = {role: "user", content: "thanks"};

const CASES = [
    {name: "user_two_tools", messages: [ASK], tools: [WEATHER, ADD]},
    {name: "system_user_two_tools", messages: [SYS, ASK], tools: [WEATHER, ADD]},
    {name: "round_trip", messages: [SYS, ASK, {role: "assistant", content: null, tool_calls: [CALL1]}, RESULT1, THANKS],
        tools: [ADD]},
    {name: "round_trip_no_system", messages: [ASK, {role: "assistant", content: null, tool_calls: [CALL1]}, RESULT1],
        tools: [WEATHER]},
    {name: "content_before_call", messages: [ASK, {role: "assistant", content: "I'll check.", tool_calls: [CALL1]},
        RESULT1], tools: [WEATHER, ADD]},
    {name: "object_arguments", messages: [ASK, {role: "assistant", content: "",
        tool_calls: [{id: "c", type: "function", function: {name: "add", arguments: {b: 2, a: 1}}}]},
        {role: "tool", tool_call_id: "c", content: "3"}], tools: [ADD]},
    {name: "two_calls_two_results", messages: [ASK, {role: "assistant", content: null, tool_calls: [CALL1, CALL2]},
        RESULT1, RESULT2], tools: [WEATHER, ADD]},
    {name: "history_without_tools", messages: [ASK, {role: "assistant", content: null, tool_calls: [CALL1]}, RESULT1]},
    {name: "tool_choice_none", messages: [ASK], tools: [WEATHER], tool_choice: "none"},
    {name: "defaults_and_tricky_tool", messages: [SYS, ASK], tools: [NOW_TOOL, TRICKY]},
    {name: "ends_with_tool_result", messages: [ASK, {role: "assistant", content: null, tool_calls: [CALL1]}, RESULT1],
        tools: [WEATHER], add_generation_prompt: false},
    {name: "no_tools_plain", messages: [SYS, ASK, {role: "assistant", content: "Sunny."}, THANKS]},
];

async function templates(args) {
    const info = await readGgufFileInfo(args.model, {readTensorInfo: false});
    const md = info.metadata.tokenizer;
    const tokens = md.ggml.tokens;
    const file = (rel) => fs.readFileSync(path.join(args.llamaSrc, rel), "utf8");
    return [
        {name: "smollm2", template: {model_metadata: "tokenizer.chat_template"}, text: md.chat_template,
            bos: tokens[md.ggml.bos_token_id], eos: tokens[md.ggml.eos_token_id]},
        {name: "hermes2-tool-use", template: {llama_source: "models/templates/NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja"},
            bos: "<|begin_of_text|>", eos: "<|im_end|>"},
        {name: "qwen2.5", template: {llama_source: "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"},
            bos: "<|endoftext|>", eos: "<|im_end|>"},
        {name: "qwen3", template: {llama_source: "models/templates/Qwen-Qwen3-0.6B.jinja"},
            bos: "<|endoftext|>", eos: "<|im_end|>"},
        {name: "llama3.2", template: {llama_source: "models/templates/meta-llama-Llama-3.2-3B-Instruct.jinja"},
            bos: "<|begin_of_text|>", eos: "<|eot_id|>"},
        {name: "llama3.1", template: {llama_source: "models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja"},
            bos: "<|begin_of_text|>", eos: "<|eot_id|>"},
    ].map((t) => ({...t, text: t.text ?? file(t.template.llama_source)}));
}

function runTool(exe, requests) {
    const run = spawnSync(exe, [], {input: requests.map((r) => JSON.stringify(r)).join("\n") + "\n",
        env: {...process.env, TZ: "UTC"}, maxBuffer: 1 << 28});
    if (run.status !== 0) throw new Error(`chat-tools tool failed: ${run.stderr}`);
    return run.stdout.toString("utf8").trim().split("\n").map((l) => JSON.parse(l));
}

// The date llama.cpp writes into Llama 3.x prompts (%d %b %Y, local time = UTC here).
function dateString(seconds) {
    const d = new Date(seconds * 1000);
    const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    return `${String(d.getUTCDate()).padStart(2, "0")} ${months[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
}

// Model outputs (after the generation prompt) for the parser, per syntax.
const HERMES_OUTPUTS = [
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>",
    "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>",
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>",
    "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}, {\"name\": \"add\", \"arguments\": {\"a\": 3, \"b\": 4}}\n</tool_call>",
    "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call> trailing text",
    "<tool_call>\n{\"arguments\": {\"a\": 1}, \"name\": \"add\"}\n</tool_call>",
    "<tool_call>\n{\"name\": \"sub\", \"arguments\": {}}\n</tool_call>",
    "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"location\":\"Paris\"}}</tool_call>",
    "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}</tool_call>",
    "<tool_call>\n{ \"name\" : \"add\" , \"arguments\" : { \"a\" : 1 , \"b\" : 2 } }\n</tool_call>",
    "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}, \"id\": \"x\"}\n</tool_call>",
    "<tool_call>\n{\"name\": \"add\", \"arguments\": 5}\n</tool_call>",
    "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": \"x}{\", \"c\": [1, {\"d\": null}]}}\n</tool_call>",
    "\n\n  Hello \n",
    "Hello",
    "Hi <tool_",
    "Hi <tool_call>\n",
    "Hi <tool_call>\n{\"name\": \"get_w",
    "Hi <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Par",
    "Hello <tool_call> world",
    "Use {x} here",
    "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>\n\n",
    "caf\u00e9 \u65e5\u672c\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"K\u00f6ln \\\"x\\\"\"}}\n</tool_call>",
];
const LLAMA_OUTPUTS = [
    "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}",
    "{\"type\": \"function\", \"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}",
    "Let me check. {\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}",
    "{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}",
    "{\"type\":\"function\",\"function\":{\"name\":\"add\",\"parameters\":{\"a\":1,\"b\":2}}}",
    "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}, {\"name\": \"add\", \"parameters\": {\"a\": 3, \"b\": 4}}",
    "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}\n{\"name\": \"add\", \"parameters\": {\"a\": 3, \"b\": 4}}",
    "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}} trailing",
    "Use {x} here",
    "The set {1,2}.",
    "Hello",
    "Hi {",
    "  {\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}  ",
    "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Par",
];
const PARSE_TEMPLATES = [["hermes2-tool-use", HERMES_OUTPUTS], ["qwen2.5", HERMES_OUTPUTS], ["llama3.2", LLAMA_OUTPUTS],
    ["smollm2", ["Hello", "  <tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"]]];

function parseGolden(exe, tpls) {
    const out = {generator: "scripts/golden/tools/make-tools-golden.mjs (llama.cpp common/chat.cpp)",
        tools: [WEATHER, ADD], templates: []};
    for (const [name, outputs] of PARSE_TEMPLATES) {
        const t = tpls.find((x) => x.name === name);
        const variants = [];
        for (const tool_choice of ["auto", "required", "none"]) {
            for (const parallel of [true, false]) {
                variants.push({tool_choice, parallel_tool_calls: parallel});
            }
        }
        const requests = variants.map((v) => ({template: t.text, bos: t.bos, eos: t.eos, messages: [ASK],
            tools: [WEATHER, ADD], ...v, outputs: outputs.map((text) => ({text, partial: false}))}));
        const results = runTool(exe, requests);
        out.templates.push({name, template: t.template, bos_token: t.bos, eos_token: t.eos, outputs,
            variants: variants.map((v, i) => ({...v, generation_prompt: results[i].generation_prompt,
                grammar: results[i].grammar, grammar_lazy: results[i].grammar_lazy, grammar_triggers: results[i].grammar_triggers,
                results: results[i].parsed.map((p) => p.error ? {error: p.error} : {message: p.message})}))});
    }
    return out;
}

async function main() {
    const args = parseArgs(process.argv);
    const exe = buildTool(args);
    fs.mkdirSync(args.outDir, {recursive: true});
    const now = Math.floor(Date.now() / 1000);
    const out = {generator: "scripts/golden/tools/make-tools-golden.mjs (llama.cpp common/chat.cpp)", now,
        date_string: dateString(now), templates: []};
    const tpls = await templates(args);
    for (const t of tpls) {
        const base = {template: t.text, bos: t.bos, eos: t.eos};
        const requests = CASES.map((c, i) => ({...base, analyze: i === 0, messages: c.messages, tools: c.tools,
            tool_choice: c.tool_choice ?? "auto", add_generation_prompt: c.add_generation_prompt ?? true}));
        const results = runTool(exe, requests);
        const cases = CASES.map((c, i) => {
            const r = results[i];
            const expect = r.error ? {error: r.error} : {prompt: r.prompt};
            return {...c, add_generation_prompt: c.add_generation_prompt ?? true, ...expect};
        });
        for (const c of cases) {
            if (c.prompt?.includes("Today Date:") && !c.prompt.includes(out.date_string)) {
                throw new Error(`${t.name}/${c.name}: the prompt's date is not ${out.date_string} (midnight passed?)`);
            }
        }
        const a = results[0].analysis;
        out.templates.push({name: t.name, template: t.template, bos_token: t.bos, eos_token: t.eos,
            analysis: {mode: a.mode, per_call_start: a.per_call_start, per_call_end: a.per_call_end,
                section_start: a.section_start, section_end: a.section_end, name_field: a.name_field,
                args_field: a.args_field, openai_wrapper_trigger: a.openai_wrapper_trigger,
                supports_tool_calls: a.caps.supports_tool_calls,
                supports_parallel_tool_calls: a.caps.supports_parallel_tool_calls,
                supports_object_arguments: a.caps.supports_object_arguments},
            cases});
        console.error(`${t.name}: ${a.mode}, ${cases.filter((c) => c.error).length} of ${cases.length} cases raise`);
    }
    const file = path.join(args.outDir, "prompts.json");
    fs.writeFileSync(file, JSON.stringify(out, null, 1) + "\n");
    console.error(`${file}: ${out.templates.length} templates`);
    const parse = parseGolden(exe, tpls);
    const parseFile = path.join(args.outDir, "parse.json");
    fs.writeFileSync(parseFile, JSON.stringify(parse, null, 1) + "\n");
    console.error(`${parseFile}: ${parse.templates.length} templates`);
}

main().catch((e) => { console.error(e.message ?? e); process.exit(1); });
