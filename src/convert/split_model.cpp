#include "convert/split_model.h"

#include <memory>

#include "gguf/gguf_stream_writer.h"
#include "gguf/metadata_encoder.h"
#include "gguf/split.h"
#include "runtime/file_bytes.h"
#include "smolinfer/error.h"

namespace smolinfer::convert {

std::vector<std::vector<size_t>> plan_split(const gguf::File& in, const SplitOptions& opt) {
    if ((opt.max_tensors == 0) == (opt.max_bytes == 0)) {
        throw Error("split: give exactly one limit, tensors per part or bytes per part");
    }
    const auto& tensors = in.tensors();
    std::vector<std::vector<size_t>> parts(1);
    if (opt.no_tensor_first_split) parts.emplace_back();
    // As llama-gguf-split: a part ends before the tensor that would take it
    // past the limit (sizes padded to 32 bytes), or every max_tensors tensors.
    uint64_t part_bytes = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const uint64_t padded = gguf::encode::align_up(tensors[i].n_bytes, gguf::kDefaultAlignment);
        const bool cut = opt.max_bytes != 0 ? part_bytes + padded > opt.max_bytes
                                            : i > 0 && i % opt.max_tensors == 0;
        if (cut) {
            if (parts.back().empty()) {
                throw Error("split: tensor " + gguf::quoted(tensors[i].name) + " alone is larger than " +
                            std::to_string(opt.max_bytes) + " bytes (a part would hold no tensor)");
            }
            parts.emplace_back();
            part_bytes = padded;
        } else {
            part_bytes += padded;
        }
        parts.back().push_back(i);
    }
    if (parts.size() > gguf::kMaxSplitParts) {
        throw Error("split: " + std::to_string(parts.size()) + " parts (at most " +
                    std::to_string(gguf::kMaxSplitParts) + ")");
    }
    return parts;
}

std::vector<std::string> split_file(const std::string& in_path, const std::string& out_prefix, const SplitOptions& opt) {
    const auto bytes = runtime::FileBytes::map(in_path);
    gguf::File in;
    try {
        in = gguf::File::parse(bytes->bytes());
    } catch (const Error& e) {
        throw Error(in_path + ": " + e.what());
    }
    const auto plan = plan_split(in, opt);
    const auto n = uint32_t(plan.size());
    const auto n_tensors = int32_t(in.tensors().size());

    std::vector<std::string> paths;
    std::vector<std::unique_ptr<gguf::AtomicFileSink>> sinks;  // committed together at the end
    for (uint32_t p = 0; p < n; ++p) {
        gguf::StreamWriter w;
        if (p == 0) {
            for (const std::string& k : in.metadata().keys()) w.add_value(k, *in.metadata().find(k));
        }
        // llama-gguf-split's order: split.count is set last (after it knows the count).
        w.set_u16(gguf::kSplitNo, uint16_t(p));
        w.set_i32(gguf::kSplitTensorsCount, n_tensors);
        w.set_u16(gguf::kSplitCount, uint16_t(n));
        for (const size_t i : plan[p]) {
            const auto& t = in.tensors()[i];
            w.add_tensor(t.name, t.type(), std::span<const uint64_t>(t.ne.data(), size_t(t.n_dims)));
        }
        paths.push_back(gguf::split_part_path(out_prefix, p, n));
        sinks.push_back(std::make_unique<gguf::AtomicFileSink>(paths.back()));
        w.write_header(*sinks.back());
        for (const size_t i : plan[p]) {
            const auto& t = in.tensors()[i];
            w.write_data(*sinks.back(), {t.data, size_t(t.n_bytes)});
        }
        w.finish(*sinks.back());
    }
    for (auto& s : sinks) s->commit();
    return paths;
}

}  // namespace smolinfer::convert
