// Read-only bytes of a whole file: memory-mapped natively (the weights are
// used in place, never copied), or a buffer handed over by the caller (the
// browser build, tests). A model split into several files is one FileBytes
// of several parts (join), each mapped or handed over on its own.
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
    // The bytes of a single file; an Error for a joined one (use parts()).
    virtual std::span<const uint8_t> bytes() const = 0;
    // Each file's bytes, in order: {bytes()} for a single file.
    virtual std::vector<std::span<const uint8_t>> parts() const { return {bytes()}; }

    // Maps `path` read-only. Throws smolinfer::Error naming the path on failure.
    static std::shared_ptr<const FileBytes> map(const std::string& path);

    // Reads `path` into private memory (transparent huge pages where the
    // kernel gives them), read-only once read. Throws smolinfer::Error
    // naming the path (and the byte a read stopped at) on failure.
    static std::shared_ptr<const FileBytes> read(const std::string& path);

    // Takes ownership of a buffer already in memory.
    static std::shared_ptr<const FileBytes> adopt(std::vector<uint8_t> buffer);

    // Takes ownership of memory from malloc (freed with free). The browser
    // build streams a download straight into such a buffer.
    static std::shared_ptr<const FileBytes> adopt_malloc(uint8_t* data, size_t size);

    // The files of a split model, in order; keeps each alive.
    static std::shared_ptr<const FileBytes> join(std::vector<std::shared_ptr<const FileBytes>> parts);
};

}  // namespace smolinfer::runtime
