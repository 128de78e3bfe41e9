#include "convert/quantize_model.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "quant/quantize_ref.h"
#include "quant/reference.h"
#include "runtime/file_bytes.h"
#include "runtime/thread_pool.h"
#include "smolinfer/error.h"

namespace smolinfer::convert {

using quant::Type;

namespace {

// Output bytes converted per step; the float rows in flight are one per thread.
constexpr size_t kSlabBytes = size_t(4) << 20;

bool is_float_type(Type t) { return t == Type::F32 || t == Type::F16 || t == Type::BF16; }

void quantize_row_to(Type to, const float* x, void* dst, size_t n) {
    switch (to) {
        case Type::F32: quant::ref::quantize_row_f32(x, dst, n); return;
        case Type::F16: quant::ref::quantize_row_f16(x, dst, n); return;
        case Type::BF16: quant::ref::quantize_row_bf16(x, dst, n); return;
        default: quant::ref::quantize_row(to, x, dst, n); return;
    }
}

// Metadata llama-quantize does not carry over as is: it rewrites these two
// at the end, and drops the split keys (the output is one file).
bool rewritten_key(const std::string& key) {
    return key == "general.quantization_version" || key == "general.file_type" || key == "split.no" ||
           key == "split.count" || key == "split.tensors.count";
}

// Converts one tensor, a slab of rows at a time.
void convert_tensor(const gguf::TensorInfo& t, Type to, runtime::ThreadPool& pool, gguf::StreamWriter& w,
                    gguf::ByteSink& sink) {
    const size_t n = size_t(t.ne[0]);
    const size_t rows = size_t(t.rows());
    const size_t in_row = quant::row_bytes(t.traits, n);
    const size_t out_row = quant::row_bytes(quant::traits(to), n);
    const size_t slab_rows = std::clamp<size_t>(kSlabBytes / out_row, 1, rows);
    std::vector<uint8_t> out(slab_rows * out_row);
    const int nt = pool.size();
    std::vector<std::vector<float>> scratch(static_cast<size_t>(nt), std::vector<float>(n));
    std::atomic<size_t> bad_row{std::numeric_limits<size_t>::max()};

    for (size_t r0 = 0; r0 < rows; r0 += slab_rows) {
        const size_t count = std::min(slab_rows, rows - r0);
        pool.run([&](int ti, int n_threads) {
            const size_t begin = count * size_t(ti) / size_t(n_threads);
            const size_t end = count * size_t(ti + 1) / size_t(n_threads);
            float* x = scratch[size_t(ti)].data();
            for (size_t r = begin; r < end; ++r) {
                quant::ref::dequantize_row(t.type(), t.data + (r0 + r) * in_row, x, n);
                bool finite = true;
                for (size_t k = 0; k < n; ++k) finite = finite && std::isfinite(x[k]);
                if (!finite) {
                    size_t expected = std::numeric_limits<size_t>::max();
                    bad_row.compare_exchange_strong(expected, r0 + r);
                    continue;
                }
                quantize_row_to(to, x, out.data() + r * out_row, n);
            }
        });
        if (bad_row.load() != std::numeric_limits<size_t>::max()) {
            throw Error("tensor " + gguf::quoted(t.name) + " row " + std::to_string(bad_row.load()) +
                        " holds a NaN or infinite weight; it cannot be quantized");
        }
        w.write_data(sink, {out.data(), count * out_row});
    }
}

}  // namespace

bool mix_supported(Mix mix) {
    const Type t = mix_info(mix).default_type;
    return is_float_type(t) || quant::ref::can_quantize(t);
}

std::string supported_mix_names() {
    std::string s;
    for (const auto& m : all_mixes()) {
        if (!mix_supported(m.mix)) continue;
        if (!s.empty()) s += ", ";
        s += m.name;
    }
    return s;
}

std::vector<TensorChoice> plan_quantization(const gguf::File& in, Mix mix) {
    std::vector<TensorDesc> descs;
    descs.reserve(in.tensors().size());
    for (const auto& t : in.tensors()) descs.push_back({t.name, t.type(), t.ne});
    std::vector<TensorChoice> choices = choose_tensor_types(descs, ModelShape::from_file(in), mix);
    for (size_t i = 0; i < choices.size(); ++i) {
        const Type to = choices[i].type;
        if (to == descs[i].type || is_float_type(to) || quant::ref::can_quantize(to)) continue;
        throw Error(std::string(mix_info(mix).name) + " needs " + std::string(quant::traits(to).name) +
                    " for tensor " + gguf::quoted(descs[i].name) + ", which this quantizer cannot produce");
    }
    return choices;
}

QuantizeResult quantize_gguf(const gguf::File& in, gguf::ByteSink& sink, const QuantizeOptions& opt) {
    const std::vector<TensorChoice> choices = plan_quantization(in, opt.mix);
    const MixInfo& mix = mix_info(opt.mix);

    gguf::StreamWriter w;
    const gguf::Metadata& md = in.metadata();
    for (const std::string& key : md.keys()) {
        if (!rewritten_key(key)) w.add_value(key, *md.find(key));
    }
    w.add_u32("general.quantization_version", 2);
    w.add_u32("general.file_type", mix.file_type);

    QuantizeResult res;
    const auto& tensors = in.tensors();
    res.n_tensors = tensors.size();
    Type requant_from = Type::F32;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto& t = tensors[i];
        const Type to = choices[i].type;
        w.add_tensor(t.name, to, std::span<const uint64_t>(t.ne.data(), size_t(t.n_dims)));
        res.n_elements += t.n_elements;
        res.in_tensor_bytes += t.n_bytes;
        res.out_tensor_bytes += w.tensor_bytes(i);
        if (to != t.type()) {
            ++res.n_converted;
            // Quantized weights quantized again lose twice; widening them to a float type loses nothing.
            if (!is_float_type(t.type()) && !is_float_type(to)) {
                if (res.n_requantized++ == 0) requant_from = t.type();
            }
        }
        if (choices[i].fallback) ++res.n_fallback;
    }
    res.in_file_bytes = in.bytes().size();
    res.out_file_bytes = w.total_bytes();

