// Writes GGUF v3 files: metadata in insertion order, tensor infos, aligned
// tensor data. Used by the tests to craft files (valid and broken) and by
// tools that produce models.
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace smolinfer::gguf {

class Writer {
public:
    void add_u8(const std::string& key, uint8_t v);
    void add_u32(const std::string& key, uint32_t v);
    void add_i32(const std::string& key, int32_t v);
    void add_u64(const std::string& key, uint64_t v);
    void add_f32(const std::string& key, float v);
    void add_bool(const std::string& key, bool v);
    void add_string(const std::string& key, const std::string& v);
    void add_string_array(const std::string& key, const std::vector<std::string>& v);
    void add_i32_array(const std::string& key, const std::vector<int32_t>& v);
    void add_f32_array(const std::string& key, const std::vector<float>& v);

    // Tensor data in the type's block layout; dims innermost first. The
    // type id is written as given (tests write unknown ones on purpose).
    void add_tensor(const std::string& name, uint32_t type_id, std::vector<uint64_t> dims, std::vector<uint8_t> data);

    void set_version(uint32_t v) { version_ = v; }
    void set_alignment(uint32_t a);

    std::vector<uint8_t> to_bytes() const;
    void write(std::ostream& out) const;

private:
    struct Kv {
        std::string key;
        std::vector<uint8_t> encoded;  // type tag and value
    };
    struct Tensor {
        std::string name;
        uint32_t type_id;
        std::vector<uint64_t> dims;
        std::vector<uint8_t> data;
    };
    void add_kv(const std::string& key, std::vector<uint8_t> encoded);

    uint32_t version_ = 3;
    uint64_t alignment_ = kDefaultAlignment;
    std::vector<Kv> kvs_;
    std::vector<Tensor> tensors_;
};

}  // namespace smolinfer::gguf
