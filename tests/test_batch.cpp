// BatchGenerator: continuous batching with batch invariance. A sequence's
// tokens and log-probabilities must be bit-identical whether it runs alone
// (here: Session::generate, the path every golden test checks against
// llama.cpp, on a fresh Session) or among others that join and leave at any
// step, and whatever cached cells of earlier requests it reuses.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "smolinfer/batch.h"
#include "smolinfer/session.h"
#include "support/paths.h"

namespace smolinfer {
namespace {

struct Output {
    std::vector<TokenId> tokens;
    std::vector<TokenLogprobs> logprobs;
    std::string text;
    StopReason stop = StopReason::MaxTokens;
    int reused = 0;  // prompt tokens served from cached cells
};

size_t shared_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}

void expect_same(const Output& alone, const Output& batched, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(alone.tokens, batched.tokens);
    EXPECT_EQ(alone.text, batched.text);
    EXPECT_EQ(stop_reason_name(alone.stop), std::string(stop_reason_name(batched.stop)));
    ASSERT_EQ(alone.logprobs.size(), batched.logprobs.size());
    for (size_t i = 0; i < alone.logprobs.size(); ++i) {
        // Bit for bit: the same floats, not close ones.
        EXPECT_EQ(alone.logprobs[i].logprob, batched.logprobs[i].logprob) << "token " << i;
        ASSERT_EQ(alone.logprobs[i].top.size(), batched.logprobs[i].top.size());
        for (size_t j = 0; j < alone.logprobs[i].top.size(); ++j) {
            EXPECT_EQ(alone.logprobs[i].top[j].token, batched.logprobs[i].top[j].token);
            EXPECT_EQ(alone.logprobs[i].top[j].logprob, batched.logprobs[i].top[j].logprob) << "token " << i;
        }
    }
}

struct Request {
    std::string user;
    GenerateOptions options;
};

GenerateOptions greedy_logprobs(int max_tokens) {
    GenerateOptions o;
    o.max_tokens = max_tokens;
    o.sampling.temperature = 0;
    o.logprobs = true;
    o.top_logprobs = 5;
    return o;
}

GenerateOptions sampled(int max_tokens, uint32_t seed) {
    GenerateOptions o = greedy_logprobs(max_tokens);
    o.sampling.temperature = 0.9f;
    o.sampling.seed = seed;
    return o;
}

std::vector<Request> requests() {
    // Prompts of different lengths (several 64-token chunks for some), greedy and seeded.
    std::string long_text;
    for (int i = 0; i < 5; ++i) long_text += "The river carries silt from the mountains to the delta, season after season. ";
    return {
        {"What is the capital of France?", greedy_logprobs(12)},
        {"Write a haiku about the sea.", sampled(14, 7)},
        {"Summarize this: " + long_text, greedy_logprobs(8)},
        {"List three prime numbers.", greedy_logprobs(12)},
        {"Tell me a joke about computers.", sampled(10, 1234)},
        {"Explain photosynthesis in one sentence. " + long_text.substr(0, 300), greedy_logprobs(9)},
        {"Hi", greedy_logprobs(6)},
    };
}

class Batch : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        SessionOptions o;
        o.threads = 2;
        o.context = 512;
        o.flash_attention = flash() ? FlashAttention::On : FlashAttention::Off;
        session_ = Session::open_file(test::model_path(test::golden_run_model(GetParam())), o);
    }

    std::vector<TokenId> prompt(const Request& r) const { return session_->tokenize_chat({{"user", r.user}}); }

    Output alone(const Request& r) { return alone(prompt(r), r.options); }

    // A fresh Session's generation: the truth every batched run must equal.
    Output alone(const std::vector<TokenId>& ids, const GenerateOptions& options) {
        session_->reset();
        return generate(ids, options);
    }

    // Session::generate on whatever its cache holds (it keeps the cells the
    // rule allows).
    Output generate(const std::vector<TokenId>& ids, const GenerateOptions& options) {
        Output out;
        const GenerationStats st = session_->generate(ids, options, [&](const TokenEvent& e) {
            out.text += e.text;
            return true;
        });
        out.tokens = st.tokens;
        out.logprobs = st.logprobs;
        out.stop = st.stop;
        out.reused = st.reused_tokens;
        return out;
    }

    // Runs one prompt to its end in `batch`, nothing else running.
    static Output run_one(BatchGenerator& batch, const std::vector<TokenId>& ids, const GenerateOptions& options) {
        Output o;
        const int id = batch.add(ids, options);
        while (batch.running() > 0) {
            for (const BatchEvent& e : batch.step()) {
                EXPECT_EQ(e.sequence, id);
                o.text += e.text;
                if (e.finished) {
                    o.tokens = e.finished->tokens;
                    o.logprobs = e.finished->logprobs;
                    o.stop = e.finished->stop;
                    o.reused = e.finished->reused_tokens;
                }
            }
        }
        return o;
    }

    // Tokens the model's grouped matrix kernels take together in a batch:
    // Q4_K_M's Q4_K matrices go four tokens at a time (llama.cpp's
    // interleaved Q4_K GEMM); Q4_1 has no such kernel.
    size_t group() const { return test::golden_run_model(GetParam()) == "Q4_K_M" ? 4 : 1; }
    bool flash() const { return GetParam().ends_with("/flash-attn"); }

    // The cells a prompt may keep of a sequence that read the prompt
    // `before` (and then decoded its answer one token at a time), by the
    // rule, worked out here independently of the generator: the shared
    // prefix of the prompts (decoded cells are single-token arithmetic, a
    // fresh prompt's never is), leaving one token to evaluate, cut to a
    // multiple of the group so that the first pass groups tokens as the
    // fresh chunk does, and one group less if that pass would be a single
    // token where the fresh chunk has more.
    size_t expected_keep(const std::vector<TokenId>& before, const std::vector<TokenId>& p) const {
        const size_t chunk = size_t(session_->batch()), g = group();
        // Premise: `before` did not end in a chunk of one token (single-token arithmetic).
        EXPECT_NE(before.size() % chunk, 1u);
        size_t k = 0;
        while (k < before.size() && k < p.size() && before[k] == p[k]) ++k;
        k = std::min(k, p.size() - 1);
        k -= k % g;
        const size_t chunk_start = k - k % chunk, chunk_end = std::min(p.size(), chunk_start + chunk);
        if (chunk_end - k == 1 && chunk_end - chunk_start > 1) k -= g;
        return k;
    }

    // Runs the requests through one generator, adding request i before step
    // joins[i] (or as soon as a sequence is free after it).
    std::vector<Output> batched(const std::vector<Request>& rs, const std::vector<int>& joins, int capacity) {
        BatchGenerator batch(*session_, capacity);
        std::vector<Output> outs(rs.size());
        std::map<int, size_t> owner;  // sequence id -> request
        size_t next = 0, done = 0;
        for (int step = 0; done < rs.size(); ++step) {
            EXPECT_LT(step, 10000) << "the generator does not finish";
            if (step >= 10000) break;
            while (next < rs.size() && joins[next] <= step && !batch.full()) {
                owner[batch.add(prompt(rs[next]), rs[next].options)] = next;
                ++next;
            }
            for (const BatchEvent& e : batch.step()) {
                Output& o = outs[owner.at(e.sequence)];
                o.text += e.text;
                if (e.finished) {
                    o.tokens = e.finished->tokens;
                    o.logprobs = e.finished->logprobs;
                    o.stop = e.finished->stop;
                    owner.erase(e.sequence);
                    ++done;
                }
            }
        }
        EXPECT_EQ(batch.running(), 0);
        return outs;
    }

    std::unique_ptr<Session> session_;
};

