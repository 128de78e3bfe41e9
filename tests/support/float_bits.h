// A float's bit pattern, for tests that compare results bit for bit.
// (memcpy, not std::bit_cast: Emscripten 3.1.6's libc++ lacks it.)
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace smolinfer::test {

inline uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The half-precision quiet NaN (what an unwritten cache cell holds in the kernel tests).
inline constexpr uint16_t kHalfNaN = 0x7E00;

}  // namespace smolinfer::test
