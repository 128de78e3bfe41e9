// The public Session API (include/smolinfer/session.h) on the tiny random
// model (tests/support/tiny_model.h): generation limits and stop paths,
// streamed text, KV cache reuse, evaluate(), tokenization and input checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "smolinfer/session.h"
#include "support/tiny_model.h"
#include "support/generate_options.h"

namespace smolinfer {
namespace {

using namespace std::chrono_literals;

// The tiny model with its own (untied) output matrix. With tied embeddings
// its random layers barely move the residual stream, so greedy decoding just
// repeats the last prompt token forever, which would make most checks below
// trivially true; untied, greedy output varies and reaches end tokens.
std::vector<uint8_t> tiny_bytes() {
    test::TinyModelSpec spec;
    spec.tied_output = false;
    return test::tiny_llama(spec);
}

std::unique_ptr<Session> open_tiny(int context = 0, int batch = 64) {
    SessionOptions o;
    o.threads = 2;
    o.context = context;
    o.batch = batch;
    return Session::open_bytes(tiny_bytes(), o);
}

using test::greedy;

// Argmax with ties to the lowest id (the greedy sampler's rule), and the gap
// to the runner-up.
std::pair<TokenId, float> top1(std::span<const float> logits) {
    TokenId best = 0;
    for (size_t i = 1; i < logits.size(); ++i) {
        if (logits[i] > logits[size_t(best)]) best = TokenId(i);
    }
    float second = -INFINITY;
    for (size_t i = 0; i < logits.size(); ++i) {
        if (TokenId(i) != best) second = std::max(second, logits[i]);
    }
    return {best, logits[size_t(best)] - second};
}

TEST(Session, TinyModelBasics) {
    auto s = open_tiny();
    EXPECT_EQ(s->info().n_vocab, 3 + 256 + 9);
    EXPECT_EQ(s->info().architecture, "llama");
    EXPECT_EQ(s->context(), 256);  // min(4096, the tiny model's training context)
    EXPECT_EQ(s->batch(), 64);
    EXPECT_EQ(s->threads(), 2);
    EXPECT_TRUE(s->chat_template_warning().empty());
    EXPECT_TRUE(s->is_end_of_generation(2));  // <|im_end|>, also the EOS
    EXPECT_TRUE(s->is_end_of_generation(0));  // <|endoftext|>
    EXPECT_FALSE(s->is_end_of_generation(1));
    EXPECT_FALSE(s->is_end_of_generation(3 + 'a'));
}

TEST(Session, GreedyGenerationIsDeterministic) {
    auto a = open_tiny();
    auto b = open_tiny();
    const auto prompt = a->tokenize("Once upon a time", false);
    const auto ra = a->generate(prompt, greedy(20), nullptr);
    const auto rb = b->generate(prompt, greedy(20), nullptr);
    EXPECT_EQ(ra.tokens.size(), 20u);
    EXPECT_EQ(ra.tokens, rb.tokens);
    // Same session again after reset(): same tokens.
    a->reset();
    EXPECT_EQ(a->generate(prompt, greedy(20), nullptr).tokens, ra.tokens);
}

TEST(Session, SeededSamplingIsDeterministic) {
    auto a = open_tiny();
    auto b = open_tiny();
    const auto prompt = a->tokenize("Hello", false);
    GenerateOptions g = greedy(30);
    g.sampling.temperature = 1.0f;
    g.sampling.top_k = 0;
    g.sampling.top_p = 1.0f;
    g.sampling.min_p = 0.0f;
    g.sampling.seed = 1234;
    const auto ra = a->generate(prompt, g, nullptr);
    const auto rb = b->generate(prompt, g, nullptr);
    EXPECT_EQ(ra.tokens, rb.tokens);
    ASSERT_EQ(ra.tokens.size(), 30u);
}

TEST(Session, MaxTokensIsHonoured) {
    auto s = open_tiny();
    const auto prompt = s->tokenize("abc", false);
    int events = 0;
    const auto r = s->generate(prompt, greedy(5), [&](const TokenEvent& e) {
        if (e.token >= 0) ++events;
        return true;
    });
    EXPECT_EQ(r.stop, StopReason::MaxTokens);
    EXPECT_EQ(r.tokens.size(), 5u);
    EXPECT_EQ(r.generated_tokens, 5);
    EXPECT_EQ(events, 5);
    EXPECT_EQ(r.prompt_tokens, int(prompt.size()));
    EXPECT_EQ(r.reused_tokens, 0);
    // 5 tokens sampled; the first comes from the prompt's logits, the last is
    // never fed back, so 4 single-token evaluations.
    EXPECT_EQ(r.decode_evals, 4);
    // The cache holds the prompt and all generated tokens but the last.
    EXPECT_EQ(s->sequence().size(), prompt.size() + 4);
}

TEST(Session, EndOfGenerationStopsWithoutTheEndToken) {
    // Find a prompt whose greedy continuation (end tokens ignored) contains an
    // end-of-generation token; then generate again honouring it.
    auto s = open_tiny();
    for (const char* text : {"The", "Once upon a time", "a", "1", "2"}) {
        const auto prompt = s->tokenize(text, false);
        s->reset();
        const auto full = s->generate(prompt, greedy(150), nullptr);
        const auto eog = std::find_if(full.tokens.begin(), full.tokens.end(),
                                      [&](TokenId t) { return s->is_end_of_generation(t); });
        if (eog == full.tokens.end()) continue;
        const size_t k = size_t(eog - full.tokens.begin());

        s->reset();
        GenerateOptions g = greedy(150);
        g.ignore_eos = false;
        std::vector<TokenId> events;
        const auto r = s->generate(prompt, g, [&](const TokenEvent& e) {
            if (e.token >= 0) events.push_back(e.token);
            return true;
        });
        EXPECT_EQ(r.stop, StopReason::EndOfGeneration) << text;
        // Everything before the end token, and not the end token itself.
        const std::vector<TokenId> before(full.tokens.begin(), eog);
        EXPECT_EQ(r.tokens, before) << text;
        EXPECT_EQ(r.generated_tokens, int(k));
        EXPECT_EQ(events, before) << "no event for the end token";
        return;
    }
    FAIL() << "no test prompt reached an end-of-generation token; pick other prompts";
}

TEST(Session, MaxTokensZeroGeneratesNothing) {
    auto s = open_tiny();
    const auto prompt = s->tokenize("abc", false);
    int calls = 0;
    const auto r = s->generate(prompt, greedy(0), [&](const TokenEvent&) {
        ++calls;
        return true;
    });
    EXPECT_TRUE(r.tokens.empty());
    EXPECT_EQ(r.generated_tokens, 0);
    EXPECT_EQ(r.stop, StopReason::MaxTokens);
    EXPECT_EQ(calls, 0);
    GenerateOptions bad = greedy(-1);
    EXPECT_THROW(s->generate(prompt, bad, nullptr), Error);
}

TEST(Session, CallbackReturningFalseStopsRightAfterThatToken) {
    for (const int stop_at : {1, 3, 7}) {
        auto s = open_tiny();
        const auto prompt = s->tokenize("The quick brown fox", false);
        int real_events = 0;
        int events_after_false = 0;
        bool said_stop = false;
        const auto r = s->generate(prompt, greedy(50), [&](const TokenEvent& e) {
            if (said_stop && e.token >= 0) ++events_after_false;
            if (e.token >= 0) ++real_events;
            if (real_events == stop_at) said_stop = true;
            return real_events != stop_at;
        });
        EXPECT_EQ(r.stop, StopReason::Stopped) << stop_at;
        EXPECT_EQ(r.tokens.size(), size_t(stop_at));
        EXPECT_EQ(r.generated_tokens, stop_at);
        EXPECT_EQ(real_events, stop_at);
        EXPECT_EQ(events_after_false, 0) << "no token after the callback said stop";
    }
}

TEST(Session, StopFromAnotherThreadEndsAfterTheCurrentToken) {
    auto s = open_tiny();
    const auto prompt = s->tokenize("Stop me", false);
    std::atomic<bool> first_token{false}, stop_called{false};
    std::thread stopper([&] {
        while (!first_token) std::this_thread::yield();
        s->stop();
        stop_called = true;
    });
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = s->generate(prompt, greedy(200), [&](const TokenEvent& e) {
        if (e.token >= 0 && !first_token) {
            first_token = true;
            // Hold the first token until stop() has been called, so that the
            // stop lands "during" this token deterministically.
            while (!stop_called && std::chrono::steady_clock::now() - t0 < 10s) std::this_thread::yield();
        }
        return true;
    });
    stopper.join();
    EXPECT_EQ(r.stop, StopReason::Stopped);
    EXPECT_EQ(r.tokens.size(), 1u) << "generate() returns after the current token";
}

TEST(Session, StopEndsALongGeneration) {
    // The callback slows generation to ~1 ms a token (200 ms for all 200);
    // another thread stops it 20 ms after the first token.
    auto s = open_tiny();
    const auto prompt = s->tokenize("Go on", false);
    std::atomic<bool> started{false};
    std::thread stopper([&] {
        while (!started) std::this_thread::yield();
        std::this_thread::sleep_for(20ms);
        s->stop();
    });
    const auto r = s->generate(prompt, greedy(200), [&](const TokenEvent&) {
        started = true;
        std::this_thread::sleep_for(1ms);
        return true;
    });
    stopper.join();
    EXPECT_EQ(r.stop, StopReason::Stopped);
    EXPECT_GE(r.tokens.size(), 1u);
    EXPECT_LT(r.tokens.size(), 200u);
    // A later generate() is not affected by the earlier stop.
    const auto again = s->generate(prompt, greedy(5), nullptr);
    EXPECT_EQ(again.stop, StopReason::MaxTokens);
    EXPECT_EQ(again.tokens.size(), 5u);
}

TEST(Session, EventTextsConcatenateToTheDetokenizedTokens) {
    // Random weights produce arbitrary byte tokens, including split and
    // broken UTF-8: the streamed text must still add up exactly.
    for (const uint64_t seed : {1ull, 2ull, 3ull}) {
        auto s = open_tiny();
        const auto prompt = s->tokenize("héllo 世界", false);
        GenerateOptions g = greedy(40);
        g.sampling.temperature = 1.5f;
        g.sampling.top_k = 0;
        g.sampling.top_p = 1.0f;
        g.sampling.min_p = 0.0f;
        g.sampling.seed = seed;
        std::string streamed;
        std::vector<TokenId> event_tokens;
        const auto r = s->generate(prompt, g, [&](const TokenEvent& e) {
            streamed += e.text;
            if (e.token >= 0) event_tokens.push_back(e.token);
            return true;
        });
        EXPECT_EQ(event_tokens, r.tokens);
        EXPECT_EQ(streamed, s->detokenize(r.tokens)) << "seed " << seed;
    }
}

// Greedy tokens with every step's log-probability, to compare bit for bit.
GenerateOptions greedy_with_logprobs(int max_tokens) {
    GenerateOptions g = greedy(max_tokens);
    g.logprobs = true;
    return g;
}
std::vector<float> logprobs_of(const GenerationStats& st) {
    std::vector<float> out;
    for (const TokenLogprobs& l : st.logprobs) out.push_back(l.logprob);
    return out;
}

TEST(Session, ACachedConversationGivesAFreshSessionsAnswer) {
    auto a = open_tiny();
    const auto p1 = a->tokenize("Hello there, how are you", false);
    const auto g1 = a->generate(p1, greedy(8), nullptr);
    ASSERT_EQ(g1.tokens.size(), 8u);

    std::vector<TokenId> p2 = p1;
    p2.insert(p2.end(), g1.tokens.begin(), g1.tokens.end());
    const auto more = a->tokenize(" fine, thanks", false);
    p2.insert(p2.end(), more.begin(), more.end());
    const auto g2 = a->generate(p2, greedy_with_logprobs(8), nullptr);

    // The first prompt's cells are kept (as far as the new prompt's first
    // pass groups tokens as a fresh run's does); the answer's, decoded one
    // at a time, are read again as prompt tokens.
    EXPECT_GT(g2.reused_tokens, 0);
    EXPECT_LE(g2.reused_tokens, int(p1.size()));
    EXPECT_EQ(g2.prompt_tokens, int(p2.size()));
    const auto fresh = open_tiny()->generate(p2, greedy_with_logprobs(8), nullptr);
    EXPECT_EQ(g2.tokens, fresh.tokens);
    EXPECT_EQ(logprobs_of(g2), logprobs_of(fresh));

    // The same history through the low-level API: p1 in one call, then the
    // answer one token at a time. Each step's argmax is the next answer
    // token, and generate() then keeps the same cells and answers the same.
    auto b = open_tiny();
    auto logits = b->evaluate(p1, false);
    for (size_t i = 0; i < g1.tokens.size(); ++i) {
        EXPECT_EQ(top1(logits).first, g1.tokens[i]) << "step " << i;
        if (i + 1 < g1.tokens.size()) logits = b->evaluate(std::span<const TokenId>(&g1.tokens[i], 1), false);
    }
    const auto b2 = b->generate(p2, greedy_with_logprobs(8), nullptr);
    EXPECT_EQ(b2.reused_tokens, g2.reused_tokens);
    EXPECT_EQ(b2.tokens, g2.tokens);
    EXPECT_EQ(logprobs_of(b2), logprobs_of(g2));
}

TEST(Session, ARepeatedPromptGivesTheSameAnswer) {
    // llama.cpp would keep all but the prompt's last token and compute that
    // one alone, where the first run computed it in a batch; the kept cells
    // end where the rest is read in the fresh run's arithmetic instead.
    auto s = open_tiny();
    const auto p = s->tokenize("same prompt twice", false);
    const auto r1 = s->generate(p, greedy_with_logprobs(4), nullptr);
    const auto r2 = s->generate(p, greedy_with_logprobs(4), nullptr);
    EXPECT_EQ(r1.reused_tokens, 0);
    EXPECT_GT(r2.reused_tokens, 0);
    EXPECT_LT(r2.reused_tokens, int(p.size()) - 1) << "the last token read alone";
    EXPECT_EQ(r2.tokens, r1.tokens);
    EXPECT_EQ(logprobs_of(r2), logprobs_of(r1));
    // A prompt that diverges early keeps at most the common prefix.
    auto q = p;
    q[1] = q[1] == 3 + 'x' ? 3 + 'y' : 3 + 'x';
    const auto r3 = s->generate(q, greedy_with_logprobs(2), nullptr);
    EXPECT_LE(r3.reused_tokens, 1);
    const auto fresh = open_tiny()->generate(q, greedy_with_logprobs(2), nullptr);
    EXPECT_EQ(logprobs_of(r3), logprobs_of(fresh));
}

TEST(Session, EvaluateAllLogits) {
    auto s = open_tiny(0, 16);
    const int n_vocab = s->info().n_vocab;
    std::vector<TokenId> toks;
    for (int i = 0; i < 10; ++i) toks.push_back(3 + 'a' + i);
    const auto all = s->evaluate(toks, true);
    ASSERT_EQ(all.size(), size_t(n_vocab) * toks.size());
    for (const float x : all) ASSERT_TRUE(std::isfinite(x));
    const std::vector<float> last_row(all.end() - n_vocab, all.end());
    // Rows differ from one another (each token sees a different context).
    EXPECT_NE(std::vector<float>(all.begin(), all.begin() + n_vocab), last_row);
    EXPECT_EQ(s->sequence(), toks);

    // Only the last row, same batch in a fresh session: same numbers.
    auto t = open_tiny(0, 16);
    const auto last = t->evaluate(toks, false);
    ASSERT_EQ(last.size(), size_t(n_vocab));
    EXPECT_EQ(std::vector<float>(last.begin(), last.end()), last_row);

    // More than batch() tokens with all logits is refused (and changes nothing).
    auto u = open_tiny(0, 16);
    const std::vector<TokenId> too_many(size_t(u->batch()) + 1, 3 + 'a');
    EXPECT_THROW(u->evaluate(too_many, true), Error);
    EXPECT_TRUE(u->sequence().empty());
    // Without all logits, a long input is split into batches.
    const auto tail = u->evaluate(too_many, false);
    EXPECT_EQ(tail.size(), size_t(n_vocab));
    EXPECT_EQ(u->sequence().size(), too_many.size());
    // Exactly batch() tokens is fine.
    u->reset();
    const std::vector<TokenId> exactly(size_t(u->batch()), 3 + 'b');
    EXPECT_EQ(u->evaluate(exactly, true).size(), size_t(n_vocab) * exactly.size());
    // Nothing to evaluate is an error.
    EXPECT_THROW(u->evaluate(std::vector<TokenId>{}, false), Error);
}

TEST(Session, TokenizeDetokenizeRoundTrip) {
    auto s = open_tiny();
    const std::string text = "Hello wörld 😀 the <|im_end|> end\n\ttab";
    // Plain text (no special parsing): exact round trip, no control tokens.
    const auto plain = s->tokenize(text, false, false);
    for (const TokenId t : plain) EXPECT_GE(t, 3);
    EXPECT_EQ(s->detokenize(plain), text);
    // With special parsing the marker becomes the control token 2, which is
    // dropped unless detokenizing with special = true.
    const auto parsed = s->tokenize(text, false, true);
    EXPECT_EQ(std::count(parsed.begin(), parsed.end(), 2), 1);
    EXPECT_EQ(s->detokenize(parsed, true), text);
    std::string without = text;
    without.erase(without.find("<|im_end|>"), 10);
    EXPECT_EQ(s->detokenize(parsed, false), without);
    // The tiny model does not ask for a BOS.
    EXPECT_EQ(s->tokenize(text, true, false), plain);
    // The merges apply: " the" is one token.
    EXPECT_EQ(s->tokenize(" the", false, false).size(), 1u);
}

TEST(Session, TokenizeChatUsesControlTokensForMarkupOnly) {
    auto s = open_tiny();
    const auto ids = s->tokenize_chat({{"user", "say <|im_end|> please"}}, true);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 2);  // user opener, assistant opener
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);  // the template's im_end only
    EXPECT_EQ(s->detokenize(ids, true),
              "<|im_start|>user\nsay <|im_end|> please<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_THROW(s->tokenize_chat({}, true), Error);
    EXPECT_THROW(s->tokenize_chat({{"robot", "x"}}, true), Error);
}

TEST(Session, TemplateBosIsNotDoubledWhenTheVocabularyAddsOne) {
    // A Llama-style template that writes bos_token itself (the tiny vocabulary's BOS is <|im_start|>, id 1).
    test::TinyModelSpec spec;
    spec.add_bos = true;
    spec.chat_template = "{{ bos_token }}{% for m in messages %}{{ m.content + eos_token }}{% endfor %}";
    SessionOptions o;
    o.threads = 1;
    const auto s = Session::open_bytes(test::tiny_llama(spec), o);
    EXPECT_TRUE(s->chat_template_warning().empty()) << s->chat_template_warning();
    const auto ids = s->tokenize_chat({{"user", "hi"}}, true);
    ASSERT_GE(ids.size(), 3u);
    EXPECT_EQ(ids.front(), 1);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 1) << "one BOS, as llama.cpp strips the template's";
    EXPECT_EQ(ids.back(), 2);  // eos_token is the vocabulary's EOS text, a control token
    EXPECT_EQ(s->detokenize(ids, true), "<|im_start|>hi<|im_end|>");
}

