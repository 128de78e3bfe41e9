// smolinfer tokenize: token ids of a text (-p, -f), or of every JSON string
// line of a file (--jsonl).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "commands.h"

namespace smolinfer::cli {

namespace {

struct TokenizeFlags {
    ModelFlags model;
    std::string prompt;
    std::string file;
    std::string jsonl;
    bool no_special = false;
};

void print_ids(const std::vector<TokenId>& ids) {
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) line += ' ';
        line += std::to_string(ids[i]);
    }
    std::printf("%s\n", line.c_str());
}

int run(const TokenizeFlags& f, bool have_prompt) {
    auto session = f.model.open();
    const bool parse_special = !f.no_special;
    if (have_prompt) {
        print_ids(session->tokenize(f.prompt, true, parse_special));
        return 0;
    }
    if (!f.file.empty()) {
        print_ids(session->tokenize(read_file(f.file), true, parse_special));
        return 0;
    }
    for_each_jsonl_string(f.jsonl, [&](const std::string& text, const std::string&) {
        std::printf("%s\n", nlohmann::json(session->tokenize(text, true, parse_special)).dump().c_str());
    });
    return 0;
}

}  // namespace

Action add_tokenize(CLI::App& app) {
    auto f = std::make_shared<TokenizeFlags>();
    f->model.add(app, false, false);
    auto* p = app.add_option("-p,--prompt", f->prompt, "text to tokenize");
    auto* file = app.add_option("-f,--file", f->file, "file whose whole text to tokenize");
    auto* jsonl = app.add_option("--jsonl", f->jsonl, "file with one JSON string per line; prints one JSON array each");
    p->excludes(file)->excludes(jsonl);
    file->excludes(jsonl);
    app.add_flag("--no-special", f->no_special, "treat special-token texts as plain text");
    return [f, p, file, jsonl] {
        if (p->count() + file->count() + jsonl->count() != 1) throw Error("tokenize needs one of -p, -f or --jsonl");
        return run(*f, p->count() == 1);
    };
}

}  // namespace smolinfer::cli
