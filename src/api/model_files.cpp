#include "api/model_files.h"

#include <vector>

#include "gguf/gguf.h"
#include "gguf/split.h"
#include "smolinfer/error.h"

namespace smolinfer {

std::shared_ptr<const runtime::FileBytes> open_model_files(const std::string& path, bool map) {
    const auto open_one = [map](const std::string& name) {
        return map ? runtime::FileBytes::map(name) : runtime::FileBytes::read(name);
    };
    auto first = open_one(path);
    // Only the split keys matter here; the model is parsed in full later.
    const auto keys = gguf::split_keys(gguf::File::parse_part(first->bytes()).metadata());
    if (!keys || keys->count == 1) return first;
    const uint32_t n = keys->count;
    const std::string of_n = " of " + std::to_string(n) + " of a split model";
    if (keys->index != 0) {
        const auto prefix = gguf::split_prefix(path, keys->index, n);
        throw Error("this file is part " + std::to_string(keys->index + 1) + of_n + ": open its first part" +
                    (prefix ? ", '" + gguf::split_part_path(*prefix, 0, n) + "'" : std::string()));
    }
    const auto prefix = gguf::split_prefix(path, 0, n);
    if (!prefix) {
        throw Error("this file is part 1" + of_n + " but is not named '<name>" +
                    gguf::split_part_path("", 0, n) + "', so its other parts cannot be found");
    }
    std::vector<std::shared_ptr<const runtime::FileBytes>> parts{first};
    std::vector<std::span<const uint8_t>> spans{first->bytes()};
    std::vector<std::string> names{path};
    for (uint32_t i = 1; i < n; ++i) {
        names.push_back(gguf::split_part_path(*prefix, i, n));
        try {
            parts.push_back(open_one(names.back()));
        } catch (const Error& e) {
            throw Error("part " + std::to_string(i + 1) + of_n + " is missing: " + e.what());
        }
        spans.push_back(parts.back()->bytes());
    }
    gguf::File::parse_parts(spans, names);  // checks that the siblings belong together, naming them
    return runtime::FileBytes::join(std::move(parts));
}

}  // namespace smolinfer
