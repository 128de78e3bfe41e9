// smolinfer embed: the embedding of a text (-p, -f), or of every JSON
// string line of a file (--jsonl), one JSON array each.
#include <chrono>
#include <charconv>
#include <cstdio>

#include "commands.h"

namespace smolinfer::cli {

namespace {

struct EmbedFlags {
    ModelFlags model;
    std::string prompt;
    std::string file;
    std::string jsonl;
    bool no_normalize = false;
};

// Each value as the shortest text that reads back as the same float.
void print_vector(const std::vector<float>& v) {
    std::string line = "[";
    char buf[32];
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) line += ',';
        const auto r = std::to_chars(buf, buf + sizeof buf, v[i]);
        line.append(buf, r.ptr);
    }
    line += "]\n";
    std::fputs(line.c_str(), stdout);
}

}  // namespace

Action add_embed(CLI::App& app) {
    auto f = std::make_shared<EmbedFlags>();
    f->model.add(app, true);
    auto* p = app.add_option("-p,--prompt", f->prompt, "text to embed");
    auto* file = app.add_option("-f,--file", f->file, "file whose whole text to embed");
    auto* jsonl = app.add_option("--jsonl", f->jsonl, "file with one JSON string per line; prints one JSON array each");
    p->excludes(file)->excludes(jsonl);
    file->excludes(jsonl);
    app.add_flag("--no-normalize", f->no_normalize, "print the raw vector instead of the L2-normalised one");
    return [f, p, file, jsonl] {
        if (p->count() + file->count() + jsonl->count() != 1) throw Error("embed needs one of -p, -f or --jsonl");
        auto session = f->model.open();
        const bool normalize = !f->no_normalize;
        // Timings on stderr, as run's: the texts, their tokens, the time
        // spent embedding them (tokenizing included, loading not).
        int texts = 0;
        size_t tokens = 0;
        double seconds = 0;
        const auto embed = [&](const std::string& text) {
            const auto t0 = std::chrono::steady_clock::now();
            const std::vector<TokenId> ids = session->tokenize(text, true, false);
            const std::vector<float> v = session->embed_tokens(ids, normalize);
            seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            ++texts;
            tokens += ids.size();
            print_vector(v);
        };
        if (!f->jsonl.empty()) {
            for_each_jsonl_string(f->jsonl, [&](const std::string& text, const std::string& where) {
                try {
                    embed(text);
                } catch (const Error& e) {
                    throw Error(where + ": " + e.what());
                }
            });
        } else {
            embed(p->count() ? f->prompt : read_file(f->file));
        }
        std::fprintf(stderr, "embed: %d text%s, %zu tokens in %.3f s (%.1f texts/s, %.0f tokens/s, %d threads)\n", texts,
                     texts == 1 ? "" : "s", tokens, seconds, seconds > 0 ? texts / seconds : 0.0,
                     seconds > 0 ? double(tokens) / seconds : 0.0, session->threads());
        return 0;
    };
}

}  // namespace smolinfer::cli
