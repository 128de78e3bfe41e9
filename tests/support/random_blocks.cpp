#include "support/random_blocks.h"

#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"

namespace smolinfer::test {

namespace {

void put_f16(std::vector<uint8_t>& b, size_t at, float v) {
    const uint16_t h = quant::f32_to_fp16(v);
    std::memcpy(&b[at], &h, 2);
}

// The standard library's distributions differ between libstdc++ and libc++
// (the WebAssembly build), and the random models' golden files need the
// same bytes everywhere: everything below is built from the generator's raw
// 32-bit outputs (which the standard fixes) with exact float arithmetic.
float uniform01(std::mt19937& rng) { return float(rng() >> 8) * 0x1p-24f; }  // [0, 1), exact
float unit_around_one(std::mt19937& rng) { return 0.5f + uniform01(rng); }  // [0.5, 1.5)
float roughly_normal(std::mt19937& rng, float sd) {
    // Irwin-Hall: twelve uniforms have mean 6 and variance 1.
    float sum = 0.0f;
    for (int i = 0; i < 12; ++i) sum += uniform01(rng);
    return (sum - 6.0f) * sd;
}

}  // namespace

std::vector<uint8_t> random_blocks(quant::Type type, size_t n, std::mt19937& rng, float scale) {
    const quant::TypeTraits& t = quant::traits(type);
    const size_t nb = n / t.block_elems;
    std::vector<uint8_t> b(nb * t.block_bytes);
    for (auto& x : b) x = uint8_t(rng() >> 24);
    auto unit = [&](std::mt19937& r) { return unit_around_one(r); };
    auto normal = [&](std::mt19937& r) { return roughly_normal(r, scale); };

    for (size_t i = 0; i < nb; ++i) {
        const size_t o = i * t.block_bytes;
        switch (type) {
            case quant::Type::F32:
                for (size_t j = 0; j < t.block_elems; ++j) {
                    const float v = normal(rng);
                    std::memcpy(&b[o + 4 * j], &v, 4);
                }
                break;
            case quant::Type::F16: put_f16(b, o, normal(rng)); break;
            case quant::Type::BF16: {
                const uint16_t h = quant::f32_to_bf16(normal(rng));
                std::memcpy(&b[o], &h, 2);
                break;
            }
            // Quant values span about 16 steps (4-bit) to 256 (8-bit): pick d
            // so that the values come out near `scale`.
            case quant::Type::Q4_0: put_f16(b, o, scale / 4 * unit(rng)); break;
            case quant::Type::Q5_0: put_f16(b, o, scale / 8 * unit(rng)); break;
            case quant::Type::Q8_0: put_f16(b, o, scale / 64 * unit(rng)); break;
            case quant::Type::Q4_1:
            case quant::Type::Q5_1:
                put_f16(b, o, scale / 8 * unit(rng));
                put_f16(b, o + 2, -scale * unit(rng));
                break;
            case quant::Type::Q8_1: put_f16(b, o, scale / 64 * unit(rng)); break;
            case quant::Type::Q2_K:
                put_f16(b, o + offsetof(quant::BlockQ2_K, d), scale / 20 * unit(rng));
                put_f16(b, o + offsetof(quant::BlockQ2_K, dmin), scale / 20 * unit(rng));
                break;
            case quant::Type::Q3_K: put_f16(b, o + offsetof(quant::BlockQ3_K, d), scale / 80 * unit(rng)); break;
            case quant::Type::Q4_K:
            case quant::Type::Q5_K:
                put_f16(b, o, scale / 200 * unit(rng));
                put_f16(b, o + 2, scale / 60 * unit(rng));
                break;
            case quant::Type::Q6_K: put_f16(b, o + offsetof(quant::BlockQ6_K, d), scale / 1000 * unit(rng)); break;
            case quant::Type::Q8_K: {
                const float d = scale / 64 * unit(rng);
                std::memcpy(&b[o], &d, 4);
                break;
            }
        }
    }
    if (type == quant::Type::F16) {
        for (size_t i = 0; i < nb; ++i) put_f16(b, 2 * i, normal(rng));
    }
    return b;
}

}  // namespace smolinfer::test
