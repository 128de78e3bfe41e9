// BatchGenerator: continuous batching with batch invariance. A sequence's
// tokens and log-probabilities must be bit-identical whether it runs alone
// (here: Session::generate, the path every golden test checks against
// llama.cpp) or among others that join and leave at any step.
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
};

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

GenerateOptions greedy(int max_tokens) {
    GenerateOptions o;
    o.max_tokens = max_tokens;
    o.sampling.temperature = 0;
    o.logprobs = true;
    o.top_logprobs = 5;
    return o;
}

GenerateOptions sampled(int max_tokens, uint32_t seed) {
    GenerateOptions o = greedy(max_tokens);
    o.sampling.temperature = 0.9f;
    o.sampling.seed = seed;
    return o;
}

std::vector<Request> requests() {
    // Prompts of different lengths (several 64-token chunks for some), greedy and seeded.
    std::string long_text;
    for (int i = 0; i < 5; ++i) long_text += "The river carries silt from the mountains to the delta, season after season. ";
    return {
        {"What is the capital of France?", greedy(12)},
        {"Write a haiku about the sea.", sampled(14, 7)},
        {"Summarize this: " + long_text, greedy(8)},
        {"List three prime numbers.", greedy(12)},
        {"Tell me a joke about computers.", sampled(10, 1234)},
        {"Explain photosynthesis in one sentence. " + long_text.substr(0, 300), greedy(9)},
        {"Hi", greedy(6)},
    };
}

class Batch : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        SessionOptions o;
        o.threads = 2;
        o.context = 512;
        session_ = Session::open_file(test::model_path(GetParam()), o);
    }

    std::vector<TokenId> prompt(const Request& r) const { return session_->tokenize_chat({{"user", r.user}}); }

    Output alone(const Request& r) {
        session_->reset();
        Output out;
        const GenerationStats st = session_->generate(prompt(r), r.options, [&](const TokenEvent& e) {
            out.text += e.text;
            return true;
        });
        out.tokens = st.tokens;
        out.logprobs = st.logprobs;
        out.stop = st.stop;
        return out;
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

TEST_P(Batch, APromptSharingWholeChunksReusesThemAndStillEqualsAlone) {
    std::string shared = "You are a careful assistant. ";
    for (int i = 0; i < 10; ++i) shared += "Answer briefly and check each fact twice before you write it down. ";
    const Request first{shared + "What is 2 + 2?", greedy(8)};
    const Request second{shared + "Name a color.", greedy(8)};
    const auto p1 = prompt(first), p2 = prompt(second);
    size_t common = 0;
    while (common < p1.size() && common < p2.size() && p1[common] == p2[common]) ++common;
    ASSERT_GE(common, 128u) << "the shared part should span two whole chunks";

    BatchGenerator batch(*session_, 2);
    const auto run = [&](const Request& r) {
        Output o;
        const int id = batch.add(prompt(r), r.options);
        while (batch.running() > 0) {
            for (const BatchEvent& e : batch.step()) {
                EXPECT_EQ(e.sequence, id);
                o.text += e.text;
                if (e.finished) {
                    o.tokens = e.finished->tokens;
                    o.logprobs = e.finished->logprobs;
                    o.stop = e.finished->stop;
                }
            }
        }
        return o;
    };
    const Output o1 = run(first);
    EXPECT_EQ(batch.reused_tokens(), 0);
    const Output o2 = run(second);
    const size_t chunk = size_t(session_->batch());
    EXPECT_EQ(size_t(batch.reused_tokens()), common - common % chunk);
    expect_same(alone(first), o1, "first");
    expect_same(alone(second), o2, "second, on reused cells");
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
    GenerateOptions bad = greedy(4);
    bad.grammar = "root ::= [a-";
    EXPECT_THROW(batch.add(prompt(requests()[0]), bad), Error);
    EXPECT_THROW(batch.add(std::vector<TokenId>{}, greedy(4)), Error);
    EXPECT_THROW(batch.add(std::vector<TokenId>(600, 1), greedy(4)), Error);  // longer than the 512 context
    EXPECT_THROW(batch.add(std::vector<TokenId>{1 << 30}, greedy(4)), Error);
    EXPECT_EQ(batch.running(), 0);
    EXPECT_THROW(BatchGenerator(*session_, 0), Error);
    EXPECT_THROW(BatchGenerator(*session_, 257), Error);
    // max_tokens 0: finishes at the first step with nothing generated.
    const int id = batch.add(prompt(requests()[0]), greedy(0));
    const auto events = batch.step();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].sequence, id);
    ASSERT_TRUE(events[0].finished.has_value());
    EXPECT_EQ(events[0].finished->generated_tokens, 0);
}

INSTANTIATE_TEST_SUITE_P(Model, Batch, ::testing::Values("Q4_1", "Q4_K_M"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace smolinfer
