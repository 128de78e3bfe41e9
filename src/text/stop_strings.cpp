#include "text/stop_strings.h"

#include <algorithm>
#include <utility>

#include "smolinfer/error.h"

namespace smolinfer::text {

StopStrings::StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {
    for (size_t i = 0; i < stops_.size(); ++i) {
        if (stops_[i].empty()) throw Error("stop string " + std::to_string(i) + " is empty");
    }
}

StopStrings::Result StopStrings::push(std::string_view piece) {
    held_.append(piece);
    // The stop string that ends first (of two ending together, the longer):
    // the one a stream would meet first, however the text is split into
    // pieces. None can start in text already released: that text was
    // released because no stop string could start there.
    size_t first = std::string::npos, first_end = std::string::npos;
    for (const std::string& s : stops_) {
        const size_t at = held_.find(s);
        if (at == std::string::npos) continue;
        if (at + s.size() < first_end || (at + s.size() == first_end && at < first)) {
            first = at;
            first_end = at + s.size();
        }
    }
    if (first != std::string::npos) {
        Result r{held_.substr(0, first), true};
        held_.clear();
        return r;
    }
    // Hold back the longest tail of the text that is the start of a stop string.
    size_t keep = 0;
    for (const std::string& s : stops_) {
        for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
            if (std::string_view(held_).substr(held_.size() - n) == std::string_view(s).substr(0, n)) {
                keep = n;
                break;
            }
        }
    }
    Result r{held_.substr(0, held_.size() - keep), false};
    held_.erase(0, held_.size() - keep);
    return r;
}

std::string StopStrings::finish() { return std::exchange(held_, std::string()); }

}  // namespace smolinfer::text
