// The generated code point class table (see scripts/gen-unicode-tables.py).
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

}  // namespace smolinfer::text::unicode_data
