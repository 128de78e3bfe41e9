#include "api/cached_cells.h"

#include <algorithm>

namespace smolinfer {

int CellArithmetic::fresh(size_t t, size_t n) const {
    const model::RequestPass p = model::request_pass(t, n, chunk_);
    return of(int(t - p.begin), int(p.end - p.begin), model::flash_path_for(t, n));
}

bool CellArithmetic::reads_as_fresh(size_t keep, size_t n) const {
    const size_t end = model::request_pass(keep, n, chunk_).end;
    for (size_t t = end; t-- > keep;) {
        if (of(int(t - keep), int(end - keep), model::flash_path_for(t, n)) != fresh(t, n)) return false;
    }
    return true;
}

size_t CellArithmetic::reusable(const CachedCells& cells, std::span<const TokenId> prompt) const {
    if (prompt.empty()) return 0;
    size_t keep = 0;
    const size_t limit = std::min(cells.size(), prompt.size() - 1);
    while (keep < limit && cells.tokens[keep] == prompt[keep] && cells.arithmetic[keep] == fresh(keep, prompt.size())) {
        ++keep;
    }
    while (keep > 0 && !reads_as_fresh(keep, prompt.size())) --keep;
    return keep;
}

}  // namespace smolinfer
