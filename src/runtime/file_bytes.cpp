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

}  // namespace smolinfer::runtime
