// A small, portable, seedable generator (xoshiro256**, seeded by
// splitmix64), so that the same seed gives the same tokens on every
// platform and in the browser.
#pragma once

#include <cstdint>

namespace smolinfer::sample {

class Rng {
public:
    explicit Rng(uint64_t seed) {
        for (uint64_t& s : state_) {
            seed += 0x9E3779B97F4A7C15ull;
            uint64_t z = seed;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            s = z ^ (z >> 31);
        }
    }

    uint64_t next() {
        const uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform in [0, 1), 24 bits of precision.
    float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t state_[4];
};

}  // namespace smolinfer::sample