// A token decoded alone past 256 positions: llama.cpp splits its flash
// attention between its threads, and so does the session, each thread a
// part of every head of a KV head, folded after. The numbers are those of
// one thread reproducing the same split, bit for bit.
TEST(Session, SplitFlashDecodeOnThreadsEqualsOneThread) {
    test::TinyModelSpec spec;
    spec.n_embd = 384;  // 6 heads of 64 over 2 KV heads (SmolLM2-135M's head size and grouping)
    spec.n_head = 6;
    spec.n_head_kv = 2;
    spec.n_ctx = 1024;
    spec.tied_output = false;
    const std::vector<uint8_t> bytes = test::tiny_llama(spec);
    SessionOptions o;
    o.context = 1024;
    o.flash_attention = FlashAttention::On;
    o.threads = 2;
    const auto spread = Session::open_bytes(bytes, o);
    o.threads = 1;
    o.reference_threads = 2;
    const auto alone = Session::open_bytes(bytes, o);
    std::vector<TokenId> prompt(300);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = TokenId(3 + (i * 37) % 256);
    std::span<const float> a = spread->evaluate(prompt, false);
    std::span<const float> b = alone->evaluate(prompt, false);
    for (int step = 0; step < 40; ++step) {
        ASSERT_EQ(a.size(), b.size());
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "logits after position " << 299 + step;
        const TokenId next = top1(a).first;
        a = spread->evaluate({&next, 1}, false);
        b = alone->evaluate({&next, 1}, false);
    }
}

