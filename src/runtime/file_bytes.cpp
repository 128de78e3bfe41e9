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

// A mapping (of the file, or of anonymous memory the file was read into)
// of `mapped` bytes whose first `size` are the file's.
class MappedFile final : public FileBytes {
public:
    MappedFile(const uint8_t* data, size_t size, size_t mapped) : data_(data), size_(size), mapped_(mapped) {}
    ~MappedFile() override {
        if (mapped_ != 0) munmap(const_cast<uint8_t*>(data_), mapped_);
    }
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    std::span<const uint8_t> bytes() const override { return {data_, size_}; }

private:
    const uint8_t* data_;
    size_t size_;
    size_t mapped_;
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

// An open regular file and its size; throws naming the path.
struct OpenFile {
    int fd;
    size_t size;
};
OpenFile open_regular(const std::string& path) {
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
    return {fd, static_cast<size_t>(st.st_size)};
}

}  // namespace

std::shared_ptr<const FileBytes> FileBytes::map(const std::string& path) {
    const auto [fd, size] = open_regular(path);
    if (size == 0) {
        ::close(fd);
        return std::make_shared<MappedFile>(nullptr, 0, 0);
    }
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const std::string why = errno_text();
    ::close(fd);
    if (p == MAP_FAILED) {
        throw Error("cannot map '" + path + "' (" + std::to_string(size) + " bytes): " + why);
    }
    return std::make_shared<MappedFile>(static_cast<const uint8_t*>(p), size, size);
}

std::shared_ptr<const FileBytes> FileBytes::read(const std::string& path) {
    const auto [fd, size] = open_regular(path);
    if (size == 0) {
        ::close(fd);
        return std::make_shared<MappedFile>(nullptr, 0, 0);
    }
    // Whole 2 MiB pages, so that the kernel can back all of it with huge ones.
    constexpr size_t kHugePage = size_t(2) << 20;
    const size_t mapped = (size + kHugePage - 1) / kHugePage * kHugePage;
    void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        const std::string why = errno_text();
        ::close(fd);
        throw Error("cannot allocate " + std::to_string(size) + " bytes to read '" + path + "' into: " + why);
    }
#if defined(MADV_HUGEPAGE)
    ::madvise(p, mapped, MADV_HUGEPAGE);  // a hint: without transparent huge pages, 4 KiB pages
#endif
    auto* dst = static_cast<uint8_t*>(p);
    size_t done = 0;
    while (done < size) {
        const ssize_t got = ::pread(fd, dst + done, size - done, static_cast<off_t>(done));
        if (got > 0) {
            done += static_cast<size_t>(got);
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        const std::string why = got == 0 ? "the file ended (it is being written to?)" : errno_text();
        ::munmap(p, mapped);
        ::close(fd);
        throw Error("cannot read '" + path + "' at byte " + std::to_string(done) + " of " + std::to_string(size) + ": " + why);
    }
    ::close(fd);
    ::mprotect(p, mapped, PROT_READ);  // the weights are read-only, as when mapped
    return std::make_shared<MappedFile>(dst, size, mapped);
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
