#include "gguf/gguf_writer.h"

#include <cstring>
#include <sstream>

namespace smolinfer::gguf {

namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

std::vector<uint8_t> tagged(ValueType t) {
    std::vector<uint8_t> v;
    put<uint32_t>(v, uint32_t(t));
    return v;
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

void Writer::add_kv(const std::string& key, std::vector<uint8_t> encoded) { kvs_.push_back({key, std::move(encoded)}); }

void Writer::add_u8(const std::string& key, uint8_t v) {
    auto e = tagged(ValueType::U8);
    put(e, v);
    add_kv(key, std::move(e));
}

void Writer::add_u32(const std::string& key, uint32_t v) {
    auto e = tagged(ValueType::U32);
    put(e, v);
    add_kv(key, std::move(e));
}

void Writer::add_i32(const std::string& key, int32_t v) {
    auto e = tagged(ValueType::I32);
    put(e, v);
    add_kv(key, std::move(e));
}

void Writer::add_u64(const std::string& key, uint64_t v) {
    auto e = tagged(ValueType::U64);
    put(e, v);
    add_kv(key, std::move(e));
}

void Writer::add_f32(const std::string& key, float v) {
    auto e = tagged(ValueType::F32);
    put(e, v);
    add_kv(key, std::move(e));
}

void Writer::add_bool(const std::string& key, bool v) {
    auto e = tagged(ValueType::Bool);
    put<uint8_t>(e, v ? 1 : 0);
    add_kv(key, std::move(e));
}

void Writer::add_string(const std::string& key, const std::string& v) {
    auto e = tagged(ValueType::String);
    put_string(e, v);
    add_kv(key, std::move(e));
}

void Writer::add_string_array(const std::string& key, const std::vector<std::string>& v) {
    auto e = tagged(ValueType::Array);
    put<uint32_t>(e, uint32_t(ValueType::String));
    put<uint64_t>(e, v.size());
    for (const auto& s : v) put_string(e, s);
    add_kv(key, std::move(e));
}

void Writer::add_i32_array(const std::string& key, const std::vector<int32_t>& v) {
    auto e = tagged(ValueType::Array);
    put<uint32_t>(e, uint32_t(ValueType::I32));
    put<uint64_t>(e, v.size());
    for (const int32_t x : v) put(e, x);
    add_kv(key, std::move(e));
}

void Writer::add_f32_array(const std::string& key, const std::vector<float>& v) {
    auto e = tagged(ValueType::Array);
    put<uint32_t>(e, uint32_t(ValueType::F32));
    put<uint64_t>(e, v.size());
    for (const float x : v) put(e, x);
    add_kv(key, std::move(e));
}

void Writer::set_alignment(uint32_t a) {
    alignment_ = a;
    add_u32("general.alignment", a);
}

void Writer::add_tensor(const std::string& name, uint32_t type_id, std::vector<uint64_t> dims, std::vector<uint8_t> data) {
    tensors_.push_back({name, type_id, std::move(dims), std::move(data)});
}

void Writer::write(std::ostream& out) const {
    std::vector<uint8_t> head;
    put<uint32_t>(head, 0x46554747);
    put<uint32_t>(head, version_);
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
        put<uint32_t>(head, t.type_id);
        put<uint64_t>(head, offset);
        offset = align_up(offset + t.data.size(), alignment_);
    }
    head.resize(align_up(head.size(), alignment_), 0);
    out.write(reinterpret_cast<const char*>(head.data()), std::streamsize(head.size()));
    const std::vector<char> pad(alignment_, 0);
    for (const Tensor& t : tensors_) {
        out.write(reinterpret_cast<const char*>(t.data.data()), std::streamsize(t.data.size()));
        const uint64_t rest = align_up(t.data.size(), alignment_) - t.data.size();
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
