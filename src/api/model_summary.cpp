#include "api/model_summary.h"

#include <algorithm>
#include <map>
#include <vector>

#include "convert/tensor_type_choice.h"
#include "smolinfer/error.h"

namespace smolinfer {

namespace {

// llama.cpp's LLAMA_FTYPE_* numbers: the quantizer's mixes, plus the
// unquantized ones (general.file_type in files made by convert_hf_to_gguf).
std::string file_type_name(uint64_t ftype) {
    switch (ftype) {
        case 0: return "F32";
        case 1: return "F16";
        case 32: return "BF16";
        default: break;
    }
    for (const auto& m : convert::all_mixes()) {
        if (m.file_type == ftype) return std::string(m.name);
    }
    return "";
}

}  // namespace

ModelSummary summarize(const gguf::File& file, std::vector<std::string>* warnings) {
    ModelSummary s;
    std::map<std::string, int> counts;
    std::map<std::string, uint64_t> bytes;
    for (const auto& t : file.tensors()) {
        s.parameters += t.n_elements;
        const std::string name(t.traits.name);
        counts[name]++;
        bytes[name] += t.n_bytes;
    }
    std::vector<std::pair<int, std::string>> sorted;
    for (const auto& [name, n] : counts) sorted.emplace_back(-n, name);
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [neg, name] : sorted) {
        if (!s.weight_types.empty()) s.weight_types += ", ";
        s.weight_types += name + " x" + std::to_string(-neg);
    }
    uint64_t most = 0;
    for (const auto& [name, b] : bytes) {
        if (b > most) {
            most = b;
            s.dominant_type = name;
        }
    }
    // A malformed general.file_type only costs the name (llama.cpp runs such
    // a file too): said in a warning.
    try {
        if (const auto ft = file.metadata().get_uint("general.file_type")) s.file_type = file_type_name(*ft);
    } catch (const Error& e) {
        if (warnings) warnings->push_back(std::string("the file type is not shown: ") + e.what());
    }
    return s;
}

}  // namespace smolinfer
