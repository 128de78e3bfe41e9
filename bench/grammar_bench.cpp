// Grammar overhead on the real model: decode tokens/s under a grammar
// relative to without it, from the two costs that make up the difference
// (timed separately, best of r runs, so that a busy machine disturbs the
// ratio less than timing two whole generations would):
//   forward: one decode step (Session::evaluate of one token);
//   grammar: the matcher's allowed-token mask plus accepting the token,
//            replayed over a greedy generation under the grammar, from a
//            fresh matcher each run (cold caches, as in a real generation).
// ratio = forward / (forward + grammar); the sampler's own work is the same
// with or without a grammar and is left out.
//
// usage: grammar_bench MODEL GRAMMAR.gbnf [N_TOKENS=128] [REPS=5] [THREADS=0]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "grammar/matcher.h"
#include "grammar/vocab_tokens.h"
#include "runtime/file_bytes.h"
#include "smolinfer/session.h"
#include "text/detokenizer.h"
#include "text/vocab.h"

using namespace smolinfer;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: grammar_bench MODEL GRAMMAR.gbnf [N_TOKENS=128] [REPS=5] [THREADS=0]\n");
        return 1;
    }
    try {
        const std::string model = argv[1];
        std::ifstream in(argv[2], std::ios::binary);
        if (!in) throw Error(std::string("cannot read '") + argv[2] + "'");
        std::ostringstream text;
        text << in.rdbuf();
        const std::string gbnf = text.str();
        const int n = argc > 3 ? std::stoi(argv[3]) : 128;
        const int reps = argc > 4 ? std::stoi(argv[4]) : 5;

        SessionOptions o;
        o.threads = argc > 5 ? std::stoi(argv[5]) : 0;
        o.context = 1024;
        auto session = Session::open_file(model, o);

        const auto bytes = runtime::FileBytes::map(model);
        const gguf::File file = gguf::File::parse(bytes->bytes());
        const text::Vocab vocab = text::Vocab::from_metadata(file.metadata());
        const auto t_table = Clock::now();
        const auto table = grammar::vocab_token_table(vocab);
        const double table_ms = seconds_since(t_table) * 1e3;

        // A long greedy generation under the grammar: ignore_eos keeps the
        // model from ending early where the grammar allows more.
        const auto prompt = session->tokenize_chat(
            {{"user", "Describe ten countries (name, capital, population, languages, cities) as one JSON object."}});
        GenerateOptions g;
        g.max_tokens = n;
        g.sampling.temperature = 0.0f;
        g.grammar = gbnf;
        g.ignore_eos = true;
        const GenerationStats st = session->generate(prompt, g, nullptr);
        const std::vector<TokenId> tokens = st.tokens;
        if (tokens.empty()) throw Error("the grammar produced no tokens");

        double best_grammar = 1e30, best_forward = 1e30;
        for (int r = 0; r < reps; ++r) {
            grammar::Matcher m(grammar::parse_grammar(gbnf), table);
            const auto t0 = Clock::now();
            for (const TokenId t : tokens) {
                (void)m.allowed(true);
                m.accept(t);
            }
            best_grammar = std::min(best_grammar, seconds_since(t0) / double(tokens.size()));

            session->reset();
            session->evaluate(prompt, false);
            const auto t1 = Clock::now();
            for (const TokenId t : tokens) session->evaluate({&t, 1}, false);
            best_forward = std::min(best_forward, seconds_since(t1) / double(tokens.size()));
        }
        const double ratio = best_forward / (best_forward + best_grammar);
        std::printf("{\"grammar\": \"%s\", \"tokens\": %zu, \"threads\": %d, \"trie_nodes\": %zu, \"table_ms\": %.1f, "
                    "\"grammar_ms_per_token\": %.4f, \"forward_ms_per_token\": %.3f, \"decode_tps\": %.1f, "
                    "\"grammar_decode_tps\": %.1f, \"ratio\": %.4f}\n",
                    argv[2], tokens.size(), session->threads(), table->trie.node_count(), table_ms, best_grammar * 1e3,
                    best_forward * 1e3, 1.0 / best_forward, 1.0 / (best_forward + best_grammar), ratio);
        std::fprintf(stderr, "text: %s\n", session->detokenize(tokens).c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
