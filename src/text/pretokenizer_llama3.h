// The Llama 3 split (also Qwen2's, with single digits): one pass of the
// pre-tokenizer, hand-compiled from the regex llama.cpp uses for
// tokenizer.ggml.pre = llama-bpe / qwen2:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// (Qwen2: \p{N} in place of \p{N}{1,3}).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace smolinfer::text {

// Reads fragment lengths (in code points of `cpts`) and returns finer ones;
// matching never looks outside the fragment being split. `max_digits` is
// the longest number run one word takes (3 for Llama 3, 1 for Qwen2).
std::vector<size_t> split_llama3(const std::vector<uint32_t>& cpts, const std::vector<size_t>& in, size_t max_digits);

}  // namespace smolinfer::text
