#include "convert/tensor_type_choice.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "gguf/gguf.h"
#include "smolinfer/error.h"

namespace smolinfer::convert {

using quant::Type;

namespace {

const std::vector<MixInfo> kMixes = {
    {Mix::Q8_0, "Q8_0", 7, Type::Q8_0},       {Mix::Q4_0, "Q4_0", 2, Type::Q4_0},
    {Mix::Q4_1, "Q4_1", 3, Type::Q4_1},       {Mix::Q5_0, "Q5_0", 8, Type::Q5_0},
    {Mix::Q5_1, "Q5_1", 9, Type::Q5_1},       {Mix::Q2_K, "Q2_K", 10, Type::Q2_K},
    {Mix::Q3_K_S, "Q3_K_S", 11, Type::Q3_K},  {Mix::Q3_K_M, "Q3_K_M", 12, Type::Q3_K},
    {Mix::Q3_K_L, "Q3_K_L", 13, Type::Q3_K},  {Mix::Q4_K_S, "Q4_K_S", 14, Type::Q4_K},
    {Mix::Q4_K_M, "Q4_K_M", 15, Type::Q4_K},  {Mix::Q5_K_S, "Q5_K_S", 16, Type::Q5_K},
    {Mix::Q5_K_M, "Q5_K_M", 17, Type::Q5_K},  {Mix::Q6_K, "Q6_K", 18, Type::Q6_K},
    {Mix::F16, "F16", 1, Type::F16},          {Mix::BF16, "BF16", 32, Type::BF16},
    {Mix::F32, "F32", 0, Type::F32},
};

// What a tensor is, from its name (llama.cpp's tensor_get_category).
enum class Category { TokenEmbd, AttnQ, AttnV, AttnK, AttnQkv, AttnKvB, AttnOutput, FfnUp, FfnGate, FfnDown, Output, Other };

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

Category category_of(const std::string& name) {
    if (name == "output.weight") return Category::Output;
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::TokenEmbd;
    if (contains(name, "attn_qkv.weight")) return Category::AttnQkv;
    if (contains(name, "attn_kv_b.weight")) return Category::AttnKvB;
    if (contains(name, "attn_v.weight")) return Category::AttnV;
    if (contains(name, "attn_k.weight")) return Category::AttnK;
    if (contains(name, "attn_q.weight")) return Category::AttnQ;
    if (contains(name, "attn_output.weight")) return Category::AttnOutput;
    if (contains(name, "ffn_up")) return Category::FfnUp;
    if (contains(name, "ffn_gate")) return Category::FfnGate;
    if (contains(name, "ffn_down")) return Category::FfnDown;
    return Category::Other;
}

// attn_v and the tensors that play its part: the ones most sensitive to quantization.
bool is_value_projection(Category c) { return c == Category::AttnV || c == Category::AttnQkv || c == Category::AttnKvB; }

// ggml_n_dims: trailing dimensions of 1 do not count.
int effective_dims(const std::array<uint64_t, 4>& ne) {
    for (int i = 3; i >= 1; --i) {
        if (ne[size_t(i)] > 1) return i + 1;
    }
    return 1;
}

// Whether the mix applies to this tensor at all (llama.cpp's tensor_allows_quantization
// with default parameters). The name exclusions cover architectures other than
// Llama too, so that such files keep the same small tensors unconverted.
bool mix_applies(const TensorDesc& t) {
    if (effective_dims(t.ne) < 2) return false;
    const std::string& n = t.name;
    if (n.size() < 6 || n.compare(n.size() - 6, 6, "weight") != 0) return false;
    static const std::vector<std::string_view> kKeep = {
        "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
        "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
        "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
        "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
        "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
        "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight",
        ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger",
        "a.rvq.codebook", "mm.a.code_embd",
    };
    for (const auto k : kKeep) {
        if (contains(n, k)) return false;
    }
    // Positional embeddings and token types (BERT-like models).
    if (n == "position_embd.weight" || n == "token_types.weight") return false;
    return true;
}

bool is_block_quantized(Type t) { return t != Type::F32 && t != Type::F16 && t != Type::BF16; }

size_t block_of(Type t) { return quant::traits(t).block_elems; }

// The layer number of "blk.<n>...." names, -1 for the others (as llama.cpp's
// sscanf("blk.%d.") reads it).
int layer_of(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    size_t i = 4;
    bool neg = false;
    if (i < name.size() && (name[i] == '-' || name[i] == '+')) neg = name[i++] == '-';
    if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
    long v = 0;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && v < (1L << 30)) {
        v = v * 10 + (name[i++] - '0');
    }
    return int(neg ? -v : v);
}

// The layers that get more bits in the _M mixes: the first and last eighth,
// and every third layer in between.
bool use_more_bits(int i_layer, int n_layers) {
    return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

struct Counters {
    int n_value = 0;  // attn_v-like tensors in the model
    int i_value = 0;  // those seen so far
    int n_ffn_down = 0;
    int i_ffn_down = 0;
    bool tied_embedding = true;  // no output.weight: token_embd doubles as the output matrix
};

// The mix's type for one weight before the fallback (llama.cpp's
// llama_tensor_get_type_impl, restricted to the mixes we offer). Counters
// advance as in llama.cpp, where tensors are visited in (layer, name) order.
Type mix_type(const TensorDesc& t, Category cat, const ModelShape& m, Mix mix, Type type, Counters& c) {
    const bool falcon = m.arch == "falcon";
    const int n_gqa = m.n_head_kv > 0 ? m.n_head / m.n_head_kv : 0;
    // llama.cpp's LLM_TYPE_70B for Llama: 80 layers with grouped-query attention.
    const bool llama_70b = m.arch == "llama" && m.n_expert != 8 && m.n_layer == 80 && m.n_head != m.n_head_kv;

    if (cat == Category::Output || (c.tied_embedding && cat == Category::TokenEmbd)) {
        if (falcon || t.ne[0] % block_of(type) != 0) return Type::Q8_0;
        return type == Type::Q8_0 ? type : Type::Q6_K;
    }
    if (cat == Category::TokenEmbd) return type;

    if (is_value_projection(cat)) {
        const int i = c.i_value++;
        if (mix == Mix::Q2_K) {
            type = n_gqa >= 4 ? Type::Q4_K : Type::Q3_K;
        } else if (mix == Mix::Q3_K_M) {
            type = i < 2 ? Type::Q5_K : Type::Q4_K;
        } else if (mix == Mix::Q3_K_L) {
            type = Type::Q5_K;
        } else if ((mix == Mix::Q4_K_M || mix == Mix::Q5_K_M) && use_more_bits(i, c.n_value)) {
            type = Type::Q6_K;
        } else if (mix == Mix::Q4_K_S && i < 4) {
            type = Type::Q5_K;
        }
        if (llama_70b && (type == Type::Q3_K || type == Type::Q4_K)) type = Type::Q5_K;
        if (m.n_expert == 8) type = Type::Q8_0;
        return type;
    }
    if (cat == Category::AttnK) return m.n_expert == 8 ? Type::Q8_0 : type;
    if (cat == Category::FfnDown) {
        int i = c.i_ffn_down++;
        const int n = c.n_ffn_down;
        if (std::max(1, m.n_expert) > 1) {
            // Expert tensors are not in layer order in every model: llama.cpp reads the layer from the name.
            i = layer_of(t.name);
            if (i < 0 || i >= n) throw Error("cannot tell the layer of tensor " + gguf::quoted(t.name));
        }
        switch (mix) {
            case Mix::Q2_K: return Type::Q3_K;
            case Mix::Q3_K_M:
                return i < n / 16 ? Type::Q5_K : (!falcon || use_more_bits(i, n)) ? Type::Q4_K : Type::Q3_K;
            case Mix::Q3_K_L: return falcon ? Type::Q4_K : Type::Q5_K;
            case Mix::Q4_K_M:
                if (falcon) return i < n / 16 ? Type::Q6_K : use_more_bits(i, n) ? Type::Q5_K : Type::Q4_K;
                return use_more_bits(i, n) ? Type::Q6_K : type;
            case Mix::Q5_K_M: return use_more_bits(i, n) ? Type::Q6_K : type;
            case Mix::Q4_K_S: return !falcon && i < n / 8 ? Type::Q5_K : type;
            default: return type;
        }
    }
    if (cat == Category::AttnOutput) {
        if (falcon) return mix == Mix::Q3_K_L ? Type::Q4_K : type;
        if (m.n_expert == 8) {
            const bool raise = mix == Mix::Q2_K || mix == Mix::Q3_K_S || mix == Mix::Q3_K_M || mix == Mix::Q4_K_S ||
                               mix == Mix::Q4_K_M;
            return raise ? Type::Q5_K : type;
        }
        if (mix == Mix::Q2_K) return Type::Q3_K;
        if (mix == Mix::Q3_K_M) return Type::Q4_K;
        if (mix == Mix::Q3_K_L) return Type::Q5_K;
        return type;
    }
    return type;
}

// A block type whose block does not divide the row length: the nearest
// 32-block type, or F16 when even 32 does not divide it.
Type fallback_type(Type type, uint64_t row) {
    if (row % block_of(type) == 0) return type;
    Type to = type;
    switch (type) {
        case Type::Q2_K:
        case Type::Q3_K: to = Type::Q4_0; break;
        case Type::Q4_K: to = Type::Q5_0; break;
        case Type::Q5_K: to = Type::Q5_1; break;
        case Type::Q6_K: to = Type::Q8_0; break;
        default:
            if (block_of(type) > 32) {
                throw Error("no fallback type for " + std::string(quant::traits(type).name));
            }
            break;
    }
    return row % block_of(to) == 0 ? to : Type::F16;
}

}  // namespace

const std::vector<MixInfo>& all_mixes() { return kMixes; }

const MixInfo& mix_info(Mix mix) {
    for (const auto& m : kMixes) {
        if (m.mix == mix) return m;
    }
    std::abort();  // every enumerator is in kMixes
}

std::optional<Mix> parse_mix(std::string_view name) {
    std::string up(name);
    for (char& ch : up) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    if (up == "Q3_K") return Mix::Q3_K_M;
    if (up == "Q4_K") return Mix::Q4_K_M;
    if (up == "Q5_K") return Mix::Q5_K_M;
    for (const auto& m : kMixes) {
        std::string n(m.name);
        for (char& ch : n) ch = char(std::toupper(static_cast<unsigned char>(ch)));
        if (n == up) return m.mix;
    }
    return std::nullopt;
}

std::string mix_names() {
    std::string s;
    for (const auto& m : kMixes) {
        if (!s.empty()) s += ", ";
        s += m.name;
    }
    return s;
}

ModelShape ModelShape::from_file(const gguf::File& file) {
    const auto& md = file.metadata();
    ModelShape m;
    m.arch = std::string(md.get_string("general.architecture").value_or(""));
    const std::string p = m.arch + ".";
    m.n_layer = int(md.get_u32(p + "block_count").value_or(0));
    m.n_head = int(md.get_u32(p + "attention.head_count").value_or(0));
    m.n_head_kv = int(md.get_u32(p + "attention.head_count_kv").value_or(uint32_t(m.n_head)));
    m.n_expert = int(md.get_u32(p + "expert_count").value_or(0));
    return m;
}

std::vector<TensorChoice> choose_tensor_types(const std::vector<TensorDesc>& tensors, const ModelShape& model, Mix mix) {
    const MixInfo& info = mix_info(mix);
    Counters c;
    c.n_ffn_down = model.n_layer;
    for (const auto& t : tensors) {
        const Category cat = category_of(t.name);
        if (is_value_projection(cat)) ++c.n_value;
        if (cat == Category::Output) c.tied_embedding = false;
    }

    // llama.cpp visits the tensors sorted by layer, then by name; the counters
    // above advance in that order.
    std::vector<size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::vector<int> layers(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) layers[i] = layer_of(tensors[i].name);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (layers[a] != layers[b]) return layers[a] < layers[b];
        return tensors[a].name < tensors[b].name;
    });

    std::vector<TensorChoice> out(tensors.size());
    for (const size_t i : order) {
        const TensorDesc& t = tensors[i];
        TensorChoice& ch = out[i];
        ch.type = ch.wanted = t.type;
        if (!mix_applies(t)) continue;
        ch.converted = true;
        Type type = info.default_type;
        if (is_block_quantized(type)) {
            type = mix_type(t, category_of(t.name), model, mix, type, c);
            ch.wanted = type;
            type = fallback_type(type, t.ne[0]);
            ch.fallback = type != ch.wanted;
        } else {
            ch.wanted = type;
        }
        ch.type = type;
    }
    return out;
}

}  // namespace smolinfer::convert
