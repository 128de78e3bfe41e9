// A float's bit pattern, for tests that compare results bit for bit.
// (memcpy, not std::bit_cast: Emscripten 3.1.6's libc++ lacks it.)
#pragma once

#include <cstdint>
#include <cstring>

namespace smolinfer::test {

inline uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

}  // namespace smolinfer::test
