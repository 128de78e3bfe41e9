// Read-only bytes of a whole file: memory-mapped natively (the weights are
// used in place, never copied), or a buffer handed over by the caller (the
// browser build, tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace smolinfer::runtime {

class FileBytes {
public:
    virtual ~FileBytes() = default;
    virtual std::span<const uint8_t> bytes() const = 0;

    // Maps `path` read-only. Throws smolinfer::Error naming the path on failure.
    static std::shared_ptr<const FileBytes> map(const std::string& path);

    // Takes ownership of a buffer already in memory.
    static std::shared_ptr<const FileBytes> adopt(std::vector<uint8_t> buffer);

    // Takes ownership of memory from malloc (freed with free). The browser
    // build streams a download straight into such a buffer.
    static std::shared_ptr<const FileBytes> adopt_malloc(uint8_t* data, size_t size);
};

}  // namespace smolinfer::runtime
