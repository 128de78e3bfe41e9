// Session::open_bytes / open_file on the tiny model with exactly one thing
// wrong: each must be a smolinfer::Error whose one-line message names the
// problem (the key or tensor), never a crash or a huge allocation. Plus the
// unmodified model, which must open and generate.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "gguf/gguf.h"
#include "quant/types.h"
#include "smolinfer/error.h"
#include "smolinfer/session.h"
#include "support/crafted_gguf.h"
#include "support/tiny_model.h"

namespace smolinfer {
namespace {

using namespace test::crafted;
using gguf::ValueType;

SessionOptions small_options() {
    SessionOptions o;
    o.threads = 1;
    return o;
}


std::string open_error(const Bytes& bytes, SessionOptions o = small_options()) {
    try {
        Session::open_bytes(bytes, o);
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_EQ(m.find('\n'), std::string::npos) << "not one line: " << m;
        return m;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "non-smolinfer exception: " << e.what();
        return {};
    }
    ADD_FAILURE() << "the model opened";
    return {};
}

std::string open_error(const Gguf& g, SessionOptions o = small_options()) { return open_error(g.bytes(), o); }

#define EXPECT_HAS(haystack, needle) \
    EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

// ------------------------------------------------------------------ positive

TEST(ModelErrors, UnmodifiedTinyModelOpensAndGenerates) {
    for (const Bytes& bytes : {test::tiny_llama(), tiny().bytes()}) {  // as written, and as re-crafted
        auto s = Session::open_bytes(bytes, small_options());
        EXPECT_EQ(s->info().architecture, "llama");
        EXPECT_EQ(s->info().n_vocab, 3 + 256 + 9);
        EXPECT_EQ(s->info().n_layer, 2);
        EXPECT_EQ(s->context(), 256);
        const auto prompt = s->tokenize("hello there");
        ASSERT_FALSE(prompt.empty());
        GenerateOptions g;
        g.max_tokens = 5;
        g.sampling.temperature = 0;
        g.ignore_eos = true;
        int events = 0;
        const auto st = s->generate(prompt, g, [&](const TokenEvent&) {
            ++events;
            return true;
        });
        EXPECT_EQ(st.generated_tokens, 5);
        ASSERT_EQ(st.tokens.size(), 5u);
        for (const TokenId t : st.tokens) {
            EXPECT_GE(t, 0);
            EXPECT_LT(t, s->info().n_vocab);
        }
        EXPECT_GE(events, 5);
        // Greedy is deterministic.
        s->reset();
        const auto again = s->generate(prompt, g, nullptr);
        EXPECT_EQ(again.tokens, st.tokens);
    }
}

TEST(ModelErrors, UntiedOutputAndOtherWeightTypesOpen) {
    test::TinyModelSpec spec;
    spec.tied_output = false;
    spec.weight_type = quant::Type::Q4_K;
    spec.n_embd = 256;
    spec.n_ff = 256;
    spec.n_head = 4;
    spec.n_head_kv = 4;
    auto s = Session::open_bytes(test::tiny_llama(spec), small_options());
    EXPECT_EQ(s->info().n_embd, 256);
}

// ------------------------------------------------------------------ metadata

TEST(ModelErrors, MissingMetadata) {
    for (const std::string key :
         {"general.architecture", "llama.embedding_length", "llama.block_count", "llama.feed_forward_length",
          "llama.attention.head_count", "llama.context_length", "tokenizer.ggml.model", "tokenizer.ggml.tokens",
          "tokenizer.ggml.merges"}) {
        SCOPED_TRACE(key);
        Gguf g = tiny();
        g.remove_kv(key);
        const std::string m = open_error(g);
        EXPECT_HAS(m, "missing metadata '" + key + "'");
    }
}

TEST(ModelErrors, OptionalMetadataHasDefaults) {
    // Keys with documented defaults: the model still opens without them.
    for (const std::string key :
         {"general.name", "llama.attention.head_count_kv", "llama.rope.freq_base",
          "llama.attention.layer_norm_rms_epsilon", "llama.rope.dimension_count", "tokenizer.ggml.token_type",
          "tokenizer.ggml.bos_token_id", "tokenizer.ggml.add_bos_token", "tokenizer.chat_template"}) {
        SCOPED_TRACE(key);
        Gguf g = tiny();
        g.remove_kv(key);
        if (key == "llama.attention.head_count_kv") {
            // Without it, head_count_kv = head_count: the K/V matrices no longer fit.
            const std::string m = open_error(g);
            EXPECT_HAS(m, "'blk.0.attn_k.weight'");
            EXPECT_HAS(m, "shape");
            continue;
        }
        EXPECT_NO_THROW(Session::open_bytes(g.bytes(), small_options()));
    }
}

TEST(ModelErrors, WrongArchitecture) {
    for (const std::string arch : {"gpt2", "", "LLAMA", "mamba"}) {
        Gguf g = tiny();
        g.kv("general.architecture", enc_string(arch));
        const std::string m = open_error(g);
        EXPECT_HAS(m, "unsupported architecture '" + arch + "'");
        EXPECT_HAS(m, "general.architecture");
        EXPECT_HAS(m, "supported: llama, qwen2, qwen3, phi3, gemma3");
    }
}

TEST(ModelErrors, MetadataOfTheWrongType) {
    Gguf g = tiny();
    g.kv("llama.embedding_length", enc_string("64"));
    std::string m = open_error(g);
    EXPECT_HAS(m, "'llama.embedding_length'");
    EXPECT_HAS(m, "string");

    Gguf a = tiny();
    a.kv("general.architecture", enc_u32(1));
    m = open_error(a);
    EXPECT_HAS(m, "'general.architecture'");

    Gguf t = tiny();
    t.kv("tokenizer.ggml.tokens", enc_array(ValueType::I32, std::vector<int32_t>{1, 2, 3}));
    m = open_error(t);
    EXPECT_HAS(m, "'tokenizer.ggml.tokens'");
    EXPECT_HAS(m, "array of strings");

    Gguf n = tiny();
    n.kv("llama.block_count", enc_i32(-2));
    m = open_error(n);
    EXPECT_HAS(m, "'llama.block_count'");
    EXPECT_HAS(m, "negative");
}

TEST(ModelErrors, OutOfRangeHyperparameters) {
    struct Case {
        std::string key;
        Bytes value;
        std::string phrase;
    };
    const Case cases[] = {
        {"llama.block_count", enc_u32(0), "'llama.block_count' = 0 is out of range"},
        {"llama.embedding_length", enc_u64(uint64_t(1) << 40), "'llama.embedding_length'"},
        {"llama.context_length", enc_u32(0), "'llama.context_length' = 0"},
        {"llama.attention.head_count", enc_u32(3), "not a multiple of head_count"},
        {"llama.attention.head_count_kv", enc_u32(3), "not a multiple of head_count_kv"},
        {"llama.rope.dimension_count", enc_u32(15), "rope.dimension_count"},
        {"llama.rope.freq_base", enc_f32(0.5f), "rope.freq_base"},
        {"llama.attention.layer_norm_rms_epsilon", enc_f32(-1.0f), "layer_norm_rms_epsilon"},
        {"llama.expert_count", enc_u32(8), "expert_count"},
        {"llama.rope.scaling.type", enc_string("yarn"), "unsupported RoPE scaling 'yarn'"},
        {"llama.vocab_size", enc_u32(1000), "vocab_size 1000"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.key);
        Gguf g = tiny();
        g.kv(c.key, c.value);
        EXPECT_HAS(open_error(g), c.phrase);
    }
}

TEST(ModelErrors, MoreLayersThanTensors) {
    Gguf g = tiny();
    g.kv("llama.block_count", enc_u32(3));
    EXPECT_HAS(open_error(g), "missing tensor 'blk.2.attn_norm.weight'");
}

// ------------------------------------------------------------------ tensors

TEST(ModelErrors, MissingTensor) {
    for (const std::string name : {"blk.1.ffn_down.weight", "token_embd.weight", "output_norm.weight",
                                   "blk.0.attn_norm.weight", "blk.0.attn_v.weight"}) {
        SCOPED_TRACE(name);
        Gguf g = tiny();
        g.remove_tensor(name);
        EXPECT_HAS(open_error(g), "missing tensor '" + name + "'");
    }
}

TEST(ModelErrors, WrongShape) {
    // Same number of bytes, other shape.
    Gguf g = tiny();
    g.find_tensor("blk.0.attn_q.weight").dims = {128, 32};
    std::string m = open_error(g);
    EXPECT_HAS(m, "'blk.0.attn_q.weight'");
    EXPECT_HAS(m, "[128, 32]");
    EXPECT_HAS(m, "expected [64, 64]");

    // A matrix stored transposed.
    Gguf t = tiny();
    t.find_tensor("blk.1.ffn_down.weight").dims = {64, 128};
    m = open_error(t);
    EXPECT_HAS(m, "'blk.1.ffn_down.weight'");
    EXPECT_HAS(m, "expected [128, 64]");

    // An extra dimension of 2 on a norm.
    Gguf n = tiny();
    Tensor& norm = n.find_tensor("output_norm.weight");
    norm.dims = {32, 2};
    m = open_error(n);
    EXPECT_HAS(m, "'output_norm.weight'");
    EXPECT_HAS(m, "expected [64]");

    // A 3-D matrix.
    Gguf d = tiny();
    d.find_tensor("blk.0.ffn_up.weight").dims = {64, 64, 2};
    m = open_error(d);
    EXPECT_HAS(m, "'blk.0.ffn_up.weight'");
    EXPECT_HAS(m, "[64, 64, 2]");
}

TEST(ModelErrors, NormWeightOfAQuantizedType) {
    Gguf g = tiny();
    Tensor& t = g.find_tensor("blk.1.ffn_norm.weight");
    t.type_id = uint32_t(quant::Type::Q8_0);
    t.data = Bytes(2 * 34, 0);
    const std::string m = open_error(g);
    EXPECT_HAS(m, "'blk.1.ffn_norm.weight'");
    EXPECT_HAS(m, "Q8_0");
    EXPECT_HAS(m, "F32");
}

TEST(ModelErrors, UnsupportedTensorTypeInTheModel) {
    Gguf g = tiny();
    g.find_tensor("blk.0.attn_k.weight").type_id = 99;
    const std::string m = open_error(g);
    EXPECT_HAS(m, "'blk.0.attn_k.weight'");
    EXPECT_HAS(m, "99");
}

TEST(ModelErrors, RopeFrequenciesOfTheWrongShape) {
    Gguf g = tiny();
    g.tensor("rope_freqs.weight", uint32_t(quant::Type::F32), {3}, Bytes(12, 0));
    const std::string m = open_error(g);
    EXPECT_HAS(m, "rope_freqs.weight");
    EXPECT_HAS(m, "shape [3]");
}

// A tensor the forward pass would not apply (here a bias of another family)
// must not be silently left out.
TEST(ModelErrors, TensorsTheFamilyDoesNotUseAreRejected) {
    for (const std::string name : {"blk.0.ffn_up.bias", "blk.0.attn_q_norm.weight", "output_norm.bias"}) {
        Gguf g = tiny();
        g.tensor(name, uint32_t(quant::Type::F32), {8}, Bytes(32, 0));
        const std::string m = open_error(g);
        EXPECT_HAS(m, "'" + name + "'");
        EXPECT_HAS(m, "not part of a llama model");
    }
}

TEST(ModelErrors, TruncatedModelFile) {
    const Bytes full = tiny().bytes();
    for (size_t keep : {size_t(0), size_t(3), size_t(100), full.size() / 2, full.size() - 1}) {
        SCOPED_TRACE(keep);
        const std::string m = open_error(Bytes(full.begin(), full.begin() + long(keep)));
        EXPECT_TRUE(m.find("truncated") != std::string::npos || m.find("not a GGUF file") != std::string::npos ||
                    m.find("claims") != std::string::npos)
            << m;
    }
}

// ------------------------------------------------------------------ vocabulary

TEST(ModelErrors, EmptyVocabulary) {
    Gguf g = tiny();
    g.kv("tokenizer.ggml.tokens", enc_string_array({}));
    g.kv("tokenizer.ggml.token_type", enc_array(ValueType::I32, std::vector<int32_t>{}));
    EXPECT_HAS(open_error(g), "'tokenizer.ggml.tokens' is empty");

    Gguf only = tiny();  // without a token_type array either
    only.kv("tokenizer.ggml.tokens", enc_string_array({}));
    only.remove_kv("tokenizer.ggml.token_type");
    EXPECT_HAS(open_error(only), "'tokenizer.ggml.tokens' is empty");
}

std::vector<std::string> tiny_tokens() {
    const Gguf g = tiny();
    const Bytes b = g.bytes();
    const gguf::File f = gguf::File::parse(b);
    std::vector<std::string> out;
    const auto texts = f.metadata().get_string_array("tokenizer.ggml.tokens");
    for (auto t : texts.value()) out.emplace_back(t);
    return out;
}

TEST(ModelErrors, VocabularySizeDisagreesWithTokenEmbeddings) {
    auto tokens = tiny_tokens();
    tokens.pop_back();
    Gguf g = tiny();
    g.kv("tokenizer.ggml.tokens", enc_string_array(tokens));
    g.remove_kv("tokenizer.ggml.token_type");
    std::string m = open_error(g);
    EXPECT_HAS(m, std::to_string(tokens.size()) + " tokens");
    EXPECT_HAS(m, "token_embd.weight");
    EXPECT_HAS(m, std::to_string(tokens.size() + 1) + " rows");

    auto more = tiny_tokens();
    more.push_back("extra");
    Gguf h = tiny();
    h.kv("tokenizer.ggml.tokens", enc_string_array(more));
    h.remove_kv("tokenizer.ggml.token_type");
    m = open_error(h);
    EXPECT_HAS(m, std::to_string(more.size()) + " tokens");
    EXPECT_HAS(m, "token_embd.weight");
}

TEST(ModelErrors, TokenTypeArrayOfTheWrongLength) {
    Gguf g = tiny();
    g.kv("tokenizer.ggml.token_type", enc_array(ValueType::I32, std::vector<int32_t>{3, 3, 3}));
    const std::string m = open_error(g);
    EXPECT_HAS(m, "'tokenizer.ggml.token_type'");
    EXPECT_HAS(m, "3 entries for 268 tokens");
}

TEST(ModelErrors, SpecialTokenIdOutOfRange) {
    struct Case {
        std::string key;
        Bytes value;
        std::string phrase;
    };
    const Case cases[] = {
        {"tokenizer.ggml.bos_token_id", enc_u32(268), "'tokenizer.ggml.bos_token_id' = 268 is not a token id"},
        {"tokenizer.ggml.bos_token_id", enc_i32(-1), "'tokenizer.ggml.bos_token_id' = -1"},
        {"tokenizer.ggml.eos_token_id", enc_u32(4000000000u), "'tokenizer.ggml.eos_token_id' = 4000000000"},
        {"tokenizer.ggml.eot_token_id", enc_u64(~uint64_t(0)), "'tokenizer.ggml.eot_token_id'"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.key);
        Gguf g = tiny();
        g.kv(c.key, c.value);
        const std::string m = open_error(g);
        EXPECT_HAS(m, c.phrase);
    }
    // add_bos_token without a bos id.
    Gguf g = tiny();
    g.remove_kv("tokenizer.ggml.bos_token_id");
    g.kv("tokenizer.ggml.add_bos_token", enc_bool(true));
    EXPECT_HAS(open_error(g), "bos_token_id");
}

TEST(ModelErrors, UnsupportedTokenizer) {
    Gguf p = tiny();
    p.kv("tokenizer.ggml.pre", enc_string("no-such-pretokenizer"));
    std::string m = open_error(p);
    EXPECT_HAS(m, "unsupported pre-tokenizer 'no-such-pretokenizer'");
    EXPECT_HAS(m, "tokenizer.ggml.pre");
    EXPECT_HAS(m, "llama-bpe");  // the supported names are listed

    Gguf t = tiny();
    t.kv("tokenizer.ggml.model", enc_string("t5"));
    m = open_error(t);
    EXPECT_HAS(m, "unsupported tokenizer.ggml.model 't5'");
    EXPECT_HAS(m, "supported: gpt2");
    EXPECT_HAS(m, "llama = SentencePiece");

    Gguf mg = tiny();
    mg.kv("tokenizer.ggml.merges", enc_string_array({"Ġ t", "nospace"}));
    m = open_error(mg);
    EXPECT_HAS(m, "merge 1");
    EXPECT_HAS(m, "'tokenizer.ggml.merges'");
}

// ------------------------------------------------------------------ context and options

TEST(ModelErrors, PromptLongerThanTheContext) {
    SessionOptions o = small_options();
    o.context = 8;
    auto s = Session::open_bytes(tiny().bytes(), o);
    EXPECT_EQ(s->context(), 8);
    const auto prompt = s->tokenize("the quick brown fox jumps over the lazy dog again and again");
    ASSERT_GT(prompt.size(), 8u);
    GenerateOptions g;
    g.max_tokens = 4;
    g.sampling.temperature = 0;
    try {
        s->generate(prompt, g, nullptr);
        FAIL() << "a prompt of " << prompt.size() << " tokens ran in a context of 8";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_HAS(m, "the prompt is " + std::to_string(prompt.size()) + " tokens");
        EXPECT_HAS(m, "context holds 8");
    }
    EXPECT_TRUE(s->sequence().empty());

    // Exactly the context fills it: generation stops with ContextFull.
    std::vector<TokenId> eight(prompt.begin(), prompt.begin() + 8);
    g.ignore_eos = true;
    const auto st = s->generate(eight, g, nullptr);
    EXPECT_EQ(st.stop, StopReason::ContextFull);
    EXPECT_EQ(st.generated_tokens, 1);

    // evaluate() past the end.
    s->reset();
    s->evaluate(std::span<const TokenId>(prompt.data(), 6), false);
    try {
        s->evaluate(std::span<const TokenId>(prompt.data(), 3), false);
        FAIL() << "evaluate went past the context";
    } catch (const Error& e) {
        EXPECT_HAS(std::string(e.what()), "do not fit");
    }
}

TEST(ModelErrors, ContextLargerThanTraining) {
    SessionOptions o = small_options();
    o.context = 257;
    EXPECT_HAS(open_error(tiny().bytes(), o), "exceeds the model's training context 256");
}

TEST(ModelErrors, BadOptionsAndIds) {
    SessionOptions o = small_options();
    o.batch = 0;
    EXPECT_HAS(open_error(tiny().bytes(), o), "batch");
    o = small_options();
    o.context = -1;
    EXPECT_HAS(open_error(tiny().bytes(), o), "context");

    auto s = Session::open_bytes(tiny().bytes(), small_options());
    GenerateOptions g;
    const std::vector<TokenId> bad = {1, 268};
    try {
        s->generate(bad, g, nullptr);
        FAIL();
    } catch (const Error& e) {
        EXPECT_HAS(std::string(e.what()), "token id 268 at position 1");
    }
    try {
        s->generate({}, g, nullptr);
        FAIL();
    } catch (const Error& e) {
        EXPECT_HAS(std::string(e.what()), "empty");
    }
    g.sampling.top_p = 2;
    try {
        s->generate(std::vector<TokenId>{1}, g, nullptr);
        FAIL();
    } catch (const Error& e) {
        EXPECT_HAS(std::string(e.what()), "top-p");
    }
}

// ------------------------------------------------------------------ files

std::string open_file_error(const std::string& path) {
    try {
        Session::open_file(path, small_options());
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "opened " << path;
    return {};
}

TEST(ModelErrors, OpenFileErrorsNameThePath) {
    const std::string missing = "/nonexistent/dir/model.gguf";
    std::string m = open_file_error(missing);
    EXPECT_HAS(m, missing);
    EXPECT_HAS(m, "No such file");

    const std::string dir = std::filesystem::temp_directory_path().string();
    m = open_file_error(dir);
    EXPECT_HAS(m, dir);
    EXPECT_HAS(m, "not a regular file");

    const std::string empty = test::write_temp_file({}, "model-errors-empty.gguf");
    m = open_file_error(empty);
    EXPECT_HAS(m, empty);
    EXPECT_HAS(m, "0 bytes");

    Gguf g = tiny();
    g.remove_tensor("blk.1.ffn_down.weight");
    const std::string broken = test::write_temp_file(g.bytes(), "model-errors-missing-tensor.gguf");
    m = open_file_error(broken);
    EXPECT_HAS(m, broken + ": ");
    EXPECT_HAS(m, "missing tensor 'blk.1.ffn_down.weight'");

    const std::string good = test::write_temp_file(tiny().bytes(), "model-errors-good.gguf");
    EXPECT_NO_THROW(Session::open_file(good, small_options()));
    for (const auto& p : {empty, broken, good}) std::filesystem::remove(p);
}

}  // namespace
}  // namespace smolinfer
