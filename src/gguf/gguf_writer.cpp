#include "gguf/gguf_writer.h"

#include <sstream>

namespace smolinfer::gguf {

void Writer::set_alignment(uint32_t a) {
    alignment_ = a;
    add_u32("general.alignment", a);
}

void Writer::add_tensor(const std::string& name, uint32_t type_id, std::vector<uint64_t> dims, std::vector<uint8_t> data) {
    tensors_.push_back({name, type_id, std::move(dims), data.size()});
    data_.push_back(std::move(data));
}

void Writer::write(std::ostream& out) const {
    const std::vector<uint8_t> head = encode_header(version_, *this, tensors_, alignment_);
    out.write(reinterpret_cast<const char*>(head.data()), std::streamsize(head.size()));
    const std::vector<char> pad(alignment_, 0);
    for (const std::vector<uint8_t>& d : data_) {
        out.write(reinterpret_cast<const char*>(d.data()), std::streamsize(d.size()));
        const uint64_t rest = encode::align_up(d.size(), alignment_) - d.size();
        out.write(pad.data(), std::streamsize(rest));
    }
}

std::vector<uint8_t> Writer::to_bytes() const {
    std::ostringstream ss;
    write(ss);
    const std::string s = ss.str();
    return {s.begin(), s.end()};
}

}  // namespace smolinfer::gguf
