#include "grammar/gbnf_repetition.h"

namespace smolinfer::grammar {

std::string gbnf_repetition(const std::string& item, int min, int max, const std::string& separator) {
    const bool bounded = max != kNoMaxCount;
    if (max == 0) return "";
    if (min == 0 && max == 1) return item + "?";
    if (separator.empty()) {
        if (min == 1 && !bounded) return item + "+";
        if (min == 0 && !bounded) return item + "*";
        return item + "{" + std::to_string(min) + "," + (bounded ? std::to_string(max) : "") + "}";
    }
    // The first item, then (separator item) for each further one.
    std::string out = item + " " +
                      gbnf_repetition("(" + separator + " " + item + ")", min == 0 ? 0 : min - 1,
                                      bounded ? max - 1 : max, "");
    if (min == 0) out = "(" + out + ")?";
    return out;
}

}  // namespace smolinfer::grammar
