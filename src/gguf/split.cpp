#include "gguf/split.h"

#include <cstdio>
#include <unordered_map>

#include "smolinfer/error.h"

namespace smolinfer::gguf {

namespace {

std::string part_label(size_t i, size_t n, std::span<const std::string> names) {
    std::string s = "part " + std::to_string(i + 1) + " of " + std::to_string(n);
    if (i < names.size()) s += " ('" + names[i] + "')";
    return s;
}

std::string split_suffix(uint32_t index, uint32_t count) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "-%05u-of-%05u.gguf", unsigned(index + 1), unsigned(count));
    return buf;
}

}  // namespace

std::optional<SplitKeys> split_keys(const Metadata& m) {
    const auto count = m.get_uint(kSplitCount);
    if (!count) return std::nullopt;
    SplitKeys k;
    if (*count < 1 || *count > kMaxSplitParts) {
        throw Error("bad GGUF metadata: split.count = " + std::to_string(*count) + " (1 to " +
                    std::to_string(kMaxSplitParts) + " parts)");
    }
    k.count = uint32_t(*count);
    const auto index = m.get_uint(kSplitNo);
    if (!index) throw Error("bad GGUF metadata: split.count is set but split.no is missing");
    if (*index >= k.count) {
        throw Error("bad GGUF metadata: split.no = " + std::to_string(*index) + " but split.count = " +
                    std::to_string(k.count));
    }
    k.index = uint32_t(*index);
    k.tensors = m.get_uint(kSplitTensorsCount);
    return k;
}

std::string split_part_path(std::string_view prefix, uint32_t index, uint32_t count) {
    return std::string(prefix) + split_suffix(index, count);
}

std::optional<std::string> split_prefix(std::string_view path, uint32_t index, uint32_t count) {
    const std::string suffix = split_suffix(index, count);
    if (path.size() <= suffix.size() || path.substr(path.size() - suffix.size()) != suffix) return std::nullopt;
    return std::string(path.substr(0, path.size() - suffix.size()));
}

File File::parse(std::span<const uint8_t> bytes) {
    File f = parse_part(bytes);
    const auto k = split_keys(f.metadata());
    if (k && k->count > 1) {
        throw Error("this file is part " + std::to_string(k->index + 1) + " of " + std::to_string(k->count) +
                    " of a split model (split.count = " + std::to_string(k->count) +
                    "): load the first part with all its parts beside it");
    }
    return f;
}

File File::parse_parts(std::span<const std::span<const uint8_t>> parts, std::span<const std::string> names) {
    if (parts.empty()) throw Error("no model file given");
    if (parts.size() == 1) {
        try {
            return parse(parts[0]);
        } catch (const Error& e) {
            throw Error(names.empty() ? std::string(e.what()) : names[0] + ": " + e.what());
        }
    }
    const size_t n = parts.size();
    File joined;
    std::optional<uint64_t> declared_tensors;
    for (size_t i = 0; i < n; ++i) {
        const std::string label = part_label(i, n, names);
        File f;
        std::optional<SplitKeys> k;
        try {
            f = parse_part(parts[i]);
            k = split_keys(f.metadata());
        } catch (const Error& e) {
            throw Error("split model, " + label + ": " + e.what());
        }
        if (!k) throw Error("split model, " + label + ": no split.count (not a part of a split model)");
        if (k->index != i) {
            throw Error("split model, " + label + ": split.no = " + std::to_string(k->index) + " (it is part " +
                        std::to_string(k->index + 1) + ", not part " + std::to_string(i + 1) + ")");
        }
        if (k->count != n) {
            throw Error("split model, " + label + ": split.count = " + std::to_string(k->count) + " but " +
                        std::to_string(n) + " parts are given");
        }
        if (i == 0) {
            if (!k->tensors) throw Error("split model, " + label + ": split.tensors.count is missing");
            declared_tensors = k->tensors;
            joined = std::move(f);
            for (auto& t : joined.tensors_) t.part = 0;
            continue;
        }
        joined.total_bytes_ += parts[i].size();
        for (auto& t : f.tensors_) {
            t.part = uint32_t(i);
            if (!joined.tensor_index_.emplace(t.name, joined.tensors_.size()).second) {
                throw Error("split model, " + label + ": tensor " + quoted(t.name) + " is also in " +
                            part_label(joined.find_tensor(t.name)->part, n, names));
            }
            joined.tensors_.push_back(std::move(t));
        }
    }
    if (joined.tensors_.size() != *declared_tensors) {
        throw Error("split model: split.tensors.count = " + std::to_string(*declared_tensors) + " but the " +
                    std::to_string(n) + " parts hold " + std::to_string(joined.tensors_.size()) + " tensors");
    }
    joined.part_count_ = n;
    return joined;
}

}  // namespace smolinfer::gguf
