// The fuzz harnesses: one function per target that takes arbitrary bytes and
// drives a part of the library with them. The libFuzzer entry points
// (entry.cpp, one binary per target) call these; so does the GoogleTest suite
// (tests/test_fuzz_regressions.cpp), which replays the seed corpora and every
// crash input the fuzzers ever found.
//
// Contract: bad input may only ever make the library throw smolinfer::Error,
// which the harness catches. Anything else escapes: another exception type,
// or a broken invariant (thrown as InvariantError), or, under the
// sanitizers, a memory or undefined-behaviour error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace smolinfer::fuzz {

using Bytes = std::span<const uint8_t>;

// A property the harness checks was violated (a bug, not bad input).
class InvariantError : public std::logic_error {
public:
    explicit InvariantError(const std::string& what) : std::logic_error("fuzz invariant broken: " + what) {}
};

inline void check(bool ok, const std::string& what) {
    if (!ok) throw InvariantError(what);
}

// bytes -> gguf::File::parse; if it parses, the Llama config, the weights and
// the vocabulary bound as the engine binds them; if that works, a Session
// from the bytes (one thread, a context of at most 8) that tokenizes and
// generates two tokens.
void gguf_one(Bytes data);

// bytes -> tokenize (with and without special tokens) on the tiny test
// vocabulary or, when $SMOLINFER_MODEL names the model, SmolLM2's; the same
// bytes as token ids (many out of range) -> detokenize and the stream decoder.
void tokenizer_one(Bytes data);

// bytes -> a template source and a conversation (roles and contents) -> the
// chat template renderer (SmolLM2's template, the ChatML fallback, or the
// bytes as template text), then tokenized.
void chat_template_one(Bytes data);

// bytes -> sampling parameters (NaN, inf, negative, huge) -> validation; when
// valid, a sampler draws from random logits (and some NaN/inf ones).
void sampler_one(Bytes data);

// bytes -> GBNF text -> the grammar parser; when it parses, the matcher walks
// a few allowed tokens of a small vocabulary (harness_grammar.cpp).
void grammar_one(Bytes data);

}  // namespace smolinfer::fuzz
