// GBNF for the decimal integers inside a range, digit by digit: the body
// llama.cpp's converter writes for {"type": "integer", "minimum": .., "maximum": ..}.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace smolinfer::grammar {

// An alternation of sequences matching exactly the integers in
// [minimum, maximum] written without leading zeros (an absent bound is
// open). At least one bound must be given and minimum <= maximum.
std::string gbnf_integer_range(std::optional<int64_t> minimum, std::optional<int64_t> maximum);

}  // namespace smolinfer::grammar
