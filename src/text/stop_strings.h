// Stop strings over streamed text: the text before the first stop string
// is released, the stop string never, not even its start while it could
// still be completing. Text that might begin a stop string is held back
// until it no longer can. Generation stops at the stop string that is
// completed first (of two completed by the same byte, the longer).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace smolinfer::text {

class StopStrings {
public:
    // Throws smolinfer::Error for an empty stop string.
    explicit StopStrings(std::vector<std::string> stops);

    bool empty() const { return stops_.empty(); }

    struct Result {
        std::string text;      // safe to emit now
        bool stopped = false;  // a stop string ended here; text is all that precedes it
    };
    // The next piece of streamed text. After a stop, push must not be called again.
    Result push(std::string_view piece);
    // End of the stream: whatever was held back (it turned out not to be a stop string).
    std::string finish();

private:
    std::vector<std::string> stops_;
    std::string held_;
};

}  // namespace smolinfer::text