TEST(Session, PromptLongerThanTheContextThrows) {
    auto s = open_tiny(32);
    EXPECT_EQ(s->context(), 32);
    const std::vector<TokenId> too_long(33, 3 + 'a');
    EXPECT_THROW(s->generate(too_long, greedy(1), nullptr), Error);
    EXPECT_THROW(s->evaluate(too_long, false), Error);
    EXPECT_TRUE(s->sequence().empty());
    // A prompt that exactly fills the context yields one token, then the context is full.
    const std::vector<TokenId> full(32, 3 + 'a');
    const auto r = s->generate(full, greedy(10), nullptr);
    EXPECT_EQ(r.tokens.size(), 1u);
    EXPECT_EQ(r.stop, StopReason::ContextFull);
    // Generation that runs into the end of the context stops there.
    s->reset();
    const std::vector<TokenId> half(30, 3 + 'a');
    const auto r2 = s->generate(half, greedy(10), nullptr);
    EXPECT_EQ(r2.stop, StopReason::ContextFull);
    EXPECT_EQ(r2.tokens.size(), 3u);  // 30 + 2 evaluated = 32; the third is sampled from the last logits
}

TEST(Session, InvalidTokenIdsThrow) {
    auto s = open_tiny();
    const int n = s->info().n_vocab;
    EXPECT_THROW(s->generate(std::vector<TokenId>{3 + 'a', n}, greedy(1), nullptr), Error);
    EXPECT_THROW(s->generate(std::vector<TokenId>{-1}, greedy(1), nullptr), Error);
    EXPECT_THROW(s->generate(std::vector<TokenId>{}, greedy(1), nullptr), Error);
    EXPECT_THROW(s->evaluate(std::vector<TokenId>{n + 100}, false), Error);
    EXPECT_THROW(s->detokenize(std::vector<TokenId>{n}), Error);
    EXPECT_TRUE(s->sequence().empty());
    // Bad sampling options are rejected up front.
    GenerateOptions g = greedy(1);
    g.sampling.top_p = 0.0f;
    EXPECT_THROW(s->generate(std::vector<TokenId>{3 + 'a'}, g, nullptr), Error);
}

