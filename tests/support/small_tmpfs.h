// A tiny tmpfs mounted on a fresh directory, to make a real "disk full"
// (ENOSPC) or a read-only file system. Mounting needs root (CAP_SYS_ADMIN);
// where it is not allowed, mounted() is false and the caller skips (the
// disk-full path is also covered by an injected failing write).
#pragma once

#include <sys/mount.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace smolinfer::test {

class SmallTmpfs {
public:
    // size as mount(8) takes it ("256k"); read_only mounts it read-only.
    explicit SmallTmpfs(const std::string& size = "256k", bool read_only = false) {
        std::string tmpl = (std::filesystem::temp_directory_path() / "smolinfer-tmpfs-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) return;
        dir_ = tmpl;
        const std::string opts = "size=" + size + ",mode=0755";
        if (::mount("tmpfs", dir_.c_str(), "tmpfs", read_only ? MS_RDONLY : 0, opts.c_str()) != 0) {
            ::rmdir(dir_.c_str());
            return;
        }
        mounted_ = true;
    }
    ~SmallTmpfs() {
        if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
        if (!dir_.empty()) ::rmdir(dir_.c_str());
    }
    SmallTmpfs(const SmallTmpfs&) = delete;
    SmallTmpfs& operator=(const SmallTmpfs&) = delete;

    bool mounted() const { return mounted_; }
    const std::string& dir() const { return dir_; }

    // Names of the entries in the directory (to check that nothing was left).
    std::string listing() const {
        std::string s;
        for (const auto& e : std::filesystem::directory_iterator(dir_)) s += e.path().filename().string() + " ";
        return s;
    }

private:
    std::string dir_;
    bool mounted_ = false;
};

}  // namespace smolinfer::test
