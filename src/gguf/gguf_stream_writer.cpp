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

constexpr uint32_t kMagic = 0x46554747;  // "GGUF"
constexpr size_t kBufferBytes = size_t(1) << 20;

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

std::vector<uint8_t> tagged(ValueType t) {
    std::vector<uint8_t> v;
    put<uint32_t>(v, uint32_t(t));
    return v;
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

size_t element_bytes(ValueType t) {
    switch (t) {
        case ValueType::U8:
        case ValueType::I8:
        case ValueType::Bool: return 1;
        case ValueType::U16:
        case ValueType::I16: return 2;
        case ValueType::U32:
        case ValueType::I32:
        case ValueType::F32: return 4;
        case ValueType::U64:
        case ValueType::I64:
        case ValueType::F64: return 8;
        case ValueType::String:
        case ValueType::Array: break;
    }
    return 0;
}

void put_scalar(std::vector<uint8_t>& e, ValueType t, const Scalar& s, const std::string& key) {
    try {
        switch (t) {
            case ValueType::U8: put<uint8_t>(e, uint8_t(std::get<uint64_t>(s))); return;
            case ValueType::I8: put<int8_t>(e, int8_t(std::get<int64_t>(s))); return;
            case ValueType::U16: put<uint16_t>(e, uint16_t(std::get<uint64_t>(s))); return;
            case ValueType::I16: put<int16_t>(e, int16_t(std::get<int64_t>(s))); return;
            case ValueType::U32: put<uint32_t>(e, uint32_t(std::get<uint64_t>(s))); return;
            case ValueType::I32: put<int32_t>(e, int32_t(std::get<int64_t>(s))); return;
            case ValueType::U64: put<uint64_t>(e, std::get<uint64_t>(s)); return;
            case ValueType::I64: put<int64_t>(e, std::get<int64_t>(s)); return;
            case ValueType::F32: put<float>(e, float(std::get<double>(s))); return;  // widened exactly when read
            case ValueType::F64: put<double>(e, std::get<double>(s)); return;
            case ValueType::Bool: put<uint8_t>(e, std::get<bool>(s) ? 1 : 0); return;
            case ValueType::String: put_string(e, std::get<std::string_view>(s)); return;
            case ValueType::Array: break;
        }
    } catch (const std::bad_variant_access&) {
    }
    throw Error("GGUF writer: metadata " + quoted(key) + " holds a value that does not match its type " +
                std::string(value_type_name(t)));
}

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

void StreamWriter::add_kv(const std::string& key, std::vector<uint8_t> encoded) {
    if (header_written_) throw Error("GGUF writer: metadata " + quoted(key) + " added after the header was written");
    if (has(key)) throw Error("GGUF writer: duplicate metadata key " + quoted(key));
    kvs_.push_back({key, std::move(encoded)});
}

bool StreamWriter::has(const std::string& key) const {
    return std::any_of(kvs_.begin(), kvs_.end(), [&](const Kv& kv) { return kv.key == key; });
}

bool StreamWriter::remove(const std::string& key) {
    const auto it = std::find_if(kvs_.begin(), kvs_.end(), [&](const Kv& kv) { return kv.key == key; });
    if (it == kvs_.end()) return false;
    kvs_.erase(it);
    return true;
}

void StreamWriter::add_u8(const std::string& key, uint8_t v) {
    auto e = tagged(ValueType::U8);
    put(e, v);
    add_kv(key, std::move(e));
}

void StreamWriter::add_u32(const std::string& key, uint32_t v) {
    auto e = tagged(ValueType::U32);
    put(e, v);
    add_kv(key, std::move(e));
}

void StreamWriter::add_i32(const std::string& key, int32_t v) {
    auto e = tagged(ValueType::I32);
    put(e, v);
    add_kv(key, std::move(e));
}

void StreamWriter::add_u64(const std::string& key, uint64_t v) {
    auto e = tagged(ValueType::U64);
    put(e, v);
    add_kv(key, std::move(e));
}

void StreamWriter::add_f32(const std::string& key, float v) {
    auto e = tagged(ValueType::F32);
    put(e, v);
    add_kv(key, std::move(e));
}

void StreamWriter::add_bool(const std::string& key, bool v) {
    auto e = tagged(ValueType::Bool);
    put<uint8_t>(e, v ? 1 : 0);
    add_kv(key, std::move(e));
}

void StreamWriter::add_string(const std::string& key, const std::string& v) {
    auto e = tagged(ValueType::String);
    put_string(e, v);
    add_kv(key, std::move(e));
}

void StreamWriter::set_u32(const std::string& key, uint32_t v) {
    remove(key);
    add_u32(key, v);
}

void StreamWriter::add_value(const std::string& key, const Value& v) {
    auto e = tagged(v.type);
    if (v.type != ValueType::Array) {
        put_scalar(e, v.type, v.scalar, key);
        add_kv(key, std::move(e));
        return;
    }
    put<uint32_t>(e, uint32_t(v.elem_type));
    put<uint64_t>(e, v.count);
    if (v.elem_type == ValueType::String) {
        if (v.strings.size() != v.count) {
            throw Error("GGUF writer: array " + quoted(key) + " has " + std::to_string(v.strings.size()) +
                        " strings but claims " + std::to_string(v.count));
        }
        for (const std::string_view s : v.strings) put_string(e, s);
    } else {
        const size_t eb = element_bytes(v.elem_type);
        if (eb == 0 || v.raw.size() != v.count * eb) {
            throw Error("GGUF writer: array " + quoted(key) + " of " + std::string(value_type_name(v.elem_type)) +
                        " cannot be written (" + std::to_string(v.raw.size()) + " bytes for " +
                        std::to_string(v.count) + " elements)");
        }
        e.insert(e.end(), v.raw.begin(), v.raw.end());
    }
    add_kv(key, std::move(e));
}

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
    for (const Tensor& t : tensors_) {
        if (t.name == name) throw Error("GGUF writer: duplicate tensor " + quoted(name));
    }
    tensors_.push_back({name, type, {dims.begin(), dims.end()}, n / tr.block_elems * tr.block_bytes});
}

