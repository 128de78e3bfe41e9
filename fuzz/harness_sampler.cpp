// fuzz_sampler: sampling parameters from bytes -> validation -> sampling from
// random logits (see harness.h).
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "harness.h"
#include "input.h"
#include "sample/sampler.h"
#include "smolinfer/error.h"

namespace smolinfer::fuzz {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A float: most often one of the interesting values, else the raw bits.
float next_float(Input& in) {
    static const float kInteresting[] = {
        0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 0.8f, 0.95f, 0.05f, 1.1f, 2.0f, 1e-30f, 1e-45f, 1e30f,
        std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(), std::numeric_limits<float>::min(),
        kInf, -kInf, kNaN, -kNaN, std::nextafter(1.0f, 2.0f), std::nextafter(1.0f, 0.0f),
    };
    const auto sel = in.take<uint8_t>();
    if (sel < 2 * std::size(kInteresting)) return kInteresting[sel % std::size(kInteresting)];
    return in.take<float>();
}

int next_int(Input& in) {
    static constexpr int kInteresting[] = {0, 1, 2, 3, 40, -1, -40, 64, 1 << 20, (1 << 20) + 1,
                                          std::numeric_limits<int>::max(), std::numeric_limits<int>::min()};
    const auto sel = in.take<uint8_t>();
    if (sel < 2 * std::size(kInteresting)) return kInteresting[sel % std::size(kInteresting)];
    return in.take<int32_t>();
}

// What validate() promises about parameters it accepts.
bool in_documented_range(const SamplingParams& p) {
    return std::isfinite(p.temperature) && p.temperature >= 0 && p.top_k >= 0 && std::isfinite(p.top_p) &&
           p.top_p > 0 && p.top_p <= 1 && std::isfinite(p.min_p) && p.min_p >= 0 && p.min_p <= 1 &&
           std::isfinite(p.repeat_penalty) && p.repeat_penalty > 0 && p.repeat_last_n >= 0 &&
           p.repeat_last_n <= (1 << 20);
}

}  // namespace

void sampler_one(Bytes data) {
    Input in(data);
    SamplingParams p;
    p.temperature = next_float(in);
    p.top_k = next_int(in);
    p.top_p = next_float(in);
    p.min_p = next_float(in);
    p.repeat_penalty = next_float(in);
    p.repeat_last_n = next_int(in);
    p.seed = in.take<uint64_t>();

    bool valid = true;
    try {
        p.validate();
    } catch (const Error&) {
        valid = false;
    }
    check(valid == in_documented_range(p), "validate() disagrees with the documented ranges");
    const int n_vocab = 1 + in.take<uint16_t>() % 1024;
    if (!valid) {
        bool threw = false;
        try {
            sample::Sampler s(p, n_vocab);
        } catch (const Error&) {
            threw = true;
        }
        check(threw, "the sampler accepted parameters validate() rejects");
        return;
    }

    sample::Sampler sampler(p, n_vocab);
    std::mt19937 rng(in.take<uint32_t>());
    std::normal_distribution<float> normal(0.0f, in.take<uint8_t>() / 16.0f);
    std::vector<int32_t> history;  // accepted tokens, for the penalty the sampler applies
    const int rounds = 1 + in.take<uint8_t>() % 4;
    for (int round = 0; round < rounds; ++round) {
        std::vector<float> logits(static_cast<size_t>(n_vocab));
        for (float& l : logits) l = normal(rng);
        // Some logits from the input: ties, NaN, inf, huge.
        for (int k = in.take<uint8_t>() % 8; k > 0 && !in.empty(); --k) {
            logits[in.take<uint16_t>() % size_t(n_vocab)] = next_float(in);
        }
        for (int k = in.take<uint8_t>() % 4; k > 0; --k) {
            const int32_t id = next_int(in);
            sampler.accept(id);
            history.push_back(id);
        }

        const int32_t tok = sampler.sample(logits);
        check(tok >= 0 && tok < n_vocab, "sampled token " + std::to_string(tok) + " outside 0.." + std::to_string(n_vocab - 1));

        // The logits the sampler ranks: after the repetition penalty on the
        // distinct ids among the last repeat_last_n accepted.
        std::vector<float> ranked = logits;
        if (p.repeat_penalty != 1.0f && p.repeat_last_n > 0) {
            std::vector<uint8_t> done(static_cast<size_t>(n_vocab), 0);
            const size_t from = history.size() > size_t(p.repeat_last_n) ? history.size() - size_t(p.repeat_last_n) : 0;
            for (size_t i = from; i < history.size(); ++i) {
                const int32_t id = history[i];
                if (id < 0 || id >= n_vocab || done[size_t(id)]) continue;
                done[size_t(id)] = 1;
                float& l = ranked[size_t(id)];
                l = l > 0.0f ? l / p.repeat_penalty : l * p.repeat_penalty;
            }
        }
        const float chosen = ranked[size_t(tok)];
        int better = 0;  // tokens ranked strictly above the chosen one
        for (const float l : ranked) better += (l > chosen) ? 1 : 0;
        if (p.temperature == 0.0f) {
            check(better == 0, "greedy sampling did not pick a most likely token");
        } else if (p.top_k > 0) {
            check(better < p.top_k, "sampled token is ranked " + std::to_string(better + 1) + ", beyond top-k " +
                                        std::to_string(p.top_k));
        }
        sampler.accept(tok);
        history.push_back(tok);
    }
}

}  // namespace smolinfer::fuzz
