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
    Llama3,   // Llama 3's regex: case-insensitive contractions, numbers in runs of up to 3
    Qwen2,    // Llama 3's regex with every digit on its own
};

// What a tokenizer.ggml.pre name means to llama.cpp beyond the split itself.
struct PreTokenizerInfo {
    PreTokenizer kind;
    bool ignore_merges = false;  // a pre-tokenized word that is a token is taken whole, unmerged
    bool clean_spaces = true;    // detokenize removes spaces before punctuation (clean_up_tokenization_spaces)
    bool add_bos = false;        // default for tokenizer.ggml.add_bos_token
};

// The pre-tokenizer named by tokenizer.ggml.pre; nullopt if unsupported.
std::optional<PreTokenizerInfo> pretokenizer_info(std::string_view name);
std::optional<PreTokenizer> pretokenizer_from_name(std::string_view name);

// The names pretokenizer_info knows, comma separated (for error messages).
std::string supported_pretokenizer_names();

// Splits text (UTF-8; invalid bytes become U+FFFD) into words, each returned
// as UTF-8.
std::vector<std::string> pretokenize(PreTokenizer kind, std::string_view text);

}  // namespace smolinfer::text