uint64_t StreamWriter::alignment() const {
    for (const Kv& kv : kvs_) {
        if (kv.key != "general.alignment") continue;
        uint32_t tag = 0, a = 0;
        if (kv.encoded.size() == 8) {
            std::memcpy(&tag, kv.encoded.data(), 4);
            std::memcpy(&a, kv.encoded.data() + 4, 4);
        }
        if (tag != uint32_t(ValueType::U32) || a == 0 || (a & (a - 1)) != 0) {
            throw Error("GGUF writer: general.alignment must be a uint32 power of two");
        }
        return a;
    }
    return kDefaultAlignment;
}

std::vector<uint8_t> StreamWriter::encode_header(uint64_t align) const {
    std::vector<uint8_t> head;
    put<uint32_t>(head, kMagic);
    put<uint32_t>(head, 3);
    put<uint64_t>(head, tensors_.size());
    put<uint64_t>(head, kvs_.size());
    for (const Kv& kv : kvs_) {
        put_string(head, kv.key);
        head.insert(head.end(), kv.encoded.begin(), kv.encoded.end());
    }
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
        put_string(head, t.name);
        put<uint32_t>(head, uint32_t(t.dims.size()));
        for (const uint64_t d : t.dims) put<uint64_t>(head, d);
        put<uint32_t>(head, uint32_t(t.type));
        put<uint64_t>(head, offset);
        offset = align_up(offset + t.n_bytes, align);
    }
    head.resize(align_up(head.size(), align), 0);
    return head;
}

uint64_t StreamWriter::header_bytes() const {
    const uint64_t align = alignment();
    uint64_t n = 24;
    for (const Kv& kv : kvs_) n += 8 + kv.key.size() + kv.encoded.size();
    for (const Tensor& t : tensors_) n += 8 + t.name.size() + 4 + 8 * t.dims.size() + 4 + 8;
    return align_up(n, align);
}

uint64_t StreamWriter::total_bytes() const {
    const uint64_t align = alignment();
    uint64_t n = header_bytes();
    for (const Tensor& t : tensors_) n += align_up(t.n_bytes, align);
    return n;
}

void StreamWriter::write_header(ByteSink& sink) {
    if (header_written_) throw Error("GGUF writer: header written twice");
    const std::vector<uint8_t> head = encode_header(alignment());
    sink.write(head.data(), head.size());
    header_written_ = true;
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
        const Tensor& t = tensors_[current_];
        const size_t take = size_t(std::min<uint64_t>(bytes.size(), t.n_bytes - current_done_));
        sink.write(bytes.data(), take);
        bytes = bytes.subspan(take);
        current_done_ += take;
        if (current_done_ == t.n_bytes) {
            static const uint8_t zeros[256] = {};
            uint64_t pad = align_up(t.n_bytes, align) - t.n_bytes;
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