TEST_P(Batch, TogetherEqualsAloneWhateverJoinsWhen) {
    const auto rs = requests();
    std::vector<Output> solo;
    for (const Request& r : rs) solo.push_back(alone(r));
    // One at a time; all at once; staggered joins; more requests than
    // sequences (they wait).
    const std::vector<std::pair<std::vector<int>, int>> schedules = {
        {{0, 0, 0, 0, 0, 0, 0}, 1},
        {{0, 0, 0, 0, 0, 0, 0}, 8},
        {{0, 3, 3, 5, 9, 14, 20}, 8},
        {{0, 0, 1, 2, 3, 4, 5}, 3},
    };
    for (size_t s = 0; s < schedules.size(); ++s) {
        const std::vector<Output> outs = batched(rs, schedules[s].first, schedules[s].second);
        for (size_t i = 0; i < rs.size(); ++i) {
            expect_same(solo[i], outs[i], "schedule " + std::to_string(s) + ", request " + std::to_string(i));
        }
    }
}

std::vector<TokenId> chat(const Session& s, const std::vector<ChatMessage>& messages) { return s.tokenize_chat(messages); }

TEST_P(Batch, ChatPromptsSharingTheSystemPromptReuseItAndStillEqualAlone) {
    // The template's default system prompt and the user turn's opening are
    // shared: fewer tokens than a chunk and not a multiple of the group.
    const std::vector<std::vector<TokenId>> prompts = {
        chat(*session_, {{"user", "What is the capital of France?"}}),
        chat(*session_, {{"user", "What color is the sky?"}}),
        chat(*session_, {{"user", "What color is the sky?"}}),  // the same again: its last tokens are read again
        chat(*session_, {{"user", "What is 2 + 2?"}}),
        chat(*session_, {{"user", "What is the capital of Spain?"}}),
        chat(*session_, {{"user", "Hi"}}),
    };
    const size_t common = shared_prefix(prompts[0], prompts[1]);
    ASSERT_LT(common, size_t(session_->batch()));
    ASSERT_NE(common % 4, 0u) << "the shared prefix should not be a multiple of 4 tokens";

    // One sequence: each prompt can reuse only what the one before it left.
    BatchGenerator batch(*session_, 1);
    for (size_t i = 0; i < prompts.size(); ++i) {
        const GenerateOptions options = i % 2 ? sampled(6, uint32_t(i)) : greedy_logprobs(6);
        const Output o = run_one(batch, prompts[i], options);
        const size_t expect = i == 0 ? 0 : expected_keep(prompts[i - 1], prompts[i]);
        EXPECT_EQ(size_t(o.reused), expect) << "prompt " << i;
        if (i == 1) {
            EXPECT_GT(expect, 0u);
            if (group() > 1) {
                EXPECT_LT(expect, common) << "cut to a multiple of the group";
            }
        }
        expect_same(alone(prompts[i], options), o, "prompt " + std::to_string(i));
    }
}

