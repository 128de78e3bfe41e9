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

}  // namespace

std::vector<uint8_t> random_blocks(quant::Type type, size_t n, std::mt19937& rng, float scale) {
    const quant::TypeTraits& t = quant::traits(type);
    const size_t nb = n / t.block_elems;
    std::vector<uint8_t> b(nb * t.block_bytes);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& x : b) x = uint8_t(byte(rng));
    std::uniform_real_distribution<float> unit(0.5f, 1.5f);
    std::normal_distribution<float> normal(0.0f, scale);

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
