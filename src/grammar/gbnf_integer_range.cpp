#include "grammar/gbnf_integer_range.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string_view>

namespace smolinfer::grammar {
namespace {

// An open end of the range: the values llama.cpp uses as "no bound", which
// keeps the text identical where a bound equals one of them.
constexpr int64_t kNoMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();
constexpr int kUnbounded = std::numeric_limits<int>::max();

// Integers above 16 digits are not written by the open-ended rules
// (llama.cpp's integral-part allows 16 digits as well).
constexpr int kMaxDigits = 16;

class RangeWriter {
public:
    std::string text;

    void write(int64_t lo, int64_t hi, int digits_left, bool top_level) {
        const bool has_lo = lo != kNoMin;
        const bool has_hi = hi != kNoMax;
        if (has_lo && has_hi) {
            write_closed(lo, hi, digits_left);
            return;
        }
        const int fewer = std::max(digits_left - 1, 1);
        if (has_lo) {
            write_at_least(lo, digits_left, fewer, top_level);
        } else if (has_hi) {
            write_at_most(hi, digits_left, fewer, top_level);
        } else {
            throw std::logic_error("gbnf_integer_range: no bound");
        }
    }

private:
    void digit_class(char from, char to) {
        text += '[';
        text += from;
        if (from != to) {
            text += '-';
            text += to;
        }
        text += ']';
    }

    // [0-9] repeated min..max times (max kUnbounded: no upper limit).
    void any_digits(int min, int max) {
        text += "[0-9]";
        if (min == 1 && max == 1) return;
        text += '{' + std::to_string(min);
        if (max != min) {
            text += ',';
            if (max != kUnbounded) text += std::to_string(max);
        }
        text += '}';
    }

    // All digit strings of one length from `from` to `to` (same length).
    void same_length(std::string_view from, std::string_view to) {
        size_t common = 0;
        while (common < from.size() && common < to.size() && from[common] == to[common]) ++common;
        if (common > 0) text += '"' + std::string(from.substr(0, common)) + '"';
        if (common >= from.size() || common >= to.size()) return;
        if (common > 0) text += ' ';
        const size_t rest = from.size() - common - 1;
        const char f = from[common];
        const char t = to[common];
        if (rest == 0) {
            text += '[';
            text += f;
            text += '-';
            text += t;
            text += ']';
            return;
        }
        const std::string zeros(rest, '0');
        const std::string nines(rest, '9');
        const std::string_view from_rest = from.substr(common + 1);
        const std::string_view to_rest = to.substr(common + 1);
        bool reached_to = false;
        text += '(';
        if (from_rest == zeros) {
            digit_class(f, static_cast<char>(t - 1));
            text += ' ';
            any_digits(static_cast<int>(rest), static_cast<int>(rest));
        } else {
            text += '[';
            text += f;
            text += "] (";
            same_length(from_rest, nines);
            text += ')';
            if (f < t - 1) {
                text += " | ";
                if (to_rest == nines) {
                    digit_class(static_cast<char>(f + 1), t);
                    reached_to = true;
                } else {
                    digit_class(static_cast<char>(f + 1), static_cast<char>(t - 1));
                }
                text += ' ';
                any_digits(static_cast<int>(rest), static_cast<int>(rest));
            }
        }
        if (!reached_to) {
            text += " | ";
            digit_class(t, t);
            text += ' ';
            same_length(zeros, to_rest);
        }
        text += ')';
    }

    void write_closed(int64_t lo, int64_t hi, int digits_left) {
        if (lo < 0 && hi < 0) {
            text += "\"-\" (";
            write(-hi, -lo, digits_left, true);
            text += ')';
            return;
        }
        if (lo < 0) {
            text += "\"-\" (";
            write(0, -lo, digits_left, true);
            text += ") | ";
            lo = 0;
        }
        std::string lo_s = std::to_string(lo);
        const std::string hi_s = std::to_string(hi);
        // One alternative per digit count: lo..99..9, 10..0..99..9, ..., 10..0..hi.
        for (size_t digits = lo_s.size(); digits < hi_s.size(); ++digits) {
            same_length(lo_s, std::string(digits, '9'));
            lo_s = "1" + std::string(digits, '0');
            text += " | ";
        }
        same_length(lo_s, hi_s);
    }

    void write_at_least(int64_t lo, int digits_left, int fewer, bool top_level) {
        if (lo < 0) {
            text += "\"-\" (";
            write(kNoMin, -lo, digits_left, false);
            text += ") | [0] | [1-9] ";
            any_digits(0, digits_left - 1);
        } else if (lo == 0) {
            if (top_level) {
                text += "[0] | [1-9] ";
                any_digits(0, fewer);
            } else {
                any_digits(1, digits_left);
            }
        } else if (lo <= 9) {
            const char c = static_cast<char>('0' + lo);
            const char first = top_level ? '1' : '0';
            if (c > first) {
                digit_class(first, static_cast<char>(c - 1));
                text += ' ';
                any_digits(1, fewer);
                text += " | ";
            }
            digit_class(c, '9');
            text += ' ';
            any_digits(0, fewer);
        } else {
            const std::string lo_s = std::to_string(lo);
            const int len = static_cast<int>(lo_s.size());
            const char c = lo_s[0];
            if (c > '1') {
                digit_class(top_level ? '1' : '0', static_cast<char>(c - 1));
                text += ' ';
                any_digits(len, fewer);
                text += " | ";
            }
            digit_class(c, c);
            text += " (";
            write(std::stoll(lo_s.substr(1)), kNoMax, fewer, false);
            text += ')';
            if (c < '9') {
                text += " | ";
                digit_class(static_cast<char>(c + 1), '9');
                text += ' ';
                any_digits(len - 1, fewer);
            }
        }
    }

    void write_at_most(int64_t hi, int digits_left, int fewer, bool top_level) {
        if (hi >= 0) {
            if (top_level) {
                text += "\"-\" [1-9] ";
                any_digits(0, fewer);
                text += " | ";
            }
            write(0, hi, digits_left, true);
        } else {
            text += "\"-\" (";
            write(-hi, kNoMax, digits_left, false);
            text += ')';
        }
    }
};

}  // namespace

std::string gbnf_integer_range(std::optional<int64_t> minimum, std::optional<int64_t> maximum) {
    if (!minimum && !maximum) throw std::logic_error("gbnf_integer_range: no bound");
    RangeWriter writer;
    writer.write(minimum.value_or(kNoMin), maximum.value_or(kNoMax), kMaxDigits, true);
    return writer.text;
}

}  // namespace smolinfer::grammar
