// smolinfer: run, tokenize, bench and perplexity on a Llama GGUF model;
// quantize converts one, split cuts one into parts; serve answers OpenAI's
// HTTP API.
// Errors are one line on stderr and exit code 1.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "smolinfer/error.h"

namespace smolinfer::cli {

void ModelFlags::add(CLI::App& app, bool with_context, bool with_attention) {
    app.add_option("-m,--model", model, "GGUF model file")->required();
    app.add_option("-t,--threads", threads, "threads (default: one per hardware thread)")->check(CLI::Range(1, 256));
    app.add_flag("--mmap", mmap,
                 "use the model file's bytes in place (mapped, as llama.cpp's default) instead of reading it into "
                 "memory: the kernel may reclaim them; decoding from memory read in was faster");
    if (with_context) {
        app.add_option("-c,--ctx-size", context, "context size in tokens (default: min(4096, the model's))")
            ->check(CLI::Range(1, 1 << 20));
        app.add_option("--chat-template-file", chat_template_file,
                       "a Jinja chat template to use instead of the model's (as llama-server's)");
        app.add_flag("--swa-full", swa_full,
                     "sliding-window layers (Gemma 3) cache the whole context, not a ring of the window + 512");
    }
    if (with_attention) {
        app.add_option_function<std::string>(
               "--flash-attn",
               [this](const std::string& v) {
                   const auto f = parse_flash_attention(v);
                   if (!f) throw CLI::ValidationError("--flash-attn", "must be on, off or auto (got '" + v + "')");
                   flash_attention = *f;
               },
               "-fa: attention as llama.cpp computes it with flash attention on, off, or auto (its default: on)")
            ->type_name("on|off|auto");
    }
}

std::unique_ptr<Session> ModelFlags::open(int batch) const {
    SessionOptions o;
    o.threads = threads;
    o.context = context;
    o.batch = batch;
    o.flash_attention = flash_attention;
    o.swa_full = swa_full;
    o.map_file = mmap;
    if (!chat_template_file.empty()) o.chat_template = read_file(chat_template_file);
    auto session = Session::open_file(model, o);
    for (const std::string& w : session->warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
    return session;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read '" + path + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw Error("error while reading '" + path + "'");
    return ss.str();
}

void for_each_jsonl_string(const std::string& path, const std::function<void(const std::string&, const std::string&)>& f) {
    std::istringstream lines(read_file(path));
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
        if (line.empty() || line == "\r") continue;
        const std::string where = path + ":" + std::to_string(n);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
            throw Error(where + ": not JSON (" + e.what() + ")");
        }
        if (!j.is_string()) throw Error(where + ": expected a JSON string");
        f(j.get<std::string>(), where);
    }
}

}  // namespace smolinfer::cli

int main(int argc, char** argv) {
    using namespace smolinfer::cli;
    CLI::App app("smolinfer: a small, exact Llama inference engine", "smolinfer");
    app.require_subcommand(1);
    app.set_version_flag("--version", "smolinfer 0.1.0");
    std::vector<std::pair<CLI::App*, Action>> actions;
    auto add = [&](const char* name, const char* help, Action (*make)(CLI::App&)) {
        CLI::App* sub = app.add_subcommand(name, help);
        actions.emplace_back(sub, make(*sub));
    };
    add("run", "generate text from a prompt", add_run);
    add("tokenize", "print the token ids of a text", add_tokenize);
    add("bench", "measure prefill and decode speed", add_bench);
    add("perplexity", "perplexity of a text file, as llama.cpp computes it", add_perplexity);
    add("quantize", "convert a GGUF model to another type mix (Q8_0, Q4_K_M, ...)", add_quantize);
    add("split", "cut a GGUF model into parts (llama.cpp's gguf-split layout)", add_split);
    add("serve", "an OpenAI-compatible HTTP server (continuous batching)", add_serve);
    add("embed", "the embedding of a text (JSON arrays), as llama.cpp computes it", add_embed);

    // CLI11 would only say that a subcommand is required.
    if (argc > 1 && argv[1][0] != '-') {
        bool known = false;
        for (const auto& [sub, action] : actions) known = known || sub->get_name() == argv[1];
        if (!known) {
            std::fprintf(stderr, "error: unknown command '%s' (expected run, tokenize, bench, perplexity, quantize, split or serve)\n", argv[1]);
            return 1;
        }
    }
    // llama.cpp spells --flash-attn -fa; CLI11 allows one-letter short names only.
    std::vector<std::string> args(argv + 1, argv + argc);
    for (std::string& a : args) {
        if (a == "-fa") a = "--flash-attn";
    }
    std::reverse(args.begin(), args.end());  // CLI11 parses a vector from its back
    try {
        app.parse(args);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "error: %s (see 'smolinfer --help')\n", e.what());
        return 1;
    }
    try {
        for (auto& [sub, action] : actions) {
            if (sub->parsed()) return action();
        }
    } catch (const smolinfer::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "error: out of memory\n");
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 1;
}
