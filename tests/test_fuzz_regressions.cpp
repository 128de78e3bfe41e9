// What the fuzz targets (fuzz/) found, kept found:
//  - every input a fuzzer crashed on (tests/fuzz-regressions/<target>/) and
//    every seed (fuzz/corpus/<target>/) replayed through the same harness the
//    fuzzer runs (fuzz/harness_*.cpp), one test per file;
//  - each fix also as a plain test of the function that was wrong.
// Under the asan preset these run with ASan + UBSan, which is where the
// undefined-behaviour findings (NaN converted to an integer) show.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "harness.h"
#include "model/exp_approx.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/reference.h"
#include "sample/sampler.h"
#include "smolinfer/error.h"
#include "smolinfer/session.h"
#include "support/tiny_model.h"

namespace smolinfer {
namespace {

namespace fs = std::filesystem;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- Replay: one test per committed input. ----

struct FuzzInput {
    std::string target;  // fuzz_gguf, ...
    fs::path path;
};

void PrintTo(const FuzzInput& in, std::ostream* os) { *os << in.path.string(); }

std::vector<FuzzInput> inputs() {
    std::vector<FuzzInput> out;
    for (const char* root : {SMOLINFER_FUZZ_REGRESSIONS_DIR, SMOLINFER_FUZZ_CORPUS_DIR}) {
        for (const char* target : {"fuzz_gguf", "fuzz_tokenizer", "fuzz_chat_template", "fuzz_sampler", "fuzz_grammar"}) {
            const fs::path dir = fs::path(root) / target;
            if (!fs::is_directory(dir)) continue;
            std::vector<fs::path> files;
            for (const auto& e : fs::directory_iterator(dir)) {
                if (e.is_regular_file() && e.path().filename() != "README.md") files.push_back(e.path());
            }
            std::sort(files.begin(), files.end());
            for (const auto& f : files) out.push_back({target, f});
        }
    }
    return out;
}

std::string test_name(const testing::TestParamInfo<FuzzInput>& info) {
    const bool regression = info.param.path.string().find("fuzz-regressions") != std::string::npos;
    std::string name = std::string(regression ? "crash_" : "seed_") + info.param.target.substr(5) + "_" +
                       info.param.path.filename().string();
    for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    return name;
}

class FuzzReplay : public testing::TestWithParam<FuzzInput> {};

TEST_P(FuzzReplay, HarnessAcceptsInput) {
    const FuzzInput& in = GetParam();
    std::ifstream f(in.path, std::ios::binary);
    ASSERT_TRUE(f) << in.path;
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    // An exact-size heap copy, as libFuzzer passes it, so that ASan sees any
    // read past the end.
    const auto exact = std::make_unique<uint8_t[]>(bytes.size() + 1);
    std::memcpy(exact.get(), bytes.data(), bytes.size());
    const fuzz::Bytes data(exact.get(), bytes.size());
    auto harness = fuzz::gguf_one;
    if (in.target == "fuzz_tokenizer") harness = fuzz::tokenizer_one;
    if (in.target == "fuzz_chat_template") harness = fuzz::chat_template_one;
    if (in.target == "fuzz_sampler") harness = fuzz::sampler_one;
    if (in.target == "fuzz_grammar") harness = fuzz::grammar_one;
    EXPECT_NO_THROW(harness(data));
}

INSTANTIATE_TEST_SUITE_P(Inputs, FuzzReplay, testing::ValuesIn(inputs()), test_name);

// The replay must not pass by finding nothing.
TEST(FuzzReplay, InputsArePresent) {
    int seeds = 0, crashes = 0;
    for (const FuzzInput& in : inputs()) {
        (in.path.string().find("fuzz-regressions") != std::string::npos ? crashes : seeds)++;
    }
    EXPECT_GE(seeds, 4 * 3);
    EXPECT_GE(crashes, 3);
}

// ---- The fixes, one by one. ----

// fuzz_sampler, tests/fuzz-regressions/fuzz_sampler/nan-logit-top-k: a NaN
// logit made the ordering inconsistent, so top-k (partial_sort) kept a token
// ranked 24th with top-k 2 (and std::sort, for top-k 0, may run off the array).
// NaN now ranks as -inf.
TEST(FuzzFix, SamplerNaNLogitsRankLast) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (int round = 0; round < 50; ++round) {
        std::vector<float> logits(300);
        for (float& l : logits) l = normal(rng);
        for (int k = 0; k < 40; ++k) logits[rng() % logits.size()] = kNaN;
        std::vector<float> sorted;
        for (const float l : logits) {
            if (!std::isnan(l)) sorted.push_back(l);
        }
        std::sort(sorted.rbegin(), sorted.rend());

        SamplingParams p;
        p.temperature = 2.0f;
        p.top_k = 2;
        p.seed = uint64_t(round);
        sample::Sampler top2(p, int(logits.size()));
        const int32_t t = top2.sample(logits);
        ASSERT_FALSE(std::isnan(logits[size_t(t)]));
        EXPECT_GE(logits[size_t(t)], sorted[1]) << "round " << round;

        p.temperature = 0.0f;
        sample::Sampler greedy(p, int(logits.size()));
        EXPECT_EQ(logits[size_t(greedy.sample(logits))], sorted[0]);

        p.temperature = 1.0f;
        p.top_k = 0;  // the full sort
        p.top_p = 1.0f;
        p.min_p = 0.0f;
        sample::Sampler all(p, int(logits.size()));
        const int32_t a = all.sample(logits);
        EXPECT_TRUE(a >= 0 && size_t(a) < logits.size());
    }
    // Nothing but NaN and inf: still an id of the vocabulary.
    SamplingParams p;
    p.top_k = 0;
    for (const float fill : {kNaN, kInf, -kInf}) {
        std::vector<float> logits(100, fill);
        logits[7] = kInf;
        sample::Sampler s(p, 100);
        const int32_t t = s.sample(logits);
        EXPECT_TRUE(t >= 0 && t < 100);
    }
}

// fuzz_gguf, tests/fuzz-regressions/fuzz_gguf/exp-approx-nan.gguf (F16
// weights turned to inf/NaN): the softmax's exp converted a NaN exponent to
// int (undefined; UBSan stops). exp of NaN is NaN now, as in ggml.
TEST(FuzzFix, ExpApproxOfNaNAndInfinities) {
    EXPECT_TRUE(std::isnan(model::exp_approx(kNaN)));
    EXPECT_TRUE(std::isnan(model::exp_approx(-kNaN)));
    EXPECT_EQ(model::exp_approx(-kInf), 0.0f);
    EXPECT_EQ(model::exp_approx(kInf), kInf);
    EXPECT_EQ(model::exp_approx(-1000.0f), 0.0f);
    EXPECT_EQ(model::exp_approx(0.0f), 1.0f);
    EXPECT_TRUE(std::isnan(model::silu_approx(kNaN)));
}

// fuzz_gguf, tests/fuzz-regressions/fuzz_gguf/quantize-act-nan.gguf: NaN
// activations (from NaN weights) were converted to int8 (undefined). They
// quantize to -128 now, as x86's convert-and-pack gives; an infinite value
// makes the block's scale infinite and its other codes 0.
TEST(FuzzFix, ActivationQuantizersSaturateNaNAndInf) {
    std::vector<float> x(256);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 17) - 8) / 4.0f;
    x[3] = kNaN;
    quant::BlockQ8_0 q8_0[8];
    quant::ref::quantize_row_q8_0(x.data(), q8_0, x.size());
    EXPECT_EQ(q8_0[0].qs[3], -128);
    EXPECT_EQ(q8_0[0].qs[1], int8_t(std::nearbyint(x[1] * (127.0f / 2.0f))));  // finite values as before

    quant::BlockQ8_1 q8_1[8];
    quant::ref::quantize_row_q8_1(x.data(), q8_1, x.size());
    EXPECT_EQ(q8_1[0].qs[3], -128);

    x[3] = kInf;
    quant::ref::quantize_row_q8_0(x.data(), q8_0, x.size());
    EXPECT_EQ(q8_0[0].qs[3], -128);  // inf x (127 / inf) is NaN
    EXPECT_EQ(q8_0[0].qs[1], 0);

    // Subnormal activations: 127 / amax overflows to inf, and x86's
    // convert-and-pack (llama.cpp's AVX quantizer) gives -128 for +inf too.
    std::vector<float> tiny(32);
    for (size_t i = 0; i < tiny.size(); ++i) tiny[i] = std::ldexp(float(int(i) - 16), -140);
    quant::ref::quantize_row_q8_0(tiny.data(), q8_0, tiny.size());
    EXPECT_EQ(q8_0[0].qs[0], -128);   // -inf
    EXPECT_EQ(q8_0[0].qs[16], -128);  // 0 x inf = NaN
    EXPECT_EQ(q8_0[0].qs[17], -128);  // +inf

    quant::BlockQ8_K q8_k[1];
    x[3] = -kInf;
    quant::ref::quantize_row_q8_K(x.data(), q8_k, x.size());
    for (const int8_t c : q8_k[0].qs) EXPECT_TRUE(c == 0 || c == -128) << int(c);
}

