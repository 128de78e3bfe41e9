// Split models (llama.cpp's gguf-split layout): `smolinfer split` writes the
// bytes llama-gguf-split writes (golden SHA-256s), and a model opened from
// its first part computes exactly what the single file computes (the same
// logits, bit for bit, and the same greedy tokens), natively (parts mapped
// from disk) and as the browser hands them over (parts in malloc'ed
// buffers). Missing or foreign parts are refused with a message naming them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "convert/split_model.h"
#include "runtime/sha256.h"
#include "smolinfer/session.h"
#include "support/paths.h"
#include "support/tiny_model.h"
#include "support/files.h"

namespace smolinfer {
namespace {

namespace fs = std::filesystem;

#define EXPECT_HAS(haystack, needle) \
    EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)



std::string sha256_of(const std::string& path) {
    runtime::Sha256 h;
    h.update(test::slurp_bytes(path));
    return h.finish_hex();
}

SessionOptions two_threads() {
    SessionOptions o;
    o.threads = 2;
    o.context = 256;
    return o;
}

std::string open_error(const std::string& path) {
    try {
        Session::open_file(path, two_threads());
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << path << " opened";
    return "";
}

// All logits of a prompt, then 32 greedy tokens.
struct Run {
    std::vector<float> logits;
    std::vector<TokenId> tokens;
};

Run run(Session& s, const std::string& prompt) {
    Run r;
    const auto ids = s.tokenize(prompt, true, true);
    const auto logits = s.evaluate(ids, true);
    r.logits.assign(logits.begin(), logits.end());
    s.reset();
    GenerateOptions g;
    g.max_tokens = 32;
    g.ignore_eos = true;
    g.sampling.temperature = 0.0f;
    s.generate(ids, g, [&](const TokenEvent& e) {
        if (e.token >= 0) r.tokens.push_back(e.token);
        return true;
    });
    return r;
}

void expect_same_runs(Session& single, Session& split) {
    for (const char* prompt : {"The capital of France is", "<|im_start|>user\nWrite a haiku.<|im_end|>\n"}) {
        single.reset();
        split.reset();
        const Run a = run(single, prompt), b = run(split, prompt);
        ASSERT_EQ(a.logits.size(), b.logits.size());
        EXPECT_EQ(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * sizeof(float)), 0) << prompt;
        EXPECT_EQ(a.tokens, b.tokens) << prompt;
        EXPECT_EQ(a.tokens.size(), 32u);
    }
}

// ------------------------------------------------------------------ the tiny model

struct TinySplit : ::testing::Test {
    void SetUp() override {
        dir = test::fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
        single = dir + "/tiny.gguf";
        std::ofstream(single, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                      std::streamsize(bytes.size()));
    }
    void TearDown() override { fs::remove_all(dir); }

    std::vector<std::string> split(const std::string& prefix, uint64_t max_tensors, bool no_tensor_first = false) {
        convert::SplitOptions o;
        o.max_tensors = max_tensors;
        o.no_tensor_first_split = no_tensor_first;
        return convert::split_file(single, dir + "/" + prefix, o);
    }

