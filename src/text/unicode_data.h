// The generated code point tables (see scripts/gen-unicode-tables.py).
#pragma once

#include <cstddef>
#include <cstdint>

namespace smolinfer::text::unicode_data {

struct CodepointRange {
    uint32_t first;  // the range runs to the next entry's first - 1
    uint16_t flags;  // text::CodepointFlags bits
};

extern const CodepointRange kRanges[];
extern const size_t kRangeCount;

// Code points first, first + stride, ... (count of them) lowercase to
// themselves + delta. Sorted by first; runs do not overlap.
struct LowercaseRun {
    uint32_t first;
    uint16_t count;
    uint16_t stride;
    int32_t delta;
};

extern const LowercaseRun kLowercaseRuns[];
extern const size_t kLowercaseRunCount;

// Code points first .. first + count - 1 have NFD decompositions that start
// with `nfd`. Sorted by first.
struct NfdRange {
    uint32_t first : 21;
    uint32_t count : 11;
    uint32_t nfd;
};

extern const NfdRange kNfdRanges[];
extern const size_t kNfdRangeCount;

}  // namespace smolinfer::text::unicode_data