TEST_P(Batch, AConversationGoingOnReusesThePromptNotTheDecodedAnswer) {
    const std::vector<TokenId> p1 = chat(*session_, {{"user", "Write a haiku about the sea."}});
    BatchGenerator batch(*session_, 1);
    const Output o1 = run_one(batch, p1, greedy_logprobs(10));
    const std::vector<TokenId> p2 =
        chat(*session_, {{"user", "Write a haiku about the sea."}, {"assistant", o1.text}, {"user", "Another one."}});
    // Premise: the answer's cells (all but the last token, which was not
    // evaluated) match the new prompt, so only the rule keeps them out.
    std::vector<TokenId> cells = p1;
    cells.insert(cells.end(), o1.tokens.begin(), o1.tokens.end() - 1);
    ASSERT_GT(shared_prefix(cells, p2), p1.size() + 2);

    const Output o2 = run_one(batch, p2, greedy_logprobs(8));
    EXPECT_EQ(size_t(o2.reused), expected_keep(p1, p2));
    EXPECT_LE(size_t(o2.reused), p1.size());
    EXPECT_GT(o2.reused, 0);
    expect_same(alone(p1, greedy_logprobs(10)), o1, "first turn");
    expect_same(alone(p2, greedy_logprobs(8)), o2, "second turn, on the first turn's cells");
}