    if (res.n_requantized > 0 && opt.on_warning) {
        opt.on_warning("requantizing " + std::to_string(res.n_requantized) + " tensors that are already quantized (" +
                       std::string(quant::traits(requant_from).name) + "...) to " + std::string(mix.name) +
                       ": quality is lost compared with quantizing from F32, F16 or BF16 weights");
    }

    w.write_header(sink);
    runtime::ThreadPool pool(std::max(1, opt.threads));
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto& t = tensors[i];
        const Type to = choices[i].type;
        const bool copy = to == t.type();
        if (opt.on_tensor) opt.on_tensor({i, tensors.size(), &t, to, copy});
        if (copy) {
            w.write_data(sink, {t.data, size_t(t.n_bytes)});
        } else {
            convert_tensor(t, to, pool, w, sink);
        }
    }
    w.finish(sink);
    return res;
}

QuantizeResult quantize_file(const std::string& in_path, const std::string& out_path, const QuantizeOptions& opt) {
    auto bytes = runtime::FileBytes::map(in_path);
    gguf::File in;
    try {
        in = gguf::File::parse(bytes->bytes());
    } catch (const Error& e) {
        throw Error(in_path + ": " + e.what());
    }

    struct stat in_st {}, out_st {};
    if (::stat(in_path.c_str(), &in_st) == 0 && ::stat(out_path.c_str(), &out_st) == 0) {
        if (in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino) {
            throw Error("output '" + out_path + "' is the input file; write the quantized model under another name");
        }
        if (S_ISDIR(out_st.st_mode)) throw Error("output '" + out_path + "' is a directory");
    }
    plan_quantization(in, opt.mix);  // fail on an impossible type before creating anything

    gguf::AtomicFileSink sink(out_path, opt.write_fn);
    QuantizeResult res = quantize_gguf(in, sink, opt);
    sink.commit();
    return res;
}

}  // namespace smolinfer::convert
