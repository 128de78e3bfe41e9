#include "support/tiny_model.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

#include "support/random_blocks.h"
#include "text/byte_encoding.h"

namespace smolinfer::test {

namespace {

// A handful of merges so that BPE has something to do.
const std::vector<std::pair<std::string, std::string>> kMerges = {
    {"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}, {"i", "n"}, {"e", "r"}, {"a", "n"}, {"Ġ", "a"}, {"o", "n"}, {"r", "e"},
};

}  // namespace

gguf::Writer tiny_llama_writer(const TinyModelSpec& s) {
    gguf::Writer w;
    w.add_string("general.architecture", "llama");
    w.add_string("general.name", "tiny random llama");
    w.add_u32("llama.context_length", uint32_t(s.n_ctx));
    w.add_u32("llama.embedding_length", uint32_t(s.n_embd));
    w.add_u32("llama.block_count", uint32_t(s.n_layer));
    w.add_u32("llama.feed_forward_length", uint32_t(s.n_ff));
    w.add_u32("llama.attention.head_count", uint32_t(s.n_head));
    w.add_u32("llama.attention.head_count_kv", uint32_t(s.n_head_kv));
    w.add_f32("llama.rope.freq_base", 10000.0f);
    w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.add_u32("llama.rope.dimension_count", uint32_t(s.n_embd / s.n_head));

    std::vector<std::string> tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    std::vector<int32_t> types = {3, 3, 3};
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(text::byte_to_symbol(uint8_t(b)));
        types.push_back(1);
    }
    std::vector<std::string> merges;
    for (const auto& [l, r] : kMerges) {
        merges.push_back(l + " " + r);
        tokens.push_back(l + r);
        types.push_back(1);
    }
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "smollm");
    w.add_string_array("tokenizer.ggml.tokens", tokens);
    w.add_i32_array("tokenizer.ggml.token_type", types);
    w.add_string_array("tokenizer.ggml.merges", merges);
    w.add_u32("tokenizer.ggml.bos_token_id", 1);
    w.add_u32("tokenizer.ggml.eos_token_id", 2);
    w.add_bool("tokenizer.ggml.add_bos_token", s.add_bos);
    w.add_string("tokenizer.chat_template", s.chat_template);

    std::mt19937 rng(s.seed);
    const int n_vocab = int(tokens.size());
    const int hd = s.n_embd / s.n_head;
    auto matrix = [&](const std::string& name, int cols, int rows, float scale = 0.05f) {
        w.add_tensor(name, uint32_t(s.weight_type), {uint64_t(cols), uint64_t(rows)},
                     random_blocks(s.weight_type, size_t(cols) * size_t(rows), rng, scale));
    };
    auto norm = [&](const std::string& name) {
        std::vector<float> v(size_t(s.n_embd));
        std::uniform_real_distribution<float> d(0.8f, 1.2f);
        for (float& x : v) x = d(rng);
        std::vector<uint8_t> bytes(v.size() * 4);
        std::memcpy(bytes.data(), v.data(), bytes.size());
        w.add_tensor(name, uint32_t(quant::Type::F32), {uint64_t(s.n_embd)}, std::move(bytes));
    };
    // Embeddings of a realistic size (~1) so that the norms have work to do.
    matrix("token_embd.weight", s.n_embd, n_vocab, 1.0f);
    norm("output_norm.weight");
    if (!s.tied_output) matrix("output.weight", s.n_embd, n_vocab);
    for (int i = 0; i < s.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        norm(p + "attn_norm.weight");
        matrix(p + "attn_q.weight", s.n_embd, s.n_head * hd, 0.2f);
        matrix(p + "attn_k.weight", s.n_embd, s.n_head_kv * hd, 0.2f);
        matrix(p + "attn_v.weight", s.n_embd, s.n_head_kv * hd);
        matrix(p + "attn_output.weight", s.n_head * hd, s.n_embd);
        norm(p + "ffn_norm.weight");
        matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff);
        matrix(p + "ffn_up.weight", s.n_embd, s.n_ff);
        matrix(p + "ffn_down.weight", s.n_ff, s.n_embd);
    }
    return w;
}

std::vector<uint8_t> tiny_llama(const TinyModelSpec& spec) { return tiny_llama_writer(spec).to_bytes(); }

const text::Vocab& tiny_vocab() {
    struct Tiny {
        std::vector<uint8_t> bytes = tiny_llama();
        gguf::File file = gguf::File::parse(bytes);
        text::Vocab vocab = text::Vocab::from_metadata(file.metadata());
    };
    static const Tiny t;
    return t.vocab;
}

std::string write_temp_file(const std::vector<uint8_t>& bytes, const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / "smolinfer-tests";
    std::filesystem::create_directories(dir);
    const auto path = dir / (std::to_string(::getpid()) + "-" + name);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
    return path.string();
}

}  // namespace smolinfer::test
