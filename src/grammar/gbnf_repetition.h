// GBNF for "item repeated min..max times, optionally separated", written
// the way llama.cpp's JSON-schema converter writes it (x?, x*, x+, x{m,n},
// and for separated lists `x (sep x){m-1,n-1}`).
#pragma once

#include <limits>
#include <string>

namespace smolinfer::grammar {

inline constexpr int kNoMaxCount = std::numeric_limits<int>::max();

// `separator` empty: no separator. max == kNoMaxCount: no upper limit.
// Returns "" when max is 0 (nothing may appear).
std::string gbnf_repetition(const std::string& item, int min, int max, const std::string& separator);

}  // namespace smolinfer::grammar
