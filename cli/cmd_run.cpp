// smolinfer run: stream a completion (or a chat answer) to stdout.
#include <chrono>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "run_tools.h"

namespace smolinfer::cli {

namespace {

struct RunFlags {
    ModelFlags model;
    std::string prompt;
    std::string system;
    int n_predict = -1;
    SamplingParams sampling;
    int64_t seed = -1;
    bool chat = false;
    bool json = false;
    std::vector<std::string> stop;
    std::string grammar_file;
    std::string grammar;  // its text, read before the model is opened
    std::string json_schema_file;
    std::string json_schema;  // its text, read before the model is opened
    std::string tools_file;
    std::string tool_choice;
    ToolRequest tools;  // read before the model is opened
};

int run(const RunFlags& f) {
    auto session = f.model.open();
    if (f.chat && !session->chat_template_warning().empty()) {
        std::fprintf(stderr, "warning: %s\n", session->chat_template_warning().c_str());
    }

    std::vector<TokenId> prompt;
    if (f.chat) {
        std::vector<ChatMessage> messages;
        if (!f.system.empty()) messages.push_back({"system", f.system});
        messages.push_back({"user", f.prompt});
        prompt = session->tokenize_chat(messages, true, f.tools.tools);
    } else {
        prompt = session->tokenize(f.prompt, true, true);
    }

    GenerateOptions opts;
    opts.sampling = f.sampling;
    opts.sampling.seed = f.seed >= 0 ? uint64_t(f.seed) : uint64_t(std::random_device{}());
    // -1: until end of generation or a full context.
    opts.max_tokens = f.n_predict >= 0 ? f.n_predict : session->context();
    opts.stop = f.stop;
    opts.grammar = f.grammar;
    opts.json_schema = f.json_schema;
    // With tools the answer is read back into content and calls (as the
    // server's), so it is printed whole once generated, not streamed.
    const ToolPlan plan = plan_tools(session->tool_syntax(true), f.tools);
    if (!f.tools.tools.empty() && session->tool_syntax(true).kind != ToolSyntax::Kind::Json) {
        std::fprintf(stderr, "warning: the chat template %s; no tool calls are read from the answer\n",
                     session->tool_syntax(true).kind == ToolSyntax::Kind::None
                         ? "shows no tool calls (the tools are not described to the model)"
                         : "writes tool calls in a syntax smolinfer does not read");
    }
    if (plan.grammar) {
        opts.grammar = plan.grammar->gbnf;
        opts.grammar_triggers = plan.grammar->triggers;
    }

    std::string text;
    const auto stats = session->generate(prompt, opts, [&](const TokenEvent& e) {
        if (f.json || plan.parse) {
            text += e.text;
        } else {
            std::fwrite(e.text.data(), 1, e.text.size(), stdout);
            std::fflush(stdout);
        }
        return true;
    });

    const ToolOutput calls = plan.parse ? parse_tool_output(session->tool_syntax(true), plan.names, plan.parallel, text)
                                        : ToolOutput{};
    if (f.json) {
        nlohmann::json out;
        out["prompt_ids"] = prompt;
        out["ids"] = stats.tokens;
        out["text"] = text;
        if (plan.parse) {
            // Calls only when the text reads as content and complete calls (print_tool_answer's rule).
            nlohmann::json list = nlohmann::json::array();
            if (calls.status == ToolOutput::Status::Complete) {
                for (const ToolCall& c : calls.calls) list.push_back({{"arguments", c.arguments}, {"name", c.name}});
            }
            out["tool_calls"] = std::move(list);
        }
        // Invalid UTF-8 (a model can emit any bytes) is escaped, not fatal.
        std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else if (plan.parse) {
        print_tool_answer(calls, text);
    } else {
        std::printf("\n");
    }
    std::fflush(stdout);  // the answer before the timings, also on a shared terminal
    std::fprintf(stderr,
                 "prompt: %d tokens (%d reused), %.1f tok/s | generated: %d tokens, %.1f tok/s | stop: %s | "
                 "threads: %d | seed: %llu\n",
                 stats.prompt_tokens, stats.reused_tokens, stats.prefill_tps(), stats.generated_tokens,
                 stats.decode_tps(), stop_reason_name(stats.stop), session->threads(),
                 static_cast<unsigned long long>(opts.sampling.seed));
    if (stats.stop == StopReason::ContextFull) {
        std::fprintf(stderr, "warning: the context (%d tokens) is full\n", session->context());
    }
    return 0;
}

}  // namespace

Action add_run(CLI::App& app) {
    auto f = std::make_shared<RunFlags>();
    f->model.add(app, true);
    app.add_option("-p,--prompt", f->prompt, "prompt text")->required();
    app.add_option("-n,--n-predict", f->n_predict, "tokens to generate (-1: until end of generation)")
        ->check(CLI::Range(-1, 1 << 20));
    app.add_option("--temp", f->sampling.temperature, "temperature; 0 is greedy")->capture_default_str();
    app.add_option("--top-k", f->sampling.top_k, "top-k; 0 is off")->capture_default_str();
    app.add_option("--top-p", f->sampling.top_p, "top-p; 1 is off")->capture_default_str();
    app.add_option("--min-p", f->sampling.min_p, "min-p; 0 is off")->capture_default_str();
    app.add_option("--repeat-penalty", f->sampling.repeat_penalty, "repetition penalty; 1 is off")->capture_default_str();
    app.add_option("--frequency-penalty", f->sampling.frequency_penalty,
                   "subtracted per occurrence among the last --repeat-last-n tokens; 0 is off")
        ->capture_default_str();
    app.add_option("--presence-penalty", f->sampling.presence_penalty,
                   "subtracted once from tokens among the last --repeat-last-n; 0 is off")
        ->capture_default_str();
    app.add_option("--repeat-last-n", f->sampling.repeat_last_n, "tokens the penalties look back")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 20));
    app.add_option("--seed", f->seed, "random seed (default: random, printed on stderr)")->check(CLI::NonNegativeNumber);
    app.add_option("--stop", f->stop,
                   "end the answer where this text appears, printing what precedes it (repeatable)")
        ->allow_extra_args(false);
    app.add_flag("--chat", f->chat, "wrap the prompt in the model's chat template");
    app.add_option("--system", f->system, "system message for --chat (default: the template's own)");
    app.add_flag("--json", f->json,
                 "print {\"prompt_ids\",\"ids\",\"text\"} (and \"tool_calls\" with --tools) instead of streaming");
    app.add_option("--grammar-file", f->grammar_file,
                   "constrain the output to a GBNF grammar (llama.cpp's format, start rule 'root')");
    app.add_option("--json-schema", f->json_schema_file,
                   "constrain the output to JSON valid under this JSON Schema file (as llama.cpp converts it)");
    app.add_option("--tools", f->tools_file,
                   "an OpenAI tools array (JSON file) the model may call; implies --chat. Prints the answer, then "
                   "each call as a JSON line {\"name\",\"arguments\"}");
    app.add_option("--tool-choice", f->tool_choice, "with --tools: auto (default), none, required, or a tool's name")
        ->type_name("auto|none|required|NAME");
    return [f] {
        if (!f->tool_choice.empty() && f->tools_file.empty()) throw Error("--tool-choice needs --tools");
        if (!f->tools_file.empty()) {
            if (!f->grammar_file.empty() || !f->json_schema_file.empty()) {
                throw Error("--tools: leave out --grammar-file and --json-schema (the tool calls have their grammar)");
            }
            f->tools = read_tools_flag(f->tools_file, f->tool_choice);
            f->chat = true;
        }
        if (!f->system.empty() && !f->chat) throw Error("--system needs --chat");
        if (!f->grammar_file.empty() && !f->json_schema_file.empty()) {
            throw Error("--grammar-file and --json-schema: give one of them");
        }
        // Read before the model is opened, so that a bad path fails fast.
        const auto read_option_file = [](const char* option, const std::string& path) {
            std::string text;
            try {
                text = read_file(path);
            } catch (const Error& e) {
                throw Error(std::string(option) + ": " + e.what());
            }
            if (text.empty()) throw Error(std::string(option) + ": '" + path + "' is empty");
            return text;
        };
        if (!f->grammar_file.empty()) f->grammar = read_option_file("--grammar-file", f->grammar_file);
        if (!f->json_schema_file.empty()) f->json_schema = read_option_file("--json-schema", f->json_schema_file);
        f->sampling.validate();
        return run(*f);
    };
}

}  // namespace smolinfer::cli
