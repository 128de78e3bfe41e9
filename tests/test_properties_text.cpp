// Property tests of tokenization and detokenization on the tiny test
// vocabulary (tests/support/tiny_model.h: 3 control tokens, all 256 byte
// tokens, a few merges), a few thousand seeded random cases each; see
// tests/support/text_property_checks.h for the exact statements and
// tests/support/text_properties.h for seeds and reproduction. The same
// properties run on SmolLM2's vocabulary in test_properties_text_model.cpp.
//
// What holds on this vocabulary (every byte has a token, so nothing is
// dropped):
//   - valid UTF-8 s: detok(tok(s, parse_special=false), *) == s, and
//     detok(tok(s, parse_special=true), special=true) == s;
//   - with parse_special on, special texts become control tokens, which
//     detokenize to "" unless special=true;
//   - arbitrary bytes b: detok(tok(b)) == lenient_normalize(b) (invalid
//     bytes become U+FFFD, overlong forms are re-encoded), so invalid UTF-8
//     does NOT round-trip;
//   - streaming gives exactly the whole text, never splitting a character.
#include <gtest/gtest.h>

#include "smolinfer/session.h"
#include "support/text_properties.h"
#include "support/text_property_checks.h"
#include "support/tiny_model.h"

namespace smolinfer {
namespace {

using namespace test::props;
using test::tiny_vocab;

TEST(TextPropertiesTiny, NoByteIsMissing) {
    const auto m = missing_bytes(tiny_vocab());
    EXPECT_EQ(std::count(m.begin(), m.end(), true), 0);
}

TEST(TextPropertiesTiny, RoundTripValidUtf8WithoutSpecialParsing) { round_trip_plain(tiny_vocab(), cases(3000), 0); }

TEST(TextPropertiesTiny, RoundTripValidUtf8WithSpecialParsing) { round_trip_special(tiny_vocab(), cases(3000), 100000); }

TEST(TextPropertiesTiny, ArbitraryBytesComeBackNormalized) { arbitrary_bytes(tiny_vocab(), cases(3000), 200000); }

TEST(TextPropertiesTiny, StreamingTokenizedText) { stream_tokenized(tiny_vocab(), cases(3000), 300000); }

TEST(TextPropertiesTiny, StreamingRandomIds) { stream_random_ids(tiny_vocab(), cases(4000), 400000); }

// The oracles themselves, on hand-checked inputs.
TEST(TextPropertiesTiny, OraclesOnKnownInputs) {
    EXPECT_EQ(lenient_normalize("abc"), "abc");
    EXPECT_EQ(lenient_normalize("\xFF"), "\xEF\xBF\xBD");
    EXPECT_EQ(lenient_normalize("\xC3"), "\xEF\xBF\xBD");
    EXPECT_EQ(lenient_normalize("\xC0\x80"), std::string(1, '\0'));  // overlong NUL
    EXPECT_EQ(lenient_normalize("\xED\xA0\x80"), "\xED\xA0\x80");    // a surrogate is kept
    EXPECT_EQ(lenient_normalize("\xE4\xB8"), "\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(unfinished_tail("a\xE4\xB8"), 2u);
    EXPECT_EQ(unfinished_tail("a\xE4\xB8\x96"), 0u);
    EXPECT_EQ(unfinished_tail("\xF0\x9F\x98"), 3u);
    EXPECT_EQ(unfinished_tail("\x80\x80"), 0u);
    EXPECT_EQ(unfinished_tail("\xFF"), 0u);
    EXPECT_TRUE(strict_utf8("h\xC3\xA9 \xF0\x9F\x98\x80"));
    EXPECT_FALSE(strict_utf8("\xC0\x80"));
    EXPECT_FALSE(strict_utf8("\xED\xA0\x80"));
    // And the engine on the same inputs: invalid UTF-8 is not preserved.
    const text::Tokenizer tok(tiny_vocab());
    for (const std::string b : {"\xFF", "a\xC3", "\xC0\x80", "\xE4\xB8", "\x80x"}) {
        EXPECT_EQ(text::detokenize(tiny_vocab(), tok.encode(b, false, false), false), lenient_normalize(b))
            << escaped(b);
        EXPECT_NE(lenient_normalize(b), b);
    }
}

// Generation streams through the same decoder: for random prompts, seeds,
// sampling settings, token limits and (small) contexts, the event texts of
// Session::generate concatenate to detokenize(stats.tokens), the events with
// a token carry exactly stats.tokens in order, only the last event may have
// token -1, and no event ends inside a character of the whole text. Random
// weights emit arbitrary byte tokens, so characters are split and broken.
TEST(TextPropertiesTiny, GenerationEventsConcatenateToTheDetokenizedTokens) {
    test::TinyModelSpec spec;
    spec.tied_output = false;
    const auto bytes = test::tiny_llama(spec);
    SessionOptions so;
    so.threads = 1;
    so.context = 48;
    auto s = Session::open_bytes(bytes, so);
    Failures f("generation events == detokenize(tokens)");
    const int n = cases(300);
    for (int i = 0; i < n; ++i) {
        const uint64_t seed = base_seed() + 500000 + uint64_t(i);
        TextGen g(seed);
        TextOptions o;
        o.max_items = 6;
        std::string prompt_text = g.text(o);
        if (prompt_text.empty()) prompt_text = "x";
        auto prompt = s->tokenize(prompt_text, false, false);
        if (prompt.size() > 40) prompt.resize(40);
        GenerateOptions go;
        go.max_tokens = g.pick(60);  // often more than the context leaves: ContextFull
        go.ignore_eos = g.pick(2);
        go.sampling.seed = seed;
        go.sampling.temperature = float(g.pick(4)) * 0.6f;  // 0 (greedy) .. 1.8
        go.sampling.top_k = g.pick(3) == 0 ? 0 : g.pick(50);
        go.sampling.top_p = g.pick(2) ? 1.0f : 0.5f + 0.1f * float(g.pick(5));
        go.sampling.min_p = g.pick(2) ? 0.0f : 0.05f * float(g.pick(4));
        s->reset();
        std::string streamed;
        std::vector<TokenId> event_tokens;
        std::vector<size_t> boundaries;
        bool after_final = false;
        const auto st = s->generate(prompt, go, [&](const TokenEvent& e) {
            if (after_final) f.report("an event after the token -1 event: " + where(seed, prompt_text));
            if (e.token < 0) after_final = true;
            else event_tokens.push_back(e.token);
            streamed += e.text;
            boundaries.push_back(streamed.size());
            return true;
        });
        if (event_tokens != st.tokens) f.report("event tokens differ from stats.tokens: " + where(seed, prompt_text));
        const std::string whole = s->detokenize(st.tokens);
        if (streamed != whole) {
            f.report("streamed " + escaped(streamed) + " != " + escaped(whole) + ": " + where(seed, prompt_text));
            continue;
        }
        std::vector<bool> inside(whole.size() + 1, false);
        for (const Unit& u : lenient_units(whole)) {
            for (size_t k = 1; u.complete && k < u.len; ++k) inside[u.begin + k] = true;
        }
        for (const size_t b : boundaries) {
            if (inside[b]) f.report("an event ends inside a character: " + where(seed, prompt_text));
        }
        // The limits: max_tokens, or the context (prompt + generated - 1
        // evaluated positions), whichever comes first, unless an end token.
        const int room = s->context() - int(prompt.size()) + 1;
        if (st.stop == StopReason::ContextFull && st.generated_tokens != room) {
            f.report("ContextFull after " + std::to_string(st.generated_tokens) + " tokens, room " +
                     std::to_string(room) + ": " + where(seed, prompt_text));
        }
        if (st.generated_tokens > std::min(go.max_tokens, room)) f.report("too many tokens: " + where(seed, prompt_text));
    }
}

}  // namespace
}  // namespace smolinfer