TEST(Session, BadOptionsThrow) {
    SessionOptions o;
    o.context = 257;  // beyond the tiny model's training context of 256
    EXPECT_THROW(Session::open_bytes(tiny_bytes(), o), Error);
    o = {};
    o.batch = 0;
    EXPECT_THROW(Session::open_bytes(tiny_bytes(), o), Error);
    o = {};
    o.context = -1;
    EXPECT_THROW(Session::open_bytes(tiny_bytes(), o), Error);
}

}  // namespace
}  // namespace smolinfer

namespace smolinfer {
namespace {

// The step API yields the same tokens and text as generate(), one per call.
TEST(Generation, StepByStepEqualsGenerate) {
    auto a = open_tiny();
    auto b = open_tiny();
    const auto prompt = a->tokenize("Once upon a time", false);
    GenerateOptions o = greedy(24);
    o.sampling.temperature = 0.7f;  // sampled, seeded: the RNG must advance the same way
    o.sampling.seed = 99;
    std::string text_a;
    const auto ra = a->generate(prompt, o, [&](const TokenEvent& e) {
        text_a += e.text;
        return true;
    });
    const auto gen = b->start(prompt, o);
    std::string text_b;
    int events = 0;
    while (const auto e = gen->next()) {
        text_b += e->text;
        ++events;
    }
    EXPECT_EQ(gen->stats().tokens, ra.tokens);
    EXPECT_EQ(text_b, text_a);
    EXPECT_GE(events, 24);
    EXPECT_EQ(gen->stats().stop, StopReason::MaxTokens);
    EXPECT_FALSE(gen->next().has_value());  // stays ended
}

TEST(Generation, CancelEndsItAtOnce) {
    auto s = open_tiny();
    const auto gen = s->start(s->tokenize("Once upon a time", false), greedy(50));
    ASSERT_TRUE(gen->next().has_value());
    ASSERT_TRUE(gen->next().has_value());
    gen->cancel();
    EXPECT_FALSE(gen->next().has_value());
    EXPECT_EQ(gen->stats().generated_tokens, 2);
    EXPECT_EQ(gen->stats().stop, StopReason::Stopped);
}

// Stop strings: the streamed text is the text without them cut before the
// first occurrence, never more at any point, and the reason is StopString.
TEST(Generation, StopStringsCutTheTextAndEndIt) {
    GenerateOptions g = greedy(48);
    g.sampling.temperature = 1.0f;
    g.sampling.top_k = 0;
    g.sampling.top_p = 1.0f;
    g.sampling.min_p = 0.0f;
    int checked = 0;
    for (const uint64_t seed : {1ull, 2ull, 3ull, 4ull, 5ull}) {
        g.sampling.seed = seed;
        g.stop.clear();
        auto s = open_tiny();
        const auto prompt = s->tokenize("Once upon a time", false);
        std::string full;
        s->generate(prompt, g, [&](const TokenEvent& e) {
            full += e.text;
            return true;
        });
        if (full.size() < 12) continue;
        // Two stop strings taken from the text; the one completed first wins.
        g.stop = {full.substr(full.size() * 2 / 3, 3), full.substr(full.size() / 3, 2)};
        const size_t a = full.find(g.stop[0]), b = full.find(g.stop[1]);
        const std::string want = full.substr(0, a + 3 < b + 2 || (a + 3 == b + 2 && a < b) ? a : b);
        std::string streamed;
        const auto r = s->generate(prompt, g, [&](const TokenEvent& e) {
            streamed += e.text;
            EXPECT_EQ(want.compare(0, streamed.size(), streamed), 0) << "seed " << seed << ": released past the cut";
            return true;
        });
        EXPECT_EQ(r.stop, StopReason::StopString);
        EXPECT_STREQ(stop_reason_name(r.stop), "stop");
        EXPECT_EQ(streamed, want) << "seed " << seed;
        EXPECT_LT(r.tokens.size(), 48u);
        ++checked;
    }
    EXPECT_GE(checked, 3);
}

TEST(Generation, StopStringThatNeverAppearsChangesNothing) {
    auto s = open_tiny();
    const auto prompt = s->tokenize("Once upon a time", false);
    GenerateOptions g = greedy(20);
    std::string a, b;
    const auto ra = s->generate(prompt, g, [&](const TokenEvent& e) { a += e.text; return true; });
    g.stop = {"\x01\x02\x03 never"};
    const auto rb = s->generate(prompt, g, [&](const TokenEvent& e) { b += e.text; return true; });
    EXPECT_EQ(ra.tokens, rb.tokens);
    EXPECT_EQ(a, b);
    EXPECT_EQ(rb.stop, StopReason::MaxTokens);
    g.stop = {""};
    EXPECT_THROW(s->start(prompt, g), Error);
}

// Greedy log-probabilities are the log-softmax of the logits the model
// gives for that position (computed here from evaluate(), in double).
TEST(Generation, GreedyLogprobsAreTheLogSoftmaxOfTheLogits) {
    auto s = open_tiny();
    auto ref = open_tiny();
    const auto prompt = s->tokenize("Once upon a time", false);
    GenerateOptions g = greedy(12);
    g.logprobs = true;
    g.top_logprobs = 5;
    std::vector<const TokenLogprobs*> seen;
    const auto r = s->generate(prompt, g, [&](const TokenEvent& e) {
        if (e.token >= 0) {
            EXPECT_NE(e.logprobs, nullptr);
            if (e.logprobs) {
                EXPECT_EQ(e.logprobs->token, e.token);
            }
        } else {
            EXPECT_EQ(e.logprobs, nullptr);
        }
        return true;
    });
    ASSERT_EQ(r.logprobs.size(), r.tokens.size());
    std::span<const float> logits = ref->evaluate(prompt, false);
    for (size_t i = 0; i < r.tokens.size(); ++i) {
        std::vector<float> l(logits.begin(), logits.end());
        double max = -INFINITY, sum = 0;
        for (const float x : l) max = std::max(max, double(x));
        for (const float x : l) sum += std::exp(double(x) - max);
        const auto logprob = [&](TokenId id) { return double(l[size_t(id)]) - max - std::log(sum); };
        const TokenLogprobs& lp = r.logprobs[i];
        EXPECT_EQ(lp.token, r.tokens[i]);
        EXPECT_NEAR(lp.logprob, logprob(r.tokens[i]), 1e-4) << "token " << i;
        ASSERT_EQ(lp.top.size(), 5u);
        EXPECT_EQ(lp.top[0].token, r.tokens[i]);  // greedy: the most likely
        for (size_t k = 0; k < lp.top.size(); ++k) {
            EXPECT_NEAR(lp.top[k].logprob, logprob(lp.top[k].token), 1e-4);
            if (k > 0) {
                EXPECT_LE(lp.top[k].logprob, lp.top[k - 1].logprob);
            }
        }
        // No token outside the top is more likely than the last one in it.
        for (size_t id = 0; id < l.size(); ++id) {
            bool in_top = false;
            for (const auto& c : lp.top) in_top |= c.token == TokenId(id);
            if (!in_top) {
                EXPECT_LE(logprob(TokenId(id)), lp.top.back().logprob + 1e-6);
            }
        }
        const TokenId one[1] = {r.tokens[i]};
        if (i + 1 < r.tokens.size()) logits = ref->evaluate(one, false);
    }
}

TEST(Generation, LogprobsOffStoresNothing) {
    auto s = open_tiny();
    const auto r = s->generate(s->tokenize("abc", false), greedy(6), [&](const TokenEvent& e) {
        EXPECT_EQ(e.logprobs, nullptr);
        return true;
    });
    EXPECT_TRUE(r.logprobs.empty());
    GenerateOptions g = greedy(6);
    g.logprobs = true;
    g.top_logprobs = 21;
    EXPECT_THROW(s->start(s->tokenize("abc", false), g), Error);
}

TEST(Generation, BadPromptThrowsAtStart) {
    auto s = open_tiny(16);
    EXPECT_THROW(s->start({}, greedy(4)), Error);
    const std::vector<TokenId> too_long(17, 5);
    EXPECT_THROW(s->start(too_long, greedy(4)), Error);
    const std::vector<TokenId> bad_id = {5, 100000};
    EXPECT_THROW(s->start(bad_id, greedy(4)), Error);
}

}  // namespace
}  // namespace smolinfer
