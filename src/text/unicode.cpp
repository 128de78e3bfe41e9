#include "text/unicode.h"

#include <algorithm>

#include "text/unicode_data.h"

namespace smolinfer::text {

CodepointFlags codepoint_flags(uint32_t cpt) {
    using unicode_data::kRangeCount;
    using unicode_data::kRanges;
    if (cpt >= 0x110000) return {CodepointFlags::Undefined};
    // Last range whose first code point is <= cpt.
    const auto* end = kRanges + kRangeCount;
    const auto* it = std::upper_bound(kRanges, end, cpt,
                                      [](uint32_t c, const unicode_data::CodepointRange& r) { return c < r.first; });
    return {(it - 1)->flags};
}

uint32_t simple_lowercase(uint32_t cpt) {
    using unicode_data::kLowercaseRunCount;
    using unicode_data::kLowercaseRuns;
    const auto* end = kLowercaseRuns + kLowercaseRunCount;
    const auto* it = std::upper_bound(kLowercaseRuns, end, cpt,
                                      [](uint32_t c, const unicode_data::LowercaseRun& r) { return c < r.first; });
    if (it == kLowercaseRuns) return cpt;
    const unicode_data::LowercaseRun& r = *(it - 1);
    const uint32_t offset = cpt - r.first;
    if (offset % r.stride != 0 || offset / r.stride >= r.count) return cpt;
    return uint32_t(int64_t(cpt) + r.delta);
}

uint32_t nfd_first(uint32_t cpt) {
    using unicode_data::kNfdRangeCount;
    using unicode_data::kNfdRanges;
    const auto* end = kNfdRanges + kNfdRangeCount;
    const auto* it = std::upper_bound(kNfdRanges, end, cpt,
                                      [](uint32_t c, const unicode_data::NfdRange& r) { return c < r.first; });
    if (it == kNfdRanges) return cpt;
    const unicode_data::NfdRange& r = *(it - 1);
    return cpt - r.first < r.count ? r.nfd : cpt;
}

std::vector<uint32_t> utf8_to_codepoints(std::string_view text) {
    std::vector<uint32_t> out;
    out.reserve(text.size());
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    auto cont = [&](size_t k) { return i + k < n && (s[i + k] & 0xC0) == 0x80; };
    while (i < n) {
        const uint8_t b = s[i];
        if (b < 0x80) {
            out.push_back(b);
            i += 1;
        } else if ((b & 0xE0) == 0xC0 && cont(1)) {
            out.push_back(uint32_t(b & 0x1F) << 6 | (s[i + 1] & 0x3F));
            i += 2;
        } else if ((b & 0xF0) == 0xE0 && cont(1) && cont(2)) {
            out.push_back(uint32_t(b & 0x0F) << 12 | uint32_t(s[i + 1] & 0x3F) << 6 | (s[i + 2] & 0x3F));
            i += 3;
        } else if ((b & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3)) {
            out.push_back(uint32_t(b & 0x07) << 18 | uint32_t(s[i + 1] & 0x3F) << 12 | uint32_t(s[i + 2] & 0x3F) << 6 |
                          (s[i + 3] & 0x3F));
            i += 4;
        } else {
            out.push_back(kReplacementChar);
            i += 1;
        }
    }
    return out;
}

void append_utf8(uint32_t cpt, std::string& out) {
    if (cpt < 0x80) {
        out.push_back(char(cpt));
    } else if (cpt < 0x800) {
        out.push_back(char(0xC0 | (cpt >> 6)));
        out.push_back(char(0x80 | (cpt & 0x3F)));
    } else if (cpt < 0x10000) {
        out.push_back(char(0xE0 | (cpt >> 12)));
        out.push_back(char(0x80 | ((cpt >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cpt & 0x3F)));
    } else {
        out.push_back(char(0xF0 | (cpt >> 18)));
        out.push_back(char(0x80 | ((cpt >> 12) & 0x3F)));
        out.push_back(char(0x80 | ((cpt >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cpt & 0x3F)));
    }
}

}  // namespace smolinfer::text
