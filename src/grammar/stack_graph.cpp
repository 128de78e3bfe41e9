#include "grammar/stack_graph.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "smolinfer/error.h"

namespace smolinfer::grammar {

namespace {

// Expanding a well-formed grammar touches each (position, stack) pair once;
// a grammar whose expansion keeps growing (left recursion hidden behind a
// rule that matches nothing without being written empty) stops here instead
// of exhausting memory. (Real grammars need a few hundred steps.)
constexpr size_t kMaxExpansionSteps = size_t(1) << 16;

uint64_t pair_key(uint32_t pos, int32_t below) { return (uint64_t(pos) << 32) | uint32_t(below + 1); }

}  // namespace

size_t StackGraph::VectorHash::operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (const int32_t x : v) h = (h ^ uint32_t(x)) * 1099511628211ull;
    return size_t(h);
}

StackGraph::StackGraph(Grammar grammar) : g_(std::move(grammar)) {
    scratch_.clear();
    todo_.clear();
    for (const uint32_t alt : g_.rules[g_.root].alternatives) todo_.push_back({alt, kEmptyStack});
    expand_todo(scratch_);
    initial_ = intern(scratch_);
}

int32_t StackGraph::node(uint32_t pos, int32_t below) {
    const auto [it, added] = node_ids_.emplace(pair_key(pos, below), int32_t(nodes_.size()));
    if (added) nodes_.push_back({pos, below});
    return it->second;
}

void StackGraph::expand_todo(std::vector<int32_t>& out) {
    std::unordered_set<uint64_t> seen;
    size_t steps = 0;
    while (!todo_.empty()) {
        const auto [pos, below] = todo_.back();
        todo_.pop_back();
        if (!seen.insert(pair_key(pos, below)).second) continue;
        if (++steps > kMaxExpansionSteps) {
            throw Error("grammar: expanding the rules does not terminate (a rule refers to itself before "
                        "matching a character, through rules that match nothing)");
        }
        const Element& e = g_.elements[pos];
        switch (e.kind) {
            case ElementKind::End:
                if (below == kEmptyStack) {
                    out.push_back(kEmptyStack);
                } else {
                    const Node n = nodes_[size_t(below)];
                    todo_.push_back({n.pos, n.below});
                }
                break;
            case ElementKind::Rule: {
                // The return address is left out when the reference ends its
                // alternative, so right recursion does not grow the stack.
                const int32_t ret = g_.elements[pos + 1].kind == ElementKind::End ? below : node(pos + 1, below);
                for (const uint32_t alt : g_.rules[e.index].alternatives) todo_.push_back({alt, ret});
                break;
            }
            case ElementKind::Chars:
                out.push_back(node(pos, below));
                break;
        }
    }
}

SetId StackGraph::intern(std::vector<int32_t>& stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    if (stacks.empty()) return kDeadSet;
    const auto it = set_ids_.find(stacks);
    if (it != set_ids_.end()) return it->second;
    const SetId id = SetId(sets_.size());
    SetInfo info;
    info.stacks = stacks;
    info.has_empty = stacks.front() == kEmptyStack;
    info.ascii_next.fill(kUnknown);
    sets_.push_back(std::move(info));
    set_ids_.emplace(stacks, id);
    return id;
}

SetId StackGraph::compute_advance(SetId set, uint32_t cp) {
    todo_.clear();
    for (const int32_t id : sets_[size_t(set)].stacks) {
        if (id == kEmptyStack) continue;
        const Node n = nodes_[size_t(id)];
        if (g_.charsets[g_.elements[n.pos].index].matches(cp)) todo_.push_back({n.pos + 1, n.below});
    }
    scratch_.clear();
    expand_todo(scratch_);
    return intern(scratch_);
}

SetId StackGraph::without_empty(SetId set) {
    if (set == kDeadSet || !sets_[size_t(set)].has_empty) return set;
    scratch_.clear();
    for (const int32_t id : sets_[size_t(set)].stacks) {
        if (id != kEmptyStack) scratch_.push_back(id);
    }
    return intern(scratch_);
}

bool StackGraph::may_complete(SetId set, uint32_t value, int n_remain) const {
    if (set == kDeadSet) return false;
    for (const int32_t id : sets_[size_t(set)].stacks) {
        if (id == kEmptyStack) continue;
        if (g_.charsets[g_.elements[nodes_[size_t(id)].pos].index].may_complete(value, n_remain)) return true;
    }
    return false;
}

}  // namespace smolinfer::grammar