    std::vector<uint8_t> bytes = test::tiny_llama();  // 2 layers: 2 + 2 * 9 = 20 tensors
    std::string dir, single;
};

TEST_F(TinySplit, PartsNamedAndFilledAsLlamaCppDoes) {
    const auto parts = split("m", 8);
    ASSERT_EQ(parts.size(), 3u);  // 8 + 8 + 4 tensors
    EXPECT_EQ(parts[0], dir + "/m-00001-of-00003.gguf");
    EXPECT_EQ(parts[2], dir + "/m-00003-of-00003.gguf");
    const auto s = Session::open_file(parts[0], two_threads());
    EXPECT_EQ(s->info().file_parts, 3);
    uint64_t total = 0;
    for (const auto& p : parts) total += fs::file_size(p);
    EXPECT_EQ(s->info().file_bytes, total);
}

TEST_F(TinySplit, SameResultsAsTheSingleFile) {
    const auto single_session = Session::open_file(single, two_threads());
    for (const bool no_tensor_first : {false, true}) {
        const auto parts = split(no_tensor_first ? "meta-first" : "m", 7, no_tensor_first);
        const auto split_session = Session::open_file(parts[0], two_threads());
        EXPECT_EQ(split_session->info().parameters, single_session->info().parameters);
        expect_same_runs(*single_session, *split_session);
    }
}

// The browser's path: every part in a malloc'ed buffer of its own.
TEST_F(TinySplit, PartsFromMemory) {
    const auto parts = split("m", 8);
    auto buffers = [&](std::vector<size_t> order) {
        std::vector<Session::MallocPart> out;
        for (const size_t i : order) {
            const auto b = test::slurp_bytes(parts[i]);
            auto* p = static_cast<uint8_t*>(std::malloc(b.size()));
            std::memcpy(p, b.data(), b.size());
            out.push_back({p, b.size()});
        }
        return out;
    };
    const auto single_session = Session::open_file(single, two_threads());
    const auto in_memory = Session::open_malloc_parts(buffers({0, 1, 2}), two_threads());
    expect_same_runs(*single_session, *in_memory);

    try {
        Session::open_malloc_parts(buffers({0, 2, 1}), two_threads());
        ADD_FAILURE() << "parts out of order opened";
    } catch (const Error& e) {
        EXPECT_HAS(e.what(), "part 2 of 3");
        EXPECT_HAS(e.what(), "split.no = 2");
    }
    try {
        Session::open_malloc_parts(buffers({0, 1}), two_threads());
        ADD_FAILURE() << "2 of 3 parts opened";
    } catch (const Error& e) {
        EXPECT_HAS(e.what(), "split.count = 3 but 2 parts are given");
    }
}

TEST_F(TinySplit, MissingPartIsNamed) {
    const auto parts = split("m", 8);
    fs::remove(parts[1]);
    const std::string m = open_error(parts[0]);
    EXPECT_HAS(m, "part 2 of 3");
    EXPECT_HAS(m, "missing");
    EXPECT_HAS(m, "m-00002-of-00003.gguf");
}

TEST_F(TinySplit, LaterPartPointsToTheFirst) {
    const auto parts = split("m", 8);
    const std::string m = open_error(parts[2]);
    EXPECT_HAS(m, "part 3 of 3");
    EXPECT_HAS(m, "'" + parts[0] + "'");
}

TEST_F(TinySplit, ForeignPartIsNamed) {
    // Part 3 in part 2's place.
    const auto parts = split("m", 8);
    fs::copy_file(parts[2], parts[1], fs::copy_options::overwrite_existing);
    std::string m = open_error(parts[0]);
    EXPECT_HAS(m, "m-00002-of-00003.gguf");
    EXPECT_HAS(m, "split.no = 2");

    // The parts of another cut of the same model (7 tensors a part): every
    // part is the right number, but the tensors do not add up.
    const auto other = split("o", 7);
    ASSERT_EQ(other.size(), 3u);
    const auto fresh = split("m", 8);
    fs::copy_file(other[2], fresh[2], fs::copy_options::overwrite_existing);
    m = open_error(fresh[0]);
    EXPECT_HAS(m, "split");
    EXPECT_HAS(m, "tensor");
}

TEST_F(TinySplit, FirstPartUnderAnotherNameIsRefused) {
    const auto parts = split("m", 8);
    const std::string renamed = dir + "/renamed.gguf";
    fs::copy_file(parts[0], renamed);
    const std::string m = open_error(renamed);
    EXPECT_HAS(m, "part 1 of 3");
    EXPECT_HAS(m, "-00001-of-00003.gguf");
}

TEST_F(TinySplit, OneCommandLimit) {
    convert::SplitOptions both;
    both.max_tensors = 4;
    both.max_bytes = 1000;
    EXPECT_THROW(convert::split_file(single, dir + "/x", both), Error);
    convert::SplitOptions too_small;
    too_small.max_bytes = 64;  // smaller than token_embd.weight
    EXPECT_THROW(convert::split_file(single, dir + "/x", too_small), Error);
    EXPECT_FALSE(fs::exists(dir + "/x-00001-of-00002.gguf"));
}

// Parameters and quantization of the tiny model, counted by hand from its
// shapes (n_vocab 259 + merges, n_embd 64, 2 layers, n_ff 128, 4 heads, 2 KV heads).
TEST_F(TinySplit, ModelSummary) {
    const auto s = Session::open_file(single, two_threads());
    const uint64_t V = uint64_t(s->info().n_vocab), E = 64, F = 128, KV = 32;
    const uint64_t per_layer = E + E * E + E * KV + E * KV + E * E + E + 3 * E * F;
    EXPECT_EQ(s->info().parameters, V * E + E + 2 * per_layer);
    EXPECT_EQ(s->info().dominant_type, "Q8_0");
    EXPECT_EQ(s->info().file_type, "");  // the tiny model has no general.file_type
    EXPECT_EQ(s->info().architecture, "llama");
}

// ------------------------------------------------------------------ the real model

TEST(SplitModel, PartsAreTheBytesLlamaCppWrites) {
    const auto golden = test::load_golden("split/Q4_1.json");
    const std::string dir = test::fresh_dir("real-bytes");
    convert::SplitOptions o;
    o.max_tensors = golden["split_max_tensors"].get<uint64_t>();
    const auto parts = convert::split_file(test::model_path(), dir + "/smol", o);
    ASSERT_EQ(parts.size(), golden["parts"].size());
    for (size_t i = 0; i < parts.size(); ++i) {
        const auto& g = golden["parts"][i];
        EXPECT_EQ(parts[i], dir + "/smol" + g["suffix"].get<std::string>());
        EXPECT_EQ(fs::file_size(parts[i]), g["bytes"].get<uint64_t>()) << parts[i];
        EXPECT_EQ(sha256_of(parts[i]), g["sha256"].get<std::string>()) << parts[i];
    }
    fs::remove_all(dir);
}

TEST(SplitModel, SameLogitsAndTokensAsTheSingleFile) {
    const std::string dir = test::fresh_dir("real-run");
    convert::SplitOptions o;
    o.max_tensors = 100;  // 272 tensors: 3 parts
    const auto parts = convert::split_file(test::model_path(), dir + "/smol", o);
    ASSERT_EQ(parts.size(), 3u);
    const auto single = Session::open_file(test::model_path(), two_threads());
    const auto split = Session::open_file(parts[0], two_threads());
    EXPECT_EQ(split->info().file_parts, 3);
    EXPECT_EQ(split->info().parameters, single->info().parameters);
    EXPECT_EQ(split->info().file_type, "Q4_1");
    EXPECT_EQ(split->info().dominant_type, "Q4_1");
    expect_same_runs(*single, *split);
    fs::remove_all(dir);
}

}  // namespace
}  // namespace smolinfer
