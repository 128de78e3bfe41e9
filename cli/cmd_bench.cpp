// smolinfer bench: prefill and decode speed, as llama-bench measures them
// (pp: a batch of p tokens; tg: n tokens one at a time; each from an empty
// cache, or after d tokens already in it as llama-bench -d), median of r
// repetitions.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "sample/rng.h"
#include "smolinfer/batch.h"

namespace smolinfer::cli {

namespace {

struct BenchFlags {
    ModelFlags model;
    int n_prompt = 128;
    int n_gen = 128;
    int depth = 0;  // tokens in the cache before each test (untimed)
    int reps = 3;
    bool json = false;
    std::string grammar_file;
    std::string grammar;
    std::string grammar_prompt = "Describe three countries (name, capital, population, languages) as one JSON object.";
    int sequences = 0;  // > 0: also decode this many sequences together (BatchGenerator)
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct GrammarSpeed {
    double constrained_tps = 0;    // median decode tokens/s (forward pass + sampling) under the grammar
    double unconstrained_tps = 0;  // the same prompt and token count without it
    int tokens = 0;                // tokens the constrained runs generated
};

// Decode speed of real generations (sampling included) with and without the
// grammar: greedy on a chat prompt, the unconstrained run as long as the
// constrained one.
GrammarSpeed measure_grammar(Session& session, const BenchFlags& f) {
    const auto prompt = session.tokenize_chat({{"user", f.grammar_prompt}});
    GenerateOptions constrained;
    constrained.max_tokens = f.n_gen;
    constrained.sampling.temperature = 0.0f;
    constrained.grammar = f.grammar;
    std::vector<double> with, without;
    GrammarSpeed out;
    for (int r = 0; r < f.reps; ++r) {
        session.reset();
        const GenerationStats c = session.generate(prompt, constrained, nullptr);
        GenerateOptions plain = constrained;
        plain.grammar.clear();
        plain.ignore_eos = true;
        plain.max_tokens = std::max(2, c.generated_tokens);
        session.reset();
        const GenerationStats u = session.generate(prompt, plain, nullptr);
        with.push_back(c.decode_tps());
        without.push_back(u.decode_tps());
        out.tokens = c.generated_tokens;
    }
    out.constrained_tps = median(with);
    out.unconstrained_tps = median(without);
    return out;
}

// Aggregate decode speed of f.sequences generations of f.n_gen tokens each,
// decoding together as the server batches them (prompts of 8 random tokens,
// read before the timing starts).
double measure_sequences(Session& session, const BenchFlags& f, sample::Rng& rng) {
    BatchGenerator batch(session, f.sequences);
    GenerateOptions o;
    o.max_tokens = f.n_gen;
    o.ignore_eos = true;
    o.sampling.temperature = 0.0f;
    std::vector<double> runs;
    for (int r = 0; r < f.reps; ++r) {
        for (int i = 0; i < f.sequences; ++i) {
            std::vector<TokenId> prompt(8);
            for (auto& id : prompt) id = TokenId(rng.next() % uint64_t(session.info().n_vocab));
            batch.add(prompt, o);
        }
        batch.step();  // the prompts, and each first token
        long long tokens = 0;
        const auto t0 = std::chrono::steady_clock::now();
        while (batch.running() > 0) {
            for (const BatchEvent& e : batch.step()) tokens += e.token >= 0 ? 1 : 0;
        }
        runs.push_back(double(tokens) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(runs);
}

int run(const BenchFlags& f) {
    ModelFlags mf = f.model;
    mf.context = f.depth + std::max(f.n_prompt, f.n_gen + 8) + 1 + (f.grammar.empty() ? 0 : 256);
    // Batches as large as the prompt, and as llama.cpp's micro-batch for the
    // depth fill (untimed, but one token at a time it took minutes at 4096).
    auto session = mf.open(std::max({1, f.n_prompt, std::min(f.depth, 512)}));
    const int n_vocab = session->info().n_vocab;

    // Arbitrary but fixed tokens: the speed does not depend on which.
    sample::Rng rng(1234);
    auto random_tokens = [&](int n) {
        std::vector<TokenId> t(static_cast<size_t>(n));
        for (auto& id : t) id = TokenId(rng.next() % uint64_t(n_vocab));
        return t;
    };
    using clock = std::chrono::steady_clock;
    auto secs = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };

    // One untimed warm-up pass brings the weights into memory.
    session->reset();
    session->evaluate(random_tokens(std::max(1, std::min(f.n_prompt, 16))), false);

    // A fresh cache holding f.depth tokens (one request, as llama-bench fills it).
    auto fill = [&] {
        session->reset();
        if (f.depth > 0) session->evaluate(random_tokens(f.depth), false);
    };
    std::vector<double> pp, tg;
    for (int r = 0; r < f.reps; ++r) {
        if (f.n_prompt > 0) {
            const auto tokens = random_tokens(f.n_prompt);
            fill();
            const auto t0 = clock::now();
            session->evaluate(tokens, false);
            pp.push_back(f.n_prompt / secs(t0));
        }
        if (f.n_gen > 0) {
            const auto tokens = random_tokens(f.n_gen);
            fill();
            const auto t0 = clock::now();
            for (const TokenId t : tokens) session->evaluate({&t, 1}, false);
            tg.push_back(f.n_gen / secs(t0));
        }
    }
    // Peak resident memory: the weight pages touched (file-backed, shared)
    // plus the KV cache and scratch.
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const uint64_t peak_rss = uint64_t(usage.ru_maxrss) * 1024;
    const GrammarSpeed gs = f.grammar.empty() ? GrammarSpeed{} : measure_grammar(*session, f);
    const double batch_tps = f.sequences > 0 && f.n_gen > 1 ? measure_sequences(*session, f, rng) : 0;
    const double pp_tps = pp.empty() ? 0 : median(pp);
    const double tg_tps = tg.empty() ? 0 : median(tg);
    if (f.json) {
        nlohmann::json j;
        j["prefill_tps"] = pp_tps;
        j["decode_tps"] = tg_tps;
        j["threads"] = session->threads();
        j["model"] = f.model.model;
        j["prefill_tokens"] = f.n_prompt;
        j["decode_tokens"] = f.n_gen;
        j["depth"] = f.depth;
        j["flash_attention"] = session->flash_attention();
        j["kernels"] = session->kernels();
        j["reps"] = f.reps;
        j["prefill_tps_runs"] = pp;
        j["decode_tps_runs"] = tg;
        j["peak_rss_bytes"] = peak_rss;
        j["state_bytes"] = session->memory_bytes();
        j["vocab_tokens"] = session->info().n_vocab;
        j["vocab_load_ms"] = session->info().vocab_load_ms;
        j["vocab_bytes"] = session->info().vocab_bytes;
        if (f.sequences > 0) {
            j["sequences"] = f.sequences;
            j["sequences_decode_tps"] = batch_tps;
        }
        if (!f.grammar.empty()) {
            j["grammar_file"] = f.grammar_file;
            j["grammar_tokens"] = gs.tokens;
            j["grammar_decode_tps"] = gs.constrained_tps;
            j["grammar_unconstrained_decode_tps"] = gs.unconstrained_tps;
            j["grammar_ratio"] = gs.unconstrained_tps > 0 ? gs.constrained_tps / gs.unconstrained_tps : 0;
        }
        std::printf("%s\n", j.dump().c_str());
    } else {
        std::printf("model: %s (%s)\nthreads: %d\nflash attention: %s\nkernels: %s\n", f.model.model.c_str(),
                    session->info().weight_types.c_str(), session->threads(), session->flash_attention() ? "on" : "off",
                    session->kernels().c_str());
        const std::string at = f.depth > 0 ? " @ d" + std::to_string(f.depth) : "";
        if (f.n_prompt > 0) std::printf("pp%d%s: %.1f tok/s (median of %d)\n", f.n_prompt, at.c_str(), pp_tps, f.reps);
        if (f.n_gen > 0) std::printf("tg%d%s: %.1f tok/s (median of %d)\n", f.n_gen, at.c_str(), tg_tps, f.reps);
        if (batch_tps > 0) {
            std::printf("tg%d x %d sequences together: %.1f tok/s in all (median of %d)\n", f.n_gen, f.sequences,
                        batch_tps, f.reps);
        }
        if (!f.grammar.empty()) {
            std::printf("grammar %s: %.1f tok/s constrained, %.1f tok/s without, ratio %.3f (%d tokens, median of %d)\n",
                        f.grammar_file.c_str(), gs.constrained_tps, gs.unconstrained_tps,
                        gs.unconstrained_tps > 0 ? gs.constrained_tps / gs.unconstrained_tps : 0, gs.tokens, f.reps);
        }
        std::printf("peak RSS: %.1f MiB (KV cache and scratch %.1f MiB; weights %s)\n", double(peak_rss) / (1 << 20),
                    double(session->memory_bytes()) / (1 << 20), f.model.mmap ? "mapped from the file" : "read into memory");
        std::printf("vocabulary: %d tokens, loaded in %.1f ms, %.1f MiB\n", session->info().n_vocab,
                    session->info().vocab_load_ms, double(session->info().vocab_bytes) / (1 << 20));
    }
    return 0;
}

}  // namespace

Action add_bench(CLI::App& app) {
    auto f = std::make_shared<BenchFlags>();
    f->model.add(app, false);
    app.add_option("-p,--n-prompt", f->n_prompt, "prompt tokens for the prefill test")->capture_default_str()->check(CLI::Range(0, 4096));
    app.add_option("-n,--n-gen", f->n_gen, "tokens for the decode test")->capture_default_str()->check(CLI::Range(0, 4096));
    app.add_option("-d,--n-depth", f->depth, "tokens already in the context before each test (as llama-bench -d)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 20));
    app.add_option("-r,--repetitions", f->reps, "repetitions (the median is reported)")->capture_default_str()->check(CLI::Range(1, 1000));
    app.add_flag("--json", f->json, "print one JSON object");
    app.add_option("--sequences", f->sequences,
                   "also decode this many sequences together (as smolinfer serve batches them) and report their total tokens/s")
        ->check(CLI::Range(1, 256));
    app.add_option("--grammar-file", f->grammar_file,
                   "also measure generation under this GBNF grammar against the same generation without it");
    app.add_option("--grammar-prompt", f->grammar_prompt, "chat prompt for the grammar measurement")->capture_default_str();
    return [f] {
        if (!f->grammar_file.empty()) {
            try {
                f->grammar = read_file(f->grammar_file);
            } catch (const Error& e) {
                throw Error(std::string("--grammar-file: ") + e.what());
            }
            if (f->grammar.empty()) throw Error("--grammar-file: '" + f->grammar_file + "' is empty");
        }
        return run(*f);
    };
}

}  // namespace smolinfer::cli
