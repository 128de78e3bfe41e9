// Which type each tensor gets when a model is quantized to a "mix" (the TYPE
// of `smolinfer quantize`), following llama.cpp's llama-quantize rules
// (src/llama-quant.cpp: tensor_allows_quantization, llama_tensor_get_type_impl,
// tensor_type_fallback), so that our files have exactly the tensor types and
// file type llama.cpp gives the same model:
//
// - only weights of 2 or more dimensions whose names end in "weight" are
//   converted; norms ("_norm.weight") and 1-D tensors keep their type;
// - the output matrix (and the token embedding when it doubles as the output,
//   i.e. there is no output.weight) gets Q6_K, or Q8_0 when the mix is Q8_0
//   or its rows do not fit the mix's block size;
// - in the _M mixes, attn_v and ffn_down of the layers use_more_bits() picks
//   get Q6_K; Q4_K_S gives the first 4 attn_v and the first n/8 ffn_down Q5_K;
//   the Q2_K/Q3_K mixes raise attn_v/ffn_down/attn_output as llama.cpp does;
// - a K-quant whose block (256) does not divide the row length falls back to
//   a 32-block type: Q2_K/Q3_K -> Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1,
//   Q6_K -> Q8_0; a row that 32 does not divide either gets F16.
//
// The rules read only names, shapes and a few hyperparameters, so they are
// checked against llama.cpp's choices on SmolLM2's shapes without the model.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quant/types.h"

namespace smolinfer::gguf {
class File;
}

namespace smolinfer::convert {

enum class Mix {
    F32,
    F16,
    BF16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2_K,
    Q3_K_S,
    Q3_K_M,
    Q3_K_L,
    Q4_K_S,
    Q4_K_M,
    Q5_K_S,
    Q5_K_M,
    Q6_K,
};

struct MixInfo {
    Mix mix;
    std::string_view name;      // as llama-quantize spells it
    uint32_t file_type;         // llama.cpp's LLAMA_FTYPE_* number, written as general.file_type
    quant::Type default_type;   // the type most weights get
};

const std::vector<MixInfo>& all_mixes();
const MixInfo& mix_info(Mix mix);
// Case-insensitive; also llama-quantize's aliases Q3_K, Q4_K, Q5_K (= the _M mixes).
std::optional<Mix> parse_mix(std::string_view name);
// "Q8_0, Q4_0, ..." for messages.
std::string mix_names();

// What the rules look at besides the tensors themselves.
struct ModelShape {
    std::string arch = "llama";  // general.architecture
    int n_layer = 0;             // <arch>.block_count
    int n_head = 0;              // <arch>.attention.head_count
    int n_head_kv = 0;           // <arch>.attention.head_count_kv (n_head when absent)
    int n_expert = 0;            // <arch>.expert_count (0 when absent)

    static ModelShape from_file(const gguf::File& file);
};

struct TensorDesc {
    std::string name;
    quant::Type type = quant::Type::F32;  // its type in the input
    std::array<uint64_t, 4> ne{1, 1, 1, 1};
};

struct TensorChoice {
    quant::Type type = quant::Type::F32;  // the type in the output
    bool converted = false;               // a weight the mix applies to (else copied as is)
    bool fallback = false;                // the mix's type did not fit the row length
    quant::Type wanted = quant::Type::F32;  // the type before the fallback
};

// One choice per tensor, in the order given. The choice for one tensor may
// depend on the others (how many attn_v there are, whether output.weight
// exists), so the whole list is passed.
std::vector<TensorChoice> choose_tensor_types(const std::vector<TensorDesc>& tensors, const ModelShape& model, Mix mix);

}  // namespace smolinfer::convert
