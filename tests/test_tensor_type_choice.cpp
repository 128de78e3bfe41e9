// Which type each tensor gets in each mix.
//
// 1. On SmolLM2-135M's tensors (30 layers, n_embd 576, n_ff 1536, 9 heads,
//    3 KV heads, vocabulary 49152, tied embedding; weights Q4_1, token
//    embedding Q8_0) our choice must equal llama.cpp's, recorded from
//    llama-quantize's own output files in tests/golden/quantize/
//    llama-quantize-types.json (scripts/gen-quantize-types-golden.py). 576 is not
//    a multiple of 256, so most K-quant choices there are fallbacks.
// 2. On a shape where 256 divides every row (n_embd 2048, n_ff 8192, 16
//    layers, 32 heads, 8 KV heads), the expectations below are written out
//    from reading llama.cpp's rules (src/llama-quant.cpp,
//    llama_tensor_get_type_impl), not from running it: this exercises the
//    non-fallback path, where attn_v/ffn_down get more bits in the _M mixes.
//    (They were also checked once, by hand, against `llama-quantize
//    --dry-run` on a 16-layer model with rows of 256 and 512 and 4 query
//    heads per KV head, tied and untied: same types for all 17 mixes.)
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "convert/tensor_type_choice.h"
#include "support/paths.h"

