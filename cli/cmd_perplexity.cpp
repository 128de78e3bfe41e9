// smolinfer perplexity: llama-perplexity's measure over a text file.
#include <cstdio>

#include "commands.h"
#include "smolinfer/perplexity.h"

namespace smolinfer::cli {

namespace {

struct PerplexityFlags {
    ModelFlags model;
    std::string file;
    int n_ctx = 512;
};

int run(const PerplexityFlags& f) {
    ModelFlags mf = f.model;
    mf.context = f.n_ctx;
    auto session = mf.open();
    const std::vector<TokenId> tokens = session->tokenize(read_file(f.file), true, false);
    std::fprintf(stderr, "%zu tokens, %zu chunks of %d\n", tokens.size(), tokens.size() / size_t(f.n_ctx), f.n_ctx);
    const auto r = perplexity(*session, tokens, f.n_ctx, [](const PerplexityResult& partial) {
        std::fprintf(stderr, "[%zu]%.4f,", partial.chunks.size(), partial.ppl);
    });
    std::fprintf(stderr, "\n");
    std::printf("Final estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.stderr_ppl);
    return 0;
}

}  // namespace

Action add_perplexity(CLI::App& app) {
    auto f = std::make_shared<PerplexityFlags>();
    f->model.add(app, false);
    app.add_option("-f,--file", f->file, "text file")->required();
    app.add_option("-c,--ctx-size", f->n_ctx, "chunk (context) size in tokens")->capture_default_str()->check(CLI::Range(4, 1 << 20));
    return [f] { return run(*f); };
}

}  // namespace smolinfer::cli
