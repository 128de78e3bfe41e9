#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "smolinfer/error.h"

namespace smolinfer {

void SamplingParams::validate() const {
    auto bad = [](const std::string& what) { throw Error("bad sampling parameter: " + what); };
    if (!std::isfinite(temperature) || temperature < 0.0f) bad("temperature must be >= 0");
    if (top_k < 0) bad("top-k must be >= 0");
    if (!std::isfinite(top_p) || top_p <= 0.0f || top_p > 1.0f) bad("top-p must be in (0, 1]");
    if (!std::isfinite(min_p) || min_p < 0.0f || min_p > 1.0f) bad("min-p must be in [0, 1]");
    if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0.0f) bad("repeat penalty must be > 0");
    if (!std::isfinite(frequency_penalty)) bad("frequency penalty must be a finite number");
    if (!std::isfinite(presence_penalty)) bad("presence penalty must be a finite number");
    if (repeat_last_n < 0 || repeat_last_n > (1 << 20)) bad("repeat-last-n must be in 0..1048576");
    for (const LogitBias& b : logit_bias) {
        // -infinity bans a token; +infinity or NaN would make every probability NaN.
        if (std::isnan(b.bias) || b.bias == std::numeric_limits<float>::infinity()) {
            bad("logit bias of token " + std::to_string(b.token) + " must be a number or -infinity");
        }
    }
}

}  // namespace smolinfer

