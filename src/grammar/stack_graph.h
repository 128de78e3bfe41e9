// The grammar's pushdown stacks, shared and numbered so that matching is
// table lookups. A stack is a chain of nodes (position in the grammar's
// elements, the node below it); identical stacks are one node. The matcher's
// state is a set of stacks (the alternatives still alive), also numbered;
// advancing a set by a code point is computed once and then cached.
//
// Semantics are llama.cpp's (llama_grammar_advance_stack/accept): every
// stack in a set has a character set on top, or is empty (the grammar is
// complete there); rule references are expanded when pushed, and a
// reference that ends its alternative is not kept as a return address.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/grammar.h"

namespace smolinfer::grammar {

using SetId = int32_t;
constexpr SetId kDeadSet = -1;  // no stack left: the input is not a prefix of the grammar's language

class StackGraph {
public:
    // Throws smolinfer::Error when expanding the root does not terminate.
    explicit StackGraph(Grammar grammar);

    SetId initial() const { return initial_; }
    // The set after consuming one code point (kDeadSet when no stack can).
    SetId advance(SetId set, uint32_t cp) {
        if (set == kDeadSet) return kDeadSet;  // dead stays dead (e.g. a grammar with no sentence at all)
        if (cp < 128) {
            SetId next = sets_[size_t(set)].ascii_next[cp];
            if (next == kUnknown) {
                next = compute_advance(set, cp);  // may grow sets_: index again after
                sets_[size_t(set)].ascii_next[cp] = next;
            }
            return next;
        }
        const auto& cached = sets_[size_t(set)].other_next;
        const auto it = cached.find(cp);
        if (it != cached.end()) return it->second;
        const SetId next = compute_advance(set, cp);
        sets_[size_t(set)].other_next.emplace(cp, next);
        return next;
    }
    // The set without its empty stack (the set itself when it has none).
    SetId without_empty(SetId set);
    // Whether one of the stacks is empty (the input so far is a whole sentence).
    bool complete(SetId set) const { return set != kDeadSet && sets_[size_t(set)].has_empty; }
    // Whether a character beginning with an incomplete UTF-8 sequence may
    // match the top of one of the stacks (llama_grammar_match_partial_char).
    bool may_complete(SetId set, uint32_t value, int n_remain) const;
    size_t set_count() const { return sets_.size(); }

private:
    static constexpr SetId kUnknown = -2;
    static constexpr int32_t kEmptyStack = -1;

    struct Node {
        uint32_t pos;    // element index: a Chars element or a return position
        int32_t below;   // node id, or kEmptyStack
    };
    struct SetInfo {
        std::vector<int32_t> stacks;  // sorted node ids (kEmptyStack first when present)
        bool has_empty = false;
        std::array<SetId, 128> ascii_next;
        std::unordered_map<uint32_t, SetId> other_next;
    };
    struct VectorHash {
        size_t operator()(const std::vector<int32_t>& v) const;
    };

    int32_t node(uint32_t pos, int32_t below);
    // Adds to `out` the stacks the pending (position, stack below) pairs in
    // todo_ turn into once rule references are expanded and finished
    // alternatives popped.
    void expand_todo(std::vector<int32_t>& out);
    SetId intern(std::vector<int32_t>& stacks);
    SetId compute_advance(SetId set, uint32_t cp);

    Grammar g_;
    std::vector<Node> nodes_;
    std::unordered_map<uint64_t, int32_t> node_ids_;
    std::vector<SetInfo> sets_;
    std::unordered_map<std::vector<int32_t>, SetId, VectorHash> set_ids_;
    SetId initial_ = kDeadSet;
    std::vector<std::pair<uint32_t, int32_t>> todo_;  // scratch for expand_todo()
    std::vector<int32_t> scratch_;
};

}  // namespace smolinfer::grammar
