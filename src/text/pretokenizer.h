// Pre-tokenization: splitting text into words before BPE, exactly as
// llama.cpp does for each `tokenizer.ggml.pre` it knows. Each kind is a list
// of passes; every pass splits each fragment the previous pass produced.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace smolinfer::text {

enum class PreTokenizer {
    Default,  // llama.cpp's "default": punctuation runs, GPT-2, number runs, 3-digit groups
    Gpt2,     // the GPT-2 regex alone
    Smollm,   // every digit on its own, then GPT-2 (also starcoder, refact, ...)
};

// The pre-tokenizer named by tokenizer.ggml.pre; nullopt if unsupported.
std::optional<PreTokenizer> pretokenizer_from_name(std::string_view name);

// Splits text (UTF-8; invalid bytes become U+FFFD) into words, each returned
// as UTF-8.
std::vector<std::string> pretokenize(PreTokenizer kind, std::string_view text);

}  // namespace smolinfer::text
