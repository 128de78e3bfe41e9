// Grammar-constrained decoding: which tokens may come next, and advancing
// by the chosen one. Equivalent to llama.cpp's grammar sampler
// (llama_grammar_apply_impl / llama_grammar_accept_impl): a token is allowed
// iff all of its bytes can be consumed by some stack, where a token ending
// inside a UTF-8 character is allowed iff the character may still match; an
// end-of-generation token is allowed iff the grammar is complete; a token
// whose piece is empty or starts with a NUL byte never is.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/stack_graph.h"
#include "grammar/token_trie.h"
#include "grammar/utf8_stream.h"

namespace smolinfer::grammar {

// The vocabulary as the grammar sees it; built once per model.
struct TokenTable {
    // pieces[id]: the token's bytes as llama.cpp's token_to_piece renders
    // them (control tokens as their text). end_of_generation[id]: ends a generation.
    TokenTable(std::vector<std::string> pieces, std::vector<uint8_t> end_of_generation);

    std::vector<std::string> pieces;  // cut at the first NUL byte (llama.cpp reads them as C strings)
    std::vector<uint8_t> end_of_generation;
    TokenTrie trie;  // every piece but the end-of-generation tokens'
    size_t size() const { return pieces.size(); }
};

class Matcher {
public:
    Matcher(Grammar grammar, std::shared_ptr<const TokenTable> tokens);

    // Bit i of word i/64 set: token i may come next. End-of-generation tokens
    // are set when the grammar is complete and allow_end. Valid until the
    // next call.
    std::span<const uint64_t> allowed(bool allow_end);
    // Whether the last allowed() set any bit.
    bool any_allowed() const { return any_; }

    // Advances by a token. Throws smolinfer::Error when the grammar does not
    // allow it. An end-of-generation token leaves the state as it is.
    void accept(int32_t token);
    // Advances by bytes as if they were one token's piece (a lazy grammar
    // takes the text from its trigger on this way).
    void accept_text(std::string_view text);
    const TokenTable& tokens() const { return *tokens_; }

    // Whether the text so far is a whole sentence of the grammar.
    bool complete() const { return graph_.complete(set_); }

private:
    void accept_piece(std::string_view piece, const std::string& what);
    void walk(uint32_t node, SetId set, Utf8State state, uint64_t* bits);
    const std::vector<uint64_t>& mask_for_state();

    StackGraph graph_;
    std::shared_ptr<const TokenTable> tokens_;
    SetId set_;
    uint32_t partial_value_ = 0;  // a character begun by the tokens so far
    int partial_remain_ = 0;
    // Masks of the non-end tokens by state: a grammar revisits few states
    // (inside a JSON string every character leads back to the same one).
    std::unordered_map<uint64_t, std::vector<uint64_t>> cache_;
    std::vector<uint64_t> out_;
    bool any_ = false;
};

}  // namespace smolinfer::grammar