namespace smolinfer::sample {

Sampler::Sampler(const SamplingParams& params, int n_vocab) : params_(params), rng_(params.seed) {
    params_.validate();
    for (const LogitBias& b : params_.logit_bias) {
        if (b.token < 0 || b.token >= n_vocab) {
            throw Error("bad sampling parameter: logit bias token id " + std::to_string(b.token) +
                        " is outside the vocabulary (0.." + std::to_string(n_vocab - 1) + ")");
        }
    }
    cand_.reserve(size_t(n_vocab));
    history_.reserve(size_t(params_.repeat_last_n));
    counts_.assign(size_t(n_vocab), 0);
}

void Sampler::accept(int32_t token) {
    if (params_.repeat_last_n == 0) return;
    if (history_.size() < size_t(params_.repeat_last_n)) {
        history_.push_back(token);
    } else {
        history_[history_next_] = token;
        history_next_ = (history_next_ + 1) % history_.size();
    }
}

void Sampler::apply_logit_bias() {
    // cand_ is still indexed by id here.
    for (const LogitBias& b : params_.logit_bias) cand_[size_t(b.token)].logit += b.bias;
}

void Sampler::apply_penalties() {
    const bool off = params_.repeat_penalty == 1.0f && params_.frequency_penalty == 0.0f &&
                     params_.presence_penalty == 0.0f;
    if (off || history_.empty()) return;
    // cand_ is still indexed by id here. Count each id of the window, then
    // penalize each distinct id once (zeroing its count, so the scratch is
    // clean for the next call).
    for (const int32_t id : history_) {
        if (id >= 0 && size_t(id) < counts_.size()) counts_[size_t(id)]++;
    }
    for (const int32_t id : history_) {
        if (id < 0 || size_t(id) >= counts_.size() || counts_[size_t(id)] == 0) continue;
        const uint32_t count = counts_[size_t(id)];
        counts_[size_t(id)] = 0;
        float& l = cand_[size_t(id)].logit;
        l = l > 0.0f ? l / params_.repeat_penalty : l * params_.repeat_penalty;
        l -= float(count) * params_.frequency_penalty + params_.presence_penalty;
    }
}

void Sampler::normalize() {
    float max = cand_[0].logit;
    for (const Candidate& c : cand_) max = std::max(max, c.logit);
    float sum = 0.0f;
    for (Candidate& c : cand_) {
        c.p = std::exp(c.logit - max);
        sum += c.p;
    }
    for (Candidate& c : cand_) c.p /= sum;
}

void Sampler::log_softmax(int32_t chosen, int top_n, bool sorted, TokenLogprobs& out) {
    float max = -std::numeric_limits<float>::infinity();
    for (const Candidate& c : cand_) max = std::max(max, c.logit);
    // log p = l - max - log(sum exp(l - max)), the sum in double. When the
    // largest logit is infinite, the tokens holding it share all the mass.
    double sum = 0.0;
    size_t at_max = 0;
    for (const Candidate& c : cand_) {
        if (std::isfinite(max)) sum += std::exp(double(c.logit) - double(max));
        at_max += c.logit == max ? 1 : 0;
    }
    const double log_sum = std::log(std::isfinite(max) ? sum : double(at_max));
    const auto logprob = [&](float logit) {
        if (!std::isfinite(max)) {
            return logit == max ? float(-log_sum) : -std::numeric_limits<float>::infinity();
        }
        return float(double(logit) - double(max) - log_sum);
    };

    out.token = chosen;
    out.logprob = -std::numeric_limits<float>::infinity();
    for (const Candidate& c : cand_) {
        if (c.id == chosen) {
            out.logprob = logprob(c.logit);
            break;
        }
    }
    const size_t n = std::min(size_t(std::max(top_n, 0)), cand_.size());
    if (!sorted) {
        std::partial_sort(cand_.begin(), cand_.begin() + ptrdiff_t(n), cand_.end(), [](const Candidate& a, const Candidate& b) {
            return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
        });
    }
    out.top.clear();
    for (size_t i = 0; i < n; ++i) out.top.push_back({cand_[i].id, logprob(cand_[i].logit)});
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const uint64_t> allowed) {
    return choose(logits, allowed, 0, nullptr);
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const uint64_t> allowed, int top_n,
                        TokenLogprobs& out) {
    return choose(logits, allowed, top_n, &out);
}

int32_t Sampler::choose(std::span<const float> logits, std::span<const uint64_t> allowed, int top_n,
                        TokenLogprobs* out) {
    if (logits.size() != counts_.size()) {
        throw Error("sampler: got " + std::to_string(logits.size()) + " logits for a vocabulary of " +
                    std::to_string(counts_.size()));
    }
    cand_.clear();
    // A NaN logit (a broken model) would make the ordering below inconsistent:
    // the top-k could keep any token, and std::sort may run off the array. It
    // ranks last instead, as -inf.
    for (size_t i = 0; i < logits.size(); ++i) {
        const float l = std::isnan(logits[i]) ? -std::numeric_limits<float>::infinity() : logits[i];
        cand_.push_back({int32_t(i), l, 0.0f});
    }
    // Tokens the grammar rules out never compete: masked before the bias and
    // the penalties (llama.cpp applies the grammar to the same effect).
    if (!allowed.empty()) {
        if (allowed.size() * 64 < logits.size()) throw Error("sampler: the allowed-token mask is shorter than the vocabulary");
        for (Candidate& c : cand_) {
            if (!((allowed[size_t(c.id) / 64] >> (size_t(c.id) % 64)) & 1)) c.logit = -std::numeric_limits<float>::infinity();
        }
    }
    apply_logit_bias();
    apply_penalties();

    auto by_logit = [](const Candidate& a, const Candidate& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    if (params_.temperature <= 0.0f) {
        const int32_t id = std::min_element(cand_.begin(), cand_.end(), by_logit)->id;
        if (out) log_softmax(id, top_n, false, *out);
        return id;
    }

    size_t keep = cand_.size();
    if (params_.top_k > 0 && size_t(params_.top_k) < keep) {
        keep = size_t(params_.top_k);
        std::partial_sort(cand_.begin(), cand_.begin() + ptrdiff_t(keep), cand_.end(), by_logit);
    } else {
        std::sort(cand_.begin(), cand_.end(), by_logit);
    }
    cand_.resize(keep);

    if (params_.top_p < 1.0f) {
        normalize();
        float cum = 0.0f;
        size_t n = 0;
        while (n < cand_.size()) {
            cum += cand_[n++].p;
            if (cum >= params_.top_p) break;
        }
        cand_.resize(n);
    }
    if (params_.min_p > 0.0f) {
        normalize();
        const float threshold = params_.min_p * cand_[0].p;  // sorted: [0] is the most likely
        size_t n = 1;
        while (n < cand_.size() && cand_[n].p >= threshold) ++n;
        cand_.resize(n);
    }

    for (Candidate& c : cand_) c.logit /= params_.temperature;
    normalize();
    const int32_t id = draw();
    if (out) log_softmax(id, top_n, true, *out);
    return id;
}

int32_t Sampler::draw() {
    const float r = rng_.uniform();
    float cum = 0.0f;
    for (const Candidate& c : cand_) {
        cum += c.p;
        if (r < cum) return c.id;
    }
    // r fell in the rounding gap above the last sum: the last candidate that
    // can be drawn (never one of probability 0, e.g. a -inf logit), or, when
    // no probability is usable (+inf logits make them NaN), the most likely.
    for (auto it = cand_.rbegin(); it != cand_.rend(); ++it) {
        if (it->p > 0.0f) return it->id;
    }
    return cand_.front().id;
}

}  // namespace smolinfer::sample
