// Perplexity over ~2,000 tokens of English, equal to llama.cpp's (to 1e-6)
// on every golden model, with flash attention off and on
// (tests/golden/<model>[/flash-attn]/perplexity.json, written by
// scripts/make-golden). With flash attention, its 512-token chunks take
// llama.cpp's tiled path.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "smolinfer/perplexity.h"
#include "support/paths.h"

namespace smolinfer {
namespace {

class GoldenPerplexity : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenPerplexity, MatchesLlamaCppPerChunkAndOverall) {
    const auto golden = test::load_golden(GetParam() + "/perplexity.json");
    const int n_ctx = golden["n_ctx"];
    SessionOptions o;
    o.context = n_ctx;
    o.exact = !test::fast_arithmetic();
    o.flash_attention = test::golden_flash_attention(golden);
    const bool fast = test::fast_arithmetic();
    const auto session = Session::open_file(test::model_path(test::golden_run_model(GetParam())), o);
    const auto tokens = golden["token_ids"].get<std::vector<TokenId>>();
    const auto r = perplexity(*session, tokens, n_ctx);

    ASSERT_EQ(r.chunks.size(), golden["chunks"].size());
    for (size_t c = 0; c < r.chunks.size(); ++c) {
        EXPECT_EQ(r.chunks[c].count, golden["chunks"][c]["count"].get<int>());
        // Per token, the chunk's mean negative log-likelihood agrees to 1e-6
        // nats: the same logits, summed in double as llama-perplexity does
        // (measured: equal to the golden's 9 printed digits).
        EXPECT_NEAR(r.chunks[c].nll_sum / r.chunks[c].count,
                    golden["chunks"][c]["nll_sum"].get<double>() / golden["chunks"][c]["count"].get<double>(),
                    fast ? 2e-2 : 1e-6)
            << "chunk " << c;
    }
    const double want = golden["ppl"];
    std::printf("perplexity (%s): ours %.7f, llama.cpp %.7f (%.2e apart)\n", GetParam().c_str(), r.ppl, want,
                std::abs(r.ppl / want - 1));
    EXPECT_NEAR(r.ppl, want, 0.01 * want);  // the bar: within 1%
    // What we actually hold ourselves to: 1e-6, the same logits; the plain
    // WebAssembly build's fast arithmetic (not bit-exact) to 0.5%, on Gemma 3 to 1%: its
    // activations are larger (embeddings times sqrt(640), post-norms), and
    // the last-bit differences grow further through its layers (measured:
    // 0.55%; SmolLM2 0.09%).
    const double fast_bar = test::golden_run_model(GetParam()) == "gemma-3-270m" ? 1e-2 : 5e-3;
    EXPECT_NEAR(r.ppl, want, (fast ? fast_bar : 1e-6) * want);
}

INSTANTIATE_TEST_SUITE_P(Model, GoldenPerplexity, ::testing::ValuesIn(test::golden_runs()),
                         [](const auto& info) { return test::golden_run_test_name(info.param); });

}  // namespace
}  // namespace smolinfer
