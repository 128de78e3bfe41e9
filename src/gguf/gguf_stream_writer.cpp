#include "gguf/gguf_stream_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "smolinfer/error.h"

namespace smolinfer::gguf {

namespace {

constexpr size_t kBufferBytes = size_t(1) << 20;

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

// ------------------------------------------------------------------ AtomicFileSink

AtomicFileSink::AtomicFileSink(std::string path, WriteFn write_fn)
    : path_(std::move(path)), write_fn_(std::move(write_fn)) {
    if (!write_fn_) write_fn_ = [](int fd, const void* p, size_t n) { return ::write(fd, p, n); };
    temp_path_ = path_ + ".tmp-" + std::to_string(::getpid());
    for (int attempt = 0; attempt < 2; ++attempt) {
        fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd_ >= 0) break;
        // A leftover of an earlier process with the same id: it is not anyone's file now.
        if (errno != EEXIST || attempt > 0 || ::unlink(temp_path_.c_str()) != 0) {
            const int err = errno;
            throw Error("cannot write '" + path_ + "': " + errno_text(err));
        }
    }
    interrupt_cleanup_ = std::make_unique<runtime::TempFileRegistration>(temp_path_);
    buffer_.reserve(kBufferBytes);
}

AtomicFileSink::~AtomicFileSink() { discard(); }

void AtomicFileSink::discard() noexcept {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    if (!committed_ && !temp_path_.empty()) {
        ::unlink(temp_path_.c_str());
        temp_path_.clear();
    }
    interrupt_cleanup_.reset();
    buffer_.clear();
}

void AtomicFileSink::fail(const std::string& what, int err) {
    const uint64_t at = written_;
    discard();
    throw Error("cannot write '" + path_ + "': " + what + errno_text(err) + " (after " + std::to_string(at) +
                " bytes; nothing was written under that name)");
}

void AtomicFileSink::flush_buffer() {
    if (fd_ < 0) throw Error("cannot write '" + path_ + "': the file is already closed");
    size_t done = 0;
    while (done < buffer_.size()) {
        const ssize_t r = write_fn_(fd_, buffer_.data() + done, buffer_.size() - done);
        if (r < 0) {
            if (errno == EINTR) continue;
            fail("", errno);
        }
        if (r == 0) fail("", ENOSPC);  // a write that makes no progress
        done += size_t(r);
        written_ += uint64_t(r);
    }
    buffer_.clear();
}

void AtomicFileSink::write(const uint8_t* data, size_t n) {
    while (n > 0) {
        const size_t take = std::min(n, kBufferBytes - buffer_.size());
        buffer_.insert(buffer_.end(), data, data + take);
        data += take;
        n -= take;
        if (buffer_.size() == kBufferBytes) flush_buffer();
    }
}

void AtomicFileSink::commit() {
    flush_buffer();
    if (::fsync(fd_) != 0) fail("fsync: ", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("close: ", errno);
    if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("rename: ", errno);
    committed_ = true;
    // Make the rename itself durable; a failure here leaves a complete file.
    const size_t slash = path_.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

// ------------------------------------------------------------------ StreamWriter

void StreamWriter::add_tensor(const std::string& name, quant::Type type, std::span<const uint64_t> dims) {
    if (header_written_) throw Error("GGUF writer: tensor " + quoted(name) + " added after the header was written");
    const auto& tr = quant::traits(type);
    if (dims.empty() || dims.size() > size_t(kMaxDims)) {
        throw Error("GGUF writer: tensor " + quoted(name) + " has " + std::to_string(dims.size()) + " dimensions");
    }
    uint64_t n = 1;
    for (const uint64_t d : dims) {
        if (d == 0) throw Error("GGUF writer: tensor " + quoted(name) + " has a zero dimension");
        n *= d;
    }
    if (dims[0] % tr.block_elems != 0) {
        throw Error("GGUF writer: tensor " + quoted(name) + " has rows of " + std::to_string(dims[0]) +
                    " values, not a multiple of the " + std::string(tr.name) + " block size " +
                    std::to_string(tr.block_elems));
    }
    for (const TensorRecord& t : tensors_) {
        if (t.name == name) throw Error("GGUF writer: duplicate tensor " + quoted(name));
    }
    tensors_.push_back({name, uint32_t(type), {dims.begin(), dims.end()}, n / tr.block_elems * tr.block_bytes});
}

uint64_t StreamWriter::alignment() const { return MetadataEncoder::alignment().value_or(kDefaultAlignment); }

uint64_t StreamWriter::header_bytes() const { return gguf::header_bytes(*this, tensors_, alignment()); }

uint64_t StreamWriter::total_bytes() const {
    const uint64_t align = alignment();
    uint64_t n = header_bytes();
    for (const TensorRecord& t : tensors_) n += encode::align_up(t.n_bytes, align);
    return n;
}

void StreamWriter::write_header(ByteSink& sink) {
    if (header_written_) throw Error("GGUF writer: header written twice");
    const std::vector<uint8_t> head = encode_header(3, *this, tensors_, alignment());
    sink.write(head.data(), head.size());
    header_written_ = true;
    freeze();
    current_ = 0;
    current_done_ = 0;
}

void StreamWriter::write_data(ByteSink& sink, std::span<const uint8_t> bytes) {
    if (!header_written_) throw Error("GGUF writer: tensor data before the header");
    const uint64_t align = alignment();
    while (!bytes.empty()) {
        if (current_ >= tensors_.size()) {
            throw Error("GGUF writer: " + std::to_string(bytes.size()) + " bytes of tensor data past the last tensor");
        }
        const TensorRecord& t = tensors_[current_];
        const size_t take = size_t(std::min<uint64_t>(bytes.size(), t.n_bytes - current_done_));
        sink.write(bytes.data(), take);
        bytes = bytes.subspan(take);
        current_done_ += take;
        if (current_done_ == t.n_bytes) {
            static const uint8_t zeros[256] = {};
            uint64_t pad = encode::align_up(t.n_bytes, align) - t.n_bytes;
            while (pad > 0) {
                const size_t k = size_t(std::min<uint64_t>(pad, sizeof zeros));
                sink.write(zeros, k);
                pad -= k;
            }
            ++current_;
            current_done_ = 0;
        }
    }
}

void StreamWriter::finish(ByteSink&) {
    if (!header_written_) throw Error("GGUF writer: finished before the header was written");
    if (current_ != tensors_.size()) {
        throw Error("GGUF writer: tensor " + quoted(tensors_[current_].name) + " got " + std::to_string(current_done_) +
                    " of its " + std::to_string(tensors_[current_].n_bytes) + " bytes");
    }
}

}  // namespace smolinfer::gguf
