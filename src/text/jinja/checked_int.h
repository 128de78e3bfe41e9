// Integer arithmetic for templates. Python's integers do not overflow; ours
// are 64-bit, so a result that does not fit is a RenderError instead of
// undefined behaviour (or a silently wrapped number).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "text/jinja/errors.h"

namespace smolinfer::text::jinja {

[[noreturn]] inline void integer_overflow(const char* op) {
    throw RenderError(std::string("integer overflow in ") + op + " (templates have 64-bit integers)");
}

inline int64_t checked_add(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) integer_overflow("+");
    return r;
}

inline int64_t checked_sub(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) integer_overflow("-");
    return r;
}

inline int64_t checked_mul(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) integer_overflow("*");
    return r;
}

inline int64_t checked_neg(int64_t a) { return checked_sub(0, a); }

// Exact, unlike std::pow through double (3 ** 39 needs 62 bits).
inline int64_t checked_pow(int64_t base, int64_t exponent) {
    int64_t result = 1;
    while (exponent > 0) {
        if (exponent & 1) result = checked_mul(result, base);
        exponent >>= 1;
        if (exponent > 0) base = checked_mul(base, base);
    }
    return result;
}

// int(x) of a float: toward zero, as Python's int().
inline int64_t checked_truncate(double x) {
    if (std::isnan(x)) throw RenderError("cannot convert NaN to an integer");
    const double t = std::trunc(x);
    // 2^63 is exact as a double; every double below it in magnitude fits.
    if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0)) {
        throw RenderError("the float " + std::to_string(x) + " does not fit a 64-bit integer");
    }
    return int64_t(t);
}

}  // namespace smolinfer::text::jinja
