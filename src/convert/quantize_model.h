// `smolinfer quantize`: a GGUF model converted to one of llama.cpp's type
// mixes (see tensor_type_choice.h for which tensor gets which type).
//
// The output keeps the input's metadata in order (without any split keys),
// with general.quantization_version = 2 and general.file_type = the mix's
// llama.cpp number moved to the end, exactly as llama-quantize writes them;
// the tensors keep the input's order and alignment. A tensor whose type does
// not change is copied byte for byte; the others are dequantized a row at a
// time to float and quantized again: one float row per thread and a few MB
// of output are all the converter holds (the input is memory-mapped). Same
// input, same bytes, whatever the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "convert/tensor_type_choice.h"
#include "gguf/gguf.h"
#include "gguf/gguf_stream_writer.h"

namespace smolinfer::convert {

struct TensorProgress {
    size_t index = 0;  // 0-based, in file order
    size_t count = 0;
    const gguf::TensorInfo* tensor = nullptr;
    quant::Type to = quant::Type::F32;
    bool copied = false;  // same type in and out: the bytes are copied
};

struct QuantizeOptions {
    Mix mix = Mix::Q8_0;
    int threads = 1;
    // Called before each tensor is written.
    std::function<void(const TensorProgress&)> on_tensor;
    // One-line warnings (requantizing already quantized weights).
    std::function<void(const std::string&)> on_warning;
    // The output file's write system call (tests make it fail).
    gguf::AtomicFileSink::WriteFn write_fn;
};

struct QuantizeResult {
    size_t n_tensors = 0;
    size_t n_converted = 0;    // written in a new type
    size_t n_requantized = 0;  // of those, from one block-quantized type to another
    size_t n_fallback = 0;     // got a fallback type (row length vs block size)
    uint64_t n_elements = 0;   // weights in all tensors
    uint64_t in_tensor_bytes = 0;
    uint64_t out_tensor_bytes = 0;
    uint64_t in_file_bytes = 0;
    uint64_t out_file_bytes = 0;
};

// Whether this build's quantizers produce the mix's main type (the K-quant
// mixes need their K-quant), and the names of those that do.
bool mix_supported(Mix mix);
std::string supported_mix_names();

// The choice for every tensor of `in`, in file order. Throws smolinfer::Error
// when a chosen type cannot be produced.
std::vector<TensorChoice> plan_quantization(const gguf::File& in, Mix mix);

// Writes the converted model into `sink`: header first, then each tensor.
QuantizeResult quantize_gguf(const gguf::File& in, gguf::ByteSink& sink, const QuantizeOptions& options);

// IN -> OUT on disk. OUT appears (or is replaced) only once complete; on any
// error, including a full disk, nothing is left under OUT or the temporary
// name, and the smolinfer::Error names the path.
QuantizeResult quantize_file(const std::string& in_path, const std::string& out_path, const QuantizeOptions& options);

}  // namespace smolinfer::convert