TEST_P(Batch, ASharedPrefixAcrossChunksIsReusedAndStillEqualsAlone) {
    std::string system = "You are a careful assistant. ";
    for (int i = 0; i < 6; ++i) system += "Answer briefly and check each fact twice before you write it down. ";
    const auto p1 = chat(*session_, {{"system", system}, {"user", "What is 2 + 2?"}});
    const auto p2 = chat(*session_, {{"system", system}, {"user", "Name a color."}});
    const size_t common = shared_prefix(p1, p2);
    const size_t chunk = size_t(session_->batch());
    ASSERT_GT(common, chunk) << "the shared part should cross a chunk boundary";
    ASSERT_NE(common % chunk, 0u);

    BatchGenerator batch(*session_, 2);
    const Output o1 = run_one(batch, p1, greedy_logprobs(8));
    EXPECT_EQ(batch.reused_tokens(), 0);
    const Output o2 = run_one(batch, p2, greedy_logprobs(8));
    EXPECT_EQ(size_t(batch.reused_tokens()), expected_keep(p1, p2));
    EXPECT_GT(size_t(batch.reused_tokens()), chunk);
    expect_same(alone(p1, greedy_logprobs(8)), o1, "first");
    expect_same(alone(p2, greedy_logprobs(8)), o2, "second, on reused cells");
}

// Session::generate keeps cached cells by the same rule as the generator.
TEST_P(Batch, ASessionKeepsCellsByTheSameRule) {
    const std::vector<TokenId> p1 = chat(*session_, {{"user", "Write a haiku about the sea."}});
    const Output o1 = alone(p1, greedy_logprobs(10));
    const std::vector<TokenId> p2 =
        chat(*session_, {{"user", "Write a haiku about the sea."}, {"assistant", o1.text}, {"user", "Another one."}});
    const Output warm = generate(p2, greedy_logprobs(8));
    EXPECT_EQ(size_t(warm.reused), expected_keep(p1, p2));
    EXPECT_GT(warm.reused, 0);
    expect_same(alone(p2, greedy_logprobs(8)), warm, "second turn, on the first turn's cells");

    const std::vector<TokenId> a = chat(*session_, {{"user", "What is the capital of France?"}});
    const std::vector<TokenId> b = chat(*session_, {{"user", "What color is the sky?"}});
    alone(a, greedy_logprobs(1));
    const Output shifted = generate(b, greedy_logprobs(8));
    EXPECT_EQ(size_t(shifted.reused), expected_keep(a, b));
    expect_same(alone(b, greedy_logprobs(8)), shifted, "a shared prefix");
}

// The negative control: keeping every cell a prompt shares, whatever
// arithmetic computed it (as llama.cpp does), changes the results where
// that arithmetic differs from a fresh run's -- which the rule prevents,
// and which the comparisons above would catch. Session::evaluate appends
// tokens as they come (one llama_decode call each), so it builds such caches.
TEST_P(Batch, CellsOfAnotherArithmeticWouldChangeTheResult) {
    // The last token's logits after evaluate() calls, from an empty cache.
    const auto logits_after = [&](const std::vector<std::vector<TokenId>>& calls) {
        session_->reset();
        std::span<const float> l;
        for (const auto& c : calls) l = session_->evaluate(c, false);
        return std::vector<float>(l.begin(), l.end());
    };
    const auto split = [](const std::vector<TokenId>& p, size_t at) {
        return std::vector<std::vector<TokenId>>{{p.begin(), p.begin() + long(at)}, {p.begin() + long(at), p.end()}};
    };

    // Decoded cells (single-token arithmetic) where a fresh run reads a prompt in a batch.
    const std::vector<TokenId> p1 = chat(*session_, {{"user", "Write a haiku about the sea."}});
    const Output o1 = alone(p1, greedy_logprobs(10));
    const std::vector<TokenId> p2 =
        chat(*session_, {{"user", "Write a haiku about the sea."}, {"assistant", o1.text}, {"user", "Another one."}});
    std::vector<TokenId> cells = p1;
    cells.insert(cells.end(), o1.tokens.begin(), o1.tokens.end() - 1);
    const size_t shared = shared_prefix(cells, p2);
    ASSERT_GT(shared, p1.size() + 2) << "the answer's cells should match the new prompt";
    std::vector<std::vector<TokenId>> kept = {p1};
    for (size_t i = p1.size(); i < shared; ++i) kept.push_back({p2[i]});
    kept.emplace_back(p2.begin() + long(shared), p2.end());
    // (Flash attention's short-prompt path is its single-token path, and
    // Q4_1's products have one order: there the two arithmetics coincide.)
    if (!flash() || group() > 1) {
        EXPECT_NE(logits_after(kept), logits_after({p2})) << "decoded cells read as prompt cells";
    }

    // A prefix that is not a multiple of the group, read as a pass of its
    // own: its last tokens are then grouped differently from the fresh
    // run's chunk (Q4_K_M); with no grouped kernel (Q4_1) that is exact.
    // Whether the other order changes a result depends on the weights (the
    // cache rounds keys and values to half, which often hides the last
    // bits), so several questions are asked and one must show it.
    const std::vector<TokenId> a = chat(*session_, {{"user", "What is the capital of France?"}});
    bool any_differs = false;
    for (const char* question : {"What color is the sky?", "What is the tallest mountain on Earth?",
                                 "What does a bee make?", "What language is spoken in Brazil?"}) {
        const std::vector<TokenId> b = chat(*session_, {{"user", question}});
        const size_t common = shared_prefix(a, b);
        ASSERT_NE(common % 4, 0u) << question;
        const bool same = logits_after(split(b, common)) == logits_after({b});
        if (group() > 1) {
            any_differs = any_differs || !same;
        } else {
            EXPECT_TRUE(same) << "a prefix at any token, no grouped kernel: " << question;
        }
    }
    if (group() > 1) {
        EXPECT_TRUE(any_differs) << "a prefix cut inside a group";
    }
}

