// Streams a GGUF v3 file into a byte sink: first the header (metadata, then
// tensor infos whose offsets are computed up front from each tensor's type
// and shape), then every tensor's data in declaration order, each padded to
// the alignment. Only the header is held in memory, so a converter can
// produce one tensor at a time, in pieces.
//
// AtomicFileSink puts the bytes under a temporary name next to the target and
// renames it onto the target only after everything is written, flushed and
// fsync'ed; on failure or destruction without commit() the temporary file is
// removed. Every write is checked: a full disk is an Error naming the target.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/header_encoder.h"
#include "gguf/metadata_encoder.h"
#include "quant/types.h"
#include "runtime/interrupt_cleanup.h"

namespace smolinfer::gguf {

// Where the bytes go. write() takes all n bytes or throws smolinfer::Error.
class ByteSink {
public:
    virtual ~ByteSink() = default;
    virtual void write(const uint8_t* data, size_t n) = 0;
};

// A sink that keeps everything in memory (tests, small files).
class MemorySink final : public ByteSink {
public:
    void write(const uint8_t* data, size_t n) override { bytes.insert(bytes.end(), data, data + n); }
    std::vector<uint8_t> bytes;
};

class AtomicFileSink final : public ByteSink {
public:
    // The system call that writes to the file descriptor (::write unless a
    // test substitutes one that fails, e.g. with ENOSPC after N bytes).
    using WriteFn = std::function<ssize_t(int fd, const void* data, size_t n)>;

    // Creates "<path>.tmp-<pid>" (exclusively). Throws smolinfer::Error naming
    // `path` when the directory does not exist or is not writable.
    explicit AtomicFileSink(std::string path, WriteFn write_fn = {});
    ~AtomicFileSink() override;
    AtomicFileSink(const AtomicFileSink&) = delete;
    AtomicFileSink& operator=(const AtomicFileSink&) = delete;

    void write(const uint8_t* data, size_t n) override;

    // Flushes, fsyncs, closes and renames the temporary file onto the target.
    // After a failure the temporary file is gone and the target untouched.
    void commit();

    // Removes the temporary file (idempotent; also done by the destructor
    // unless committed).
    void discard() noexcept;

    const std::string& path() const { return path_; }
    const std::string& temp_path() const { return temp_path_; }
    uint64_t bytes_written() const { return written_ + buffer_.size(); }

private:
    void flush_buffer();
    [[noreturn]] void fail(const std::string& what, int err);

    std::string path_;
    std::string temp_path_;
    std::unique_ptr<runtime::TempFileRegistration> interrupt_cleanup_;  // removes temp_path_ on Ctrl-C
    WriteFn write_fn_;
    int fd_ = -1;
    bool committed_ = false;
    uint64_t written_ = 0;  // bytes handed to the kernel
    std::vector<uint8_t> buffer_;
};

class StreamWriter : public MetadataEncoder {
public:
    // ---- metadata, in the order added: the add_*/set_*/remove/has of
    // MetadataEncoder (adding a key twice is an error; after write_header
    // the metadata is frozen).

    // ---- tensors, in file order. dims innermost first; the row length
    // dims[0] must be a multiple of the type's block size.
    void add_tensor(const std::string& name, quant::Type type, std::span<const uint64_t> dims);

    // "general.alignment" if present (checked when the header is written), else 32.
    uint64_t alignment() const;
    size_t tensor_count() const { return tensors_.size(); }
    uint64_t tensor_bytes(size_t i) const { return tensors_[i].n_bytes; }
    // Size of the header including the padding before the data.
    uint64_t header_bytes() const;
    // Size of the whole file.
    uint64_t total_bytes() const;

    // ---- writing: the header, then the tensors' bytes in order (any number
    // of write_data calls per tensor; the padding after a tensor is written
    // once its last byte is), then finish() checks that every byte came.
    void write_header(ByteSink& sink);
    void write_data(ByteSink& sink, std::span<const uint8_t> bytes);
    void finish(ByteSink& sink);

    // The tensor the next write_data bytes belong to (tensor_count() when all are done).
    size_t current_tensor() const { return current_; }

private:
    std::vector<TensorRecord> tensors_;
    bool header_written_ = false;
    size_t current_ = 0;
    uint64_t current_done_ = 0;
};

}  // namespace smolinfer::gguf
