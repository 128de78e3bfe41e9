// The smolinfer subcommands. Each registers its flags on the parser and
// returns the action to run once parsing succeeds.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "smolinfer/session.h"

namespace smolinfer::cli {

// -m, -t and (optionally) -c and -fa, shared by every subcommand.
struct ModelFlags {
    std::string model;
    int threads = 0;
    int context = 0;
    FlashAttention flash_attention = FlashAttention::Auto;
    bool swa_full = false;
    bool mmap = false;  // map the file instead of reading it into memory
    std::string chat_template_file;  // "": the model's own template

    void add(CLI::App& app, bool with_context, bool with_attention = true);
    std::unique_ptr<Session> open(int batch = SessionOptions{}.batch) const;
};

using Action = std::function<int()>;

Action add_run(CLI::App& app);
Action add_tokenize(CLI::App& app);
Action add_bench(CLI::App& app);
Action add_perplexity(CLI::App& app);
Action add_quantize(CLI::App& app);
Action add_split(CLI::App& app);
Action add_serve(CLI::App& app);
Action add_embed(CLI::App& app);

// Reads a whole file; throws smolinfer::Error naming the path.
std::string read_file(const std::string& path);

// Calls f(text, "path:line") for every non-empty line of a file that holds
// one JSON string per line; throws naming the line that is not one.
void for_each_jsonl_string(const std::string& path, const std::function<void(const std::string&, const std::string&)>& f);

}  // namespace smolinfer::cli