TEST_P(Batch, CancelFreesTheSequenceAndSilencesIt) {
    BatchGenerator batch(*session_, 2);
    const auto rs = requests();
    const int a = batch.add(prompt(rs[0]), rs[0].options);
    const int b = batch.add(prompt(rs[3]), rs[3].options);
    EXPECT_TRUE(batch.full());
    EXPECT_THROW(batch.add(prompt(rs[1]), rs[1].options), Error);
    Output ob;
    const auto collect = [&](const BatchEvent& e) {
        if (e.sequence != b) return;
        ob.text += e.text;
        if (e.finished) ob.tokens = e.finished->tokens, ob.logprobs = e.finished->logprobs, ob.stop = e.finished->stop;
    };
    for (int i = 0; i < 2; ++i) {
        for (const BatchEvent& e : batch.step()) collect(e);
    }
    batch.cancel(a);
    EXPECT_EQ(batch.running(), 1);
    while (batch.running() > 0) {
        for (const BatchEvent& e : batch.step()) {
            EXPECT_EQ(e.sequence, b);
            collect(e);
        }
    }
    expect_same(alone(rs[3]), ob, "the one left running");
    batch.cancel(a);  // again: ignored
    batch.cancel(99);
}

TEST_P(Batch, BadInputIsRefusedWithoutTakingASequence) {
    BatchGenerator batch(*session_, 1);
    GenerateOptions bad = greedy_logprobs(4);
    bad.grammar = "root ::= [a-";
    EXPECT_THROW(batch.add(prompt(requests()[0]), bad), Error);
    EXPECT_THROW(batch.add(std::vector<TokenId>{}, greedy_logprobs(4)), Error);
    EXPECT_THROW(batch.add(std::vector<TokenId>(600, 1), greedy_logprobs(4)), Error);  // longer than the 512 context
    EXPECT_THROW(batch.add(std::vector<TokenId>{1 << 30}, greedy_logprobs(4)), Error);
    EXPECT_EQ(batch.running(), 0);
    EXPECT_THROW(BatchGenerator(*session_, 0), Error);
    EXPECT_THROW(BatchGenerator(*session_, 257), Error);
    // max_tokens 0: finishes at the first step with nothing generated.
    const int id = batch.add(prompt(requests()[0]), greedy_logprobs(0));
    const auto events = batch.step();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].sequence, id);
    ASSERT_TRUE(events[0].finished.has_value());
    EXPECT_EQ(events[0].finished->generated_tokens, 0);
}

// Each golden model with flash attention off and on.
INSTANTIATE_TEST_SUITE_P(Model, Batch, ::testing::ValuesIn(test::smollm2_golden_runs()),
                         [](const auto& info) { return test::golden_run_test_name(info.param); });

}  // namespace
}  // namespace smolinfer
