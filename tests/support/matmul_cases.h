// Matrix-times-activations cases whose exact float32 results llama.cpp's CPU
// backend computed (tests/golden/quant/matmul.json, made by
// scripts/gen-matmul-golden). Header-only and dependency-free on purpose: the
// golden generator (scripts/matmul-oracle/oracle.cpp, built against
// llama.cpp) includes this same file, so both sides build identical inputs
// from a seed instead of committing megabytes of random bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace smolinfer::test::matmul_cases {

// Block shape of a weight format, and where its half-precision scale fields
// sit (they must be finite and of a realistic size; every other byte of a
// block is valid whatever its value).
struct Layout {
    const char* type;  // GGUF type name, as ggml_type_name() spells it
    size_t block_values;
    size_t block_bytes;
    size_t scale_offsets[2];
    int n_scales;
    bool scale_signed[2];  // f16 values and Q4_1/Q5_1 minimums take either sign
};

inline const Layout kLayouts[] = {
    {"f32", 1, 4, {0, 0}, 0, {false, false}},
    {"f16", 1, 2, {0, 0}, 1, {true, false}},
    {"q4_0", 32, 18, {0, 0}, 1, {false, false}},
    {"q4_1", 32, 20, {0, 2}, 2, {false, true}},
    {"q5_0", 32, 22, {0, 0}, 1, {false, false}},
    {"q5_1", 32, 24, {0, 2}, 2, {false, true}},
    {"q8_0", 32, 34, {0, 0}, 1, {false, false}},
    {"q4_K", 256, 144, {0, 2}, 2, {false, false}},
    {"q5_K", 256, 176, {0, 2}, 2, {false, false}},
    {"q6_K", 256, 210, {208, 0}, 1, {false, false}},
};

inline const Layout* find_layout(const std::string& type) {
    for (const Layout& l : kLayouts) {
        if (type == l.type) return &l;
    }
    return nullptr;
}

struct Case {
    const char* type;
    int rows;
    int cols;
    int tokens;
    uint64_t seed;
};

// Row counts that are and are not multiples of 8 (llama.cpp interleaves the
// rows of Q4_0 and Q4_K matrices in groups of 8 when it can, which changes
// its summation order); token counts that exercise its one-token path, its
// 4-token groups and their remainders.
inline std::vector<Case> all_cases() {
    std::vector<Case> cases;
    uint64_t seed = 1;
    for (const Layout& l : kLayouts) {
        // Float rows of 600 values also leave a tail past the last 64 and
        // are not a multiple of llama.cpp's GEMM lanes (16).
        std::vector<int> col_counts = {l.block_values == 256 ? 1536 : 576};
        if (l.block_values == 1) col_counts.push_back(600);
        for (int cols : col_counts) {
            for (int rows : {16, 12}) {
                for (int tokens : {1, 2, 4, 7, 8}) cases.push_back({l.type, rows, cols, tokens, seed++});
            }
        }
    }
    return cases;
}

// splitmix64: tiny, and identical in every language we might port it to.
struct Rng {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
};

// A half-precision value in [2^-9, 2^-4): the size of real block scales.
inline uint16_t random_scale(Rng& rng, bool allow_negative) {
    uint16_t h = uint16_t(0x1800 + rng.next() % 0x1000);
    if (allow_negative && (rng.next() & 1)) h |= 0x8000;
    return h;
}

// Weight bytes for `rows` rows of `cols` values of layout l.
inline std::vector<uint8_t> weights(const Layout& l, const Case& c) {
    Rng rng{c.seed * 0x100000001B3ull};
    const size_t n_blocks = size_t(c.rows) * size_t(c.cols) / l.block_values;
    std::vector<uint8_t> bytes(n_blocks * l.block_bytes);
    for (size_t b = 0; b < n_blocks; ++b) {
        uint8_t* block = bytes.data() + b * l.block_bytes;
        if (l.n_scales == 0) {  // f32: a float in [-0.05, 0.05]
            const float v = float(int64_t(rng.next() % 100001) - 50000) * 1e-6f;
            std::memcpy(block, &v, 4);
            continue;
        }
        for (size_t i = 0; i < l.block_bytes; ++i) block[i] = uint8_t(rng.next() >> 56);
        for (int s = 0; s < l.n_scales; ++s) {
            const uint16_t h = random_scale(rng, l.scale_signed[s]);
            std::memcpy(block + l.scale_offsets[s], &h, 2);
        }
    }
    return bytes;
}

// Activations: values in [-1, 1] with an outlier every 97 values, as real
// residual streams have.
inline std::vector<float> activations(const Case& c) {
    Rng rng{c.seed ^ 0xA5A5A5A5A5A5A5A5ull};
    std::vector<float> x(size_t(c.tokens) * size_t(c.cols));
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] = float(int64_t(rng.next() % 200001) - 100000) * 1e-5f;
        if (i % 97 == 0) x[i] *= 8.0f;
    }
    return x;
}

}  // namespace smolinfer::test::matmul_cases
