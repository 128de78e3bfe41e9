#include "runtime/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "smolinfer/error.h"

namespace smolinfer::runtime {

namespace {

class MappedFile final : public FileBytes {
public:
    MappedFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    ~MappedFile() override {
        if (size_ != 0) munmap(const_cast<uint8_t*>(data_), size_);
    }
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    std::span<const uint8_t> bytes() const override { return {data_, size_}; }

private:
    const uint8_t* data_;
    size_t size_;
};

class OwnedBuffer final : public FileBytes {
public:
    explicit OwnedBuffer(std::vector<uint8_t> buffer) : buffer_(std::move(buffer)) {}
    std::span<const uint8_t> bytes() const override { return buffer_; }

private:
    std::vector<uint8_t> buffer_;
};

class MallocBuffer final : public FileBytes {
public:
    MallocBuffer(uint8_t* data, size_t size) : data_(data), size_(size) {}
    ~MallocBuffer() override { std::free(data_); }
    MallocBuffer(const MallocBuffer&) = delete;
    MallocBuffer& operator=(const MallocBuffer&) = delete;
    std::span<const uint8_t> bytes() const override { return {data_, size_}; }

private:
    uint8_t* data_;
    size_t size_;
};

class JoinedFiles final : public FileBytes {
public:
    explicit JoinedFiles(std::vector<std::shared_ptr<const FileBytes>> parts) : parts_(std::move(parts)) {}
    std::span<const uint8_t> bytes() const override {
        throw Error("a model in " + std::to_string(parts_.size()) + " files has no single byte range");
    }
    std::vector<std::span<const uint8_t>> parts() const override {
        std::vector<std::span<const uint8_t>> out;
        for (const auto& p : parts_) out.push_back(p->bytes());
        return out;
    }

private:
    std::vector<std::shared_ptr<const FileBytes>> parts_;
};

std::string errno_text() { return std::strerror(errno); }

}  // namespace

std::shared_ptr<const FileBytes> FileBytes::map(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        throw Error("cannot open '" + path + "': " + errno_text());
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const std::string why = errno_text();
        ::close(fd);
        throw Error("cannot stat '" + path + "': " + why);
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error("'" + path + "' is not a regular file");
    }
    const size_t size = static_cast<size_t>(st.st_size);
    if (size == 0) {
        ::close(fd);
        return std::make_shared<MappedFile>(nullptr, 0);
    }
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const std::string why = errno_text();
    ::close(fd);
    if (p == MAP_FAILED) {
        throw Error("cannot map '" + path + "' (" + std::to_string(size) + " bytes): " + why);
    }
    return std::make_shared<MappedFile>(static_cast<const uint8_t*>(p), size);
}

std::shared_ptr<const FileBytes> FileBytes::adopt(std::vector<uint8_t> buffer) {
    return std::make_shared<OwnedBuffer>(std::move(buffer));
}

std::shared_ptr<const FileBytes> FileBytes::adopt_malloc(uint8_t* data, size_t size) {
    return std::make_shared<MallocBuffer>(data, size);
}

std::shared_ptr<const FileBytes> FileBytes::join(std::vector<std::shared_ptr<const FileBytes>> parts) {
    if (parts.size() == 1) return parts[0];
    return std::make_shared<JoinedFiles>(std::move(parts));
}

}  // namespace smolinfer::runtime
