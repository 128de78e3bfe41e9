// Writes GGUF v3 files in memory: metadata in insertion order (the typed
// add_* of MetadataEncoder, shared with StreamWriter), tensor infos, aligned
// tensor data. Used by the tests to craft files (valid and broken) and by
// tools that produce models.
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/header_encoder.h"
#include "gguf/metadata_encoder.h"

namespace smolinfer::gguf {

class Writer : public MetadataEncoder {
public:
    // Tensor data in the type's block layout; dims innermost first. The
    // type id is written as given (tests write unknown ones on purpose).
    void add_tensor(const std::string& name, uint32_t type_id, std::vector<uint64_t> dims, std::vector<uint8_t> data);

    void set_version(uint32_t v) { version_ = v; }
    // Also adds "general.alignment" (not checked: tests write odd ones).
    void set_alignment(uint32_t a);

    std::vector<uint8_t> to_bytes() const;
    void write(std::ostream& out) const;

private:
    uint32_t version_ = 3;
    uint64_t alignment_ = kDefaultAlignment;
    std::vector<TensorRecord> tensors_;
    std::vector<std::vector<uint8_t>> data_;  // one per tensor
};

}  // namespace smolinfer::gguf