// The same two findings end to end: a model whose weights are NaN or
// infinite loads and generates ids of its vocabulary (the text is garbage,
// the process must not be).
TEST(FuzzFix, ModelWithNonFiniteWeightsGenerates) {
    for (const uint16_t bad : {uint16_t(0x7E00), uint16_t(0x7C00), uint16_t(0xFC00)}) {  // NaN, +inf, -inf
        for (const quant::Type type : {quant::Type::F16, quant::Type::Q8_0, quant::Type::Q4_0}) {
            test::TinyModelSpec spec;
            spec.n_embd = 32;
            spec.n_layer = 1;
            spec.n_head = 2;
            spec.n_head_kv = 1;
            spec.n_ff = 32;
            spec.weight_type = type;
            std::vector<uint8_t> bytes = test::tiny_llama(spec);
            const gguf::File file = gguf::File::parse(bytes);
            // Every F16 value of the attention/FFN matrices, or the block
            // scales (the first two bytes of each block) of quantized ones.
            for (const gguf::TensorInfo& t : file.tensors()) {
                if (t.name.rfind("blk.0.", 0) != 0 || t.type() == quant::Type::F32) continue;
                const size_t step = type == quant::Type::F16 ? 2 : t.traits.block_bytes;
                for (size_t at = 0; at + 2 <= t.n_bytes; at += step) std::memcpy(&bytes[t.file_offset + at], &bad, 2);
            }
            SessionOptions o;
            o.threads = 1;
            o.context = 16;
            const auto s = Session::open_bytes(bytes, o);
            const auto prompt = s->tokenize("Hello there", false, false);
            GenerateOptions g;
            g.max_tokens = 4;
            g.ignore_eos = true;
            for (const float temp : {0.0f, 0.8f}) {
                g.sampling.temperature = temp;
                s->reset();
                const auto st = s->generate(prompt, g, nullptr);
                for (const TokenId id : st.tokens) EXPECT_TRUE(id >= 0 && id < s->info().n_vocab);
            }
        }
    }
}

}  // namespace
}  // namespace smolinfer