namespace smolinfer {
namespace {

using convert::Mix;
using convert::TensorDesc;
using quant::Type;

Type type_from_name(const std::string& name) {
    for (uint32_t id = 0; id < 64; ++id) {
        if (auto t = quant::type_traits(id); t && t->name == name) return t->type;
    }
    ADD_FAILURE() << "unknown type name " << name;
    return Type::F32;
}

std::string name_of(Type t) { return std::string(quant::traits(t).name); }

// ------------------------------------------------------------------ SmolLM2 vs llama.cpp

TEST(TensorTypeChoice, SmolLM2MatchesLlamaQuantize) {
    const auto g = test::load_golden("quantize/llama-quantize-types.json");
    std::vector<TensorDesc> tensors;
    for (const auto& t : g["tensors"]) {
        TensorDesc d;
        d.name = t["name"].get<std::string>();
        d.type = type_from_name(t["type"].get<std::string>());
        for (size_t i = 0; i < t["ne"].size(); ++i) d.ne[i] = t["ne"][i].get<uint64_t>();
        tensors.push_back(d);
    }
    ASSERT_EQ(tensors.size(), 272u);
    convert::ModelShape m;
    m.arch = g["model"]["arch"].get<std::string>();
    m.n_layer = g["model"]["n_layer"].get<int>();
    m.n_head = g["model"]["n_head"].get<int>();
    m.n_head_kv = g["model"]["n_head_kv"].get<int>();
    m.n_expert = g["model"]["n_expert"].get<int>();

    std::set<std::string> covered;
    for (const auto& [mix_name, expect] : g["mixes"].items()) {
        SCOPED_TRACE(mix_name);
        const auto mix = convert::parse_mix(mix_name);
        ASSERT_TRUE(mix.has_value());
        covered.insert(std::string(convert::mix_info(*mix).name));
        EXPECT_EQ(convert::mix_info(*mix).file_type, expect["file_type"].get<uint32_t>());
        EXPECT_EQ(expect["quantization_version"].get<int>(), 2);
        const auto choices = convert::choose_tensor_types(tensors, m, *mix);
        ASSERT_EQ(choices.size(), tensors.size());
        int mismatches = 0;
        for (size_t i = 0; i < tensors.size(); ++i) {
            const std::string want = expect["types"][i].get<std::string>();
            if (name_of(choices[i].type) != want && ++mismatches <= 5) {
                ADD_FAILURE() << tensors[i].name << ": ours " << name_of(choices[i].type) << ", llama.cpp " << want;
            }
        }
        EXPECT_EQ(mismatches, 0);

        // Metadata: the input's keys in order, the two rewritten ones moved to the end.
        std::vector<std::string> keys;
        for (const auto& k : g["input_metadata_keys"]) {
            const std::string s = k.get<std::string>();
            if (s != "general.file_type" && s != "general.quantization_version") keys.push_back(s);
        }
        keys.push_back("general.quantization_version");
        keys.push_back("general.file_type");
        EXPECT_EQ(expect["metadata_keys"].get<std::vector<std::string>>(), keys);
    }
    // Every mix we offer has its llama.cpp counterpart in the golden file.
    for (const auto& mi : convert::all_mixes()) EXPECT_TRUE(covered.count(std::string(mi.name))) << mi.name;
}

// Sanity of the SmolLM2 Q4_K_M choice spelled out (the golden file says the same).
TEST(TensorTypeChoice, SmolLM2Q4KMFallbacks) {
    std::vector<TensorDesc> t = {
        {"token_embd.weight", Type::Q8_0, {576, 49152, 1, 1}},
        {"blk.0.attn_v.weight", Type::Q4_1, {576, 192, 1, 1}},
        {"blk.0.ffn_down.weight", Type::Q4_1, {1536, 576, 1, 1}},
        {"blk.0.ffn_up.weight", Type::Q4_1, {576, 1536, 1, 1}},
        {"blk.0.attn_norm.weight", Type::F32, {576, 1, 1, 1}},
    };
    convert::ModelShape m{"llama", 30, 9, 3, 0};
    const auto c = convert::choose_tensor_types(t, m, Mix::Q4_K_M);
    EXPECT_EQ(c[0].type, Type::Q8_0);  // tied embedding: rows of 576 do not fit Q6_K -> Q8_0 directly
    EXPECT_FALSE(c[0].fallback);
    EXPECT_EQ(c[1].type, Type::Q8_0);  // wanted Q6_K (layer 0 gets more bits), falls back
    EXPECT_TRUE(c[1].fallback);
    EXPECT_EQ(c[1].wanted, Type::Q6_K);
    EXPECT_EQ(c[2].type, Type::Q6_K);  // layer 0 gets more bits; rows of 1536 fit
    EXPECT_EQ(c[3].type, Type::Q5_0);  // Q4_K -> Q5_0
    EXPECT_TRUE(c[3].fallback);
    EXPECT_EQ(c[4].type, Type::F32);
    EXPECT_FALSE(c[4].converted);
}

// ------------------------------------------------------------------ rows that 256 divides

struct Big {
    static constexpr int kLayers = 16;
    // use_more_bits(i, 16): i < 2, i >= 14, or (i - 2) % 3 == 2.
    static bool more_bits(int i) {
        static const std::set<int> kMore = {0, 1, 4, 7, 10, 13, 14, 15};
        return kMore.count(i) != 0;
    }
    static std::vector<TensorDesc> tensors(bool tied) {
        std::vector<TensorDesc> t;
        t.push_back({"token_embd.weight", Type::F16, {2048, 128256, 1, 1}});
        t.push_back({"output_norm.weight", Type::F32, {2048, 1, 1, 1}});
        if (!tied) t.push_back({"output.weight", Type::F16, {2048, 128256, 1, 1}});
        for (int i = 0; i < kLayers; ++i) {
            const std::string p = "blk." + std::to_string(i) + ".";
            t.push_back({p + "attn_norm.weight", Type::F32, {2048, 1, 1, 1}});
            t.push_back({p + "attn_q.weight", Type::F16, {2048, 2048, 1, 1}});
            t.push_back({p + "attn_k.weight", Type::F16, {2048, 512, 1, 1}});
            t.push_back({p + "attn_v.weight", Type::F16, {2048, 512, 1, 1}});
            t.push_back({p + "attn_output.weight", Type::F16, {2048, 2048, 1, 1}});
            t.push_back({p + "ffn_norm.weight", Type::F32, {2048, 1, 1, 1}});
            t.push_back({p + "ffn_gate.weight", Type::F16, {2048, 8192, 1, 1}});
            t.push_back({p + "ffn_up.weight", Type::F16, {2048, 8192, 1, 1}});
            t.push_back({p + "ffn_down.weight", Type::F16, {8192, 2048, 1, 1}});
        }
        return t;
    }
    static convert::ModelShape shape() { return {"llama", kLayers, 32, 8, 0}; }
};

int layer_of(const std::string& name) { return name.rfind("blk.", 0) == 0 ? std::stoi(name.substr(4)) : -1; }
bool has(const std::string& name, const std::string& part) { return name.find(part) != std::string::npos; }

// Expected type of one tensor, from llama.cpp's rules as documented in the
// header comment of convert/tensor_type_choice.h, for the 16-layer model
// with n_gqa = 32 / 8 = 4.
Type expected(const TensorDesc& t, Mix mix, bool tied) {
    if (has(t.name, "_norm")) return Type::F32;
    const Type base = convert::mix_info(mix).default_type;
    const bool is_float_mix = base == Type::F32 || base == Type::F16 || base == Type::BF16;
    if (is_float_mix) return base;
    const int i = layer_of(t.name);
    const bool output_like = t.name == "output.weight" || (tied && t.name == "token_embd.weight");
    if (output_like) return mix == Mix::Q8_0 ? Type::Q8_0 : Type::Q6_K;
    if (t.name == "token_embd.weight") return base;
    if (has(t.name, "attn_v")) {
        switch (mix) {
            case Mix::Q2_K: return Type::Q4_K;  // n_gqa >= 4
            case Mix::Q3_K_M: return i < 2 ? Type::Q5_K : Type::Q4_K;
            case Mix::Q3_K_L: return Type::Q5_K;
            case Mix::Q4_K_M:
            case Mix::Q5_K_M: return Big::more_bits(i) ? Type::Q6_K : base;
            case Mix::Q4_K_S: return i < 4 ? Type::Q5_K : base;
            default: return base;
        }
    }
    if (has(t.name, "ffn_down")) {
        switch (mix) {
            case Mix::Q2_K: return Type::Q3_K;
            case Mix::Q3_K_M: return i < 1 ? Type::Q5_K : Type::Q4_K;  // n/16 = 1
            case Mix::Q3_K_L: return Type::Q5_K;
            case Mix::Q4_K_M:
            case Mix::Q5_K_M: return Big::more_bits(i) ? Type::Q6_K : base;
            case Mix::Q4_K_S: return i < 2 ? Type::Q5_K : base;  // n/8 = 2
            default: return base;
        }
    }
    if (has(t.name, "attn_output")) {
        switch (mix) {
            case Mix::Q2_K: return Type::Q3_K;
            case Mix::Q3_K_M: return Type::Q4_K;
            case Mix::Q3_K_L: return Type::Q5_K;
            default: return base;
        }
    }
    return base;
}

TEST(TensorTypeChoice, RowsThat256DividesFollowTheRules) {
    for (const bool tied : {true, false}) {
        const auto tensors = Big::tensors(tied);
        for (const auto& mi : convert::all_mixes()) {
            SCOPED_TRACE(std::string(mi.name) + (tied ? " tied" : " untied"));
            const auto c = convert::choose_tensor_types(tensors, Big::shape(), mi.mix);
            for (size_t k = 0; k < tensors.size(); ++k) {
                EXPECT_EQ(name_of(c[k].type), name_of(expected(tensors[k], mi.mix, tied))) << tensors[k].name;
                EXPECT_FALSE(c[k].fallback) << tensors[k].name;
                EXPECT_EQ(c[k].converted, !has(tensors[k].name, "_norm")) << tensors[k].name;
            }
        }
    }
}

// A few concrete Q4_K_M values, so that a reader sees the mix at a glance.
TEST(TensorTypeChoice, Q4KMOnRowsThat256Divides) {
    const auto t = Big::tensors(true);
    const auto c = convert::choose_tensor_types(t, Big::shape(), Mix::Q4_K_M);
    std::map<std::string, Type> by_name;
    for (size_t k = 0; k < t.size(); ++k) by_name[t[k].name] = c[k].type;
    EXPECT_EQ(by_name["token_embd.weight"], Type::Q6_K);
    EXPECT_EQ(by_name["blk.0.attn_v.weight"], Type::Q6_K);
    EXPECT_EQ(by_name["blk.2.attn_v.weight"], Type::Q4_K);
    EXPECT_EQ(by_name["blk.4.attn_v.weight"], Type::Q6_K);
    EXPECT_EQ(by_name["blk.5.ffn_down.weight"], Type::Q4_K);
    EXPECT_EQ(by_name["blk.7.ffn_down.weight"], Type::Q6_K);
    EXPECT_EQ(by_name["blk.15.ffn_down.weight"], Type::Q6_K);
    EXPECT_EQ(by_name["blk.9.attn_q.weight"], Type::Q4_K);
    EXPECT_EQ(by_name["blk.9.ffn_norm.weight"], Type::F32);
}

// The order of the tensors in the file does not matter: llama.cpp counts
// attn_v tensors in (layer, name) order, and so do we.
TEST(TensorTypeChoice, FileOrderDoesNotMatter) {
    auto t = Big::tensors(true);
    const auto c = convert::choose_tensor_types(t, Big::shape(), Mix::Q4_K_M);
    std::map<std::string, Type> want;
    for (size_t k = 0; k < t.size(); ++k) want[t[k].name] = c[k].type;
    std::reverse(t.begin(), t.end());
    const auto r = convert::choose_tensor_types(t, Big::shape(), Mix::Q4_K_M);
    for (size_t k = 0; k < t.size(); ++k) EXPECT_EQ(r[k].type, want[t[k].name]) << t[k].name;
}

// ------------------------------------------------------------------ fallbacks and odd shapes

TEST(TensorTypeChoice, Fallbacks) {
    convert::ModelShape m{"llama", 4, 4, 4, 0};
    const std::vector<TensorDesc> t = {
        {"blk.0.attn_q.weight", Type::F32, {96, 64, 1, 1}},   // 96: a multiple of 32, not of 256
        {"blk.0.attn_k.weight", Type::F32, {40, 64, 1, 1}},   // not even of 32
        {"blk.0.attn_norm.weight", Type::F32, {40, 1, 1, 1}},
        {"blk.0.ffn_up.weight", Type::F32, {512, 1, 1, 1}},   // declared 2-D but 1 row: 1-D for the rules
        {"blk.0.ffn_gate.bias", Type::F32, {512, 512, 1, 1}},  // not a weight
    };
    const std::map<Mix, Type> q = {
        {Mix::Q2_K, Type::Q4_0}, {Mix::Q3_K_S, Type::Q4_0}, {Mix::Q4_K_S, Type::Q5_0},
        {Mix::Q5_K_S, Type::Q5_1}, {Mix::Q6_K, Type::Q8_0},  {Mix::Q4_0, Type::Q4_0},
    };
    for (const auto& [mix, want] : q) {
        SCOPED_TRACE(std::string(convert::mix_info(mix).name));
        const auto c = convert::choose_tensor_types(t, m, mix);
        EXPECT_EQ(c[0].type, want);
        EXPECT_EQ(c[0].fallback, want != convert::mix_info(mix).default_type);
        EXPECT_EQ(c[1].type, Type::F16);  // even the 32-block types do not fit 40
        EXPECT_TRUE(c[1].fallback);
        EXPECT_EQ(c[2].type, Type::F32);
        EXPECT_EQ(c[3].type, Type::F32);
        EXPECT_FALSE(c[3].converted);
        EXPECT_EQ(c[4].type, Type::F32);
        EXPECT_FALSE(c[4].converted);
    }
    // The float mixes never fall back.
    const auto f = convert::choose_tensor_types(t, m, Mix::F16);
    EXPECT_EQ(f[1].type, Type::F16);
    EXPECT_FALSE(f[1].fallback);
}

TEST(TensorTypeChoice, MixNames) {
    EXPECT_EQ(convert::parse_mix("q4_k_m"), Mix::Q4_K_M);
    EXPECT_EQ(convert::parse_mix("Q4_K"), Mix::Q4_K_M);
    EXPECT_EQ(convert::parse_mix("Q5_K"), Mix::Q5_K_M);
    EXPECT_EQ(convert::parse_mix("bf16"), Mix::BF16);
    EXPECT_FALSE(convert::parse_mix("Q9_0").has_value());
    EXPECT_FALSE(convert::parse_mix("").has_value());
    EXPECT_NE(convert::mix_names().find("Q4_K_M"), std::string::npos);
    EXPECT_EQ(convert::mix_info(Mix::Q4_K_M).file_type, 15u);
    EXPECT_EQ(convert::mix_info(Mix::F32).file_type, 0u);
    EXPECT_EQ(convert::mix_info(Mix::BF16).file_type, 32u);
}

}  // namespace
}  // namespace smolinfer
