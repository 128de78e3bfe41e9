#include "gguf/header_encoder.h"

#include "gguf/gguf.h"

namespace smolinfer::gguf {

std::vector<uint8_t> encode_header(uint32_t version, const MetadataEncoder& metadata,
                                   const std::vector<TensorRecord>& tensors, uint64_t alignment) {
    using encode::put;
    std::vector<uint8_t> head;
    head.reserve(size_t(header_bytes(metadata, tensors, alignment)));
    put<uint32_t>(head, kMagic);
    put<uint32_t>(head, version);
    put<uint64_t>(head, tensors.size());
    put<uint64_t>(head, metadata.count());
    metadata.append_to(head);
    uint64_t offset = 0;
    for (const TensorRecord& t : tensors) {
        encode::put_string(head, t.name);
        put<uint32_t>(head, uint32_t(t.dims.size()));
        for (const uint64_t d : t.dims) put<uint64_t>(head, d);
        put<uint32_t>(head, t.type_id);
        put<uint64_t>(head, offset);
        offset = encode::align_up(offset + t.n_bytes, alignment);
    }
    head.resize(encode::align_up(head.size(), alignment), 0);
    return head;
}

uint64_t header_bytes(const MetadataEncoder& metadata, const std::vector<TensorRecord>& tensors, uint64_t alignment) {
    uint64_t n = 24 + metadata.encoded_bytes();
    for (const TensorRecord& t : tensors) n += 8 + t.name.size() + 4 + 8 * t.dims.size() + 4 + 8;
    return encode::align_up(n, alignment);
}

}  // namespace smolinfer::gguf
