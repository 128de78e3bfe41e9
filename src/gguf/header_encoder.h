// The GGUF header as both writers lay it out: magic, version, counts, the
// metadata (metadata_encoder.h), tensor infos with data offsets computed
// from each tensor's size (every tensor padded to the alignment), zero
// padding up to the alignment where the data starts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/metadata_encoder.h"

namespace smolinfer::gguf {

struct TensorRecord {
    std::string name;
    uint32_t type_id = 0;        // written as given (tests write unknown ones on purpose)
    std::vector<uint64_t> dims;  // innermost first
    uint64_t n_bytes = 0;        // the tensor's data, before padding
};

std::vector<uint8_t> encode_header(uint32_t version, const MetadataEncoder& metadata,
                                   const std::vector<TensorRecord>& tensors, uint64_t alignment);

// encode_header(...).size() without building it.
uint64_t header_bytes(const MetadataEncoder& metadata, const std::vector<TensorRecord>& tensors, uint64_t alignment);

}  // namespace smolinfer::gguf
