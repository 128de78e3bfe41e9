// Writes the seed corpora of the fuzz targets: small valid inputs made by our
// own code (tiny random-weight Llama GGUF files from the test helper, texts,
// conversations, sampling parameters). Deterministic: the same files every
// run. The output is committed under fuzz/corpus/; regenerate with
//   build/fuzz/fuzz/make_corpus fuzz/corpus
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "quant/types.h"
#include "support/random_blocks.h"
#include "support/tiny_model.h"

namespace {

using Bytes = std::vector<uint8_t>;
namespace fs = std::filesystem;
using smolinfer::quant::Type;

void write(const fs::path& dir, const std::string& name, const Bytes& bytes) {
    fs::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + (dir / name).string());
}

Bytes text(uint8_t first, const std::string& s) {
    Bytes b{first};
    b.insert(b.end(), s.begin(), s.end());
    return b;
}

template <typename T>
void put(Bytes& b, T v) {
    const size_t at = b.size();
    b.resize(at + sizeof v);
    std::memcpy(b.data() + at, &v, sizeof v);
}

// The smallest models the forward pass runs: 1-2 layers of 32 values.
smolinfer::test::TinyModelSpec small(Type type, bool tied, int n_layer) {
    smolinfer::test::TinyModelSpec s;
    s.n_embd = 32;
    s.n_layer = n_layer;
    s.n_head = 2;
    s.n_head_kv = 1;
    s.n_ff = 32;
    s.n_ctx = 16;
    s.weight_type = type;
    s.tied_output = tied;
    s.seed = 7;
    return s;
}

// Not a model: one small tensor of every block format, and metadata of
// every value type (what the parser sees besides Llama files).
Bytes every_type() {
    smolinfer::gguf::Writer w;
    w.add_u8("test.u8", 200);
    w.add_u32("test.u32", 7);
    w.add_i32("test.i32", -7);
    w.add_u64("test.u64", uint64_t(1) << 40);
    w.add_f32("test.f32", 0.5f);
    w.add_bool("test.bool", true);
    w.add_string("test.string", "h\xC3\xA9llo");
    w.add_string_array("test.strings", {"a", "", "bc"});
    w.add_i32_array("test.i32s", {1, -2, 3});
    w.add_f32_array("test.f32s", {1.5f, -2.5f});
    w.set_alignment(64);
    std::mt19937 rng(1);
    for (const Type t : {Type::F32, Type::F16, Type::BF16, Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0,
                         Type::Q2_K, Type::Q3_K, Type::Q4_K, Type::Q5_K, Type::Q6_K}) {
        const auto& tr = smolinfer::quant::traits(t);
        w.add_tensor(std::string("t.") + std::string(tr.name), uint32_t(t), {uint64_t(tr.block_elems)},
                     smolinfer::test::random_blocks(t, tr.block_elems, rng, 1.0f));
    }
    return w.to_bytes();
}

// Sampling parameters as fuzz_sampler reads them: a selector byte per value
// (below 44: an entry of its table of interesting values).
Bytes sampling(uint8_t temp, uint8_t top_k, uint8_t top_p, uint8_t min_p, uint8_t penalty, uint8_t last_n,
               uint16_t n_vocab, uint8_t extra_logits) {
    Bytes b{temp, top_k, top_p, min_p, penalty, last_n};
    put<uint64_t>(b, 1234);       // seed
    put<uint16_t>(b, n_vocab);    // 1 + this % 1024 tokens
    put<uint32_t>(b, 99);         // logits generator seed
    b.push_back(32);              // logits spread (/16)
    b.push_back(3);               // rounds - 1
    b.push_back(extra_logits);    // logits set from the input
    for (int i = 0; i < extra_logits % 8; ++i) {
        put<uint16_t>(b, uint16_t(i * 37));
        b.push_back(uint8_t(i % 22));
    }
    b.push_back(2);  // tokens accepted
    b.push_back(4);  // 40
    b.push_back(3);  // 3
    return b;
}

Bytes conversation(uint8_t flags, const std::vector<std::string>& fields) {
    Bytes b{flags};
    for (size_t i = 0; i < fields.size(); ++i) {
        if (i) b.push_back(0);
        b.insert(b.end(), fields[i].begin(), fields[i].end());
    }
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: make_corpus OUT_DIR (fuzz/corpus)\n";
        return 2;
    }
    const fs::path out = argv[1];
    using smolinfer::test::tiny_llama;

    const fs::path gguf = out / "fuzz_gguf";
    write(gguf, "tiny-q8_0.gguf", tiny_llama(small(Type::Q8_0, true, 1)));
    write(gguf, "tiny-f16-untied.gguf", tiny_llama(small(Type::F16, false, 1)));
    write(gguf, "tiny-q4_0-2layers.gguf", tiny_llama(small(Type::Q4_0, true, 2)));
    write(gguf, "every-type.gguf", every_type());

    const fs::path tok = out / "fuzz_tokenizer";
    write(tok, "english", text(0, "Hello world, the cat is in the house. It's 12345 o'clock!"));
    write(tok, "specials", text(4, "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"));
    write(tok, "unicode", text(5, "caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9 e\xCC\x81"));
    write(tok, "whitespace", text(2, "a  \t\n\n   b\r\n  12 345 6789   "));
    write(tok, "invalid-utf8", text(8, "ok \xFF\xC3 \xE4\xBD \xF0\x9F\x98 \x80\x80 end"));

    const fs::path chat = out / "fuzz_chat_template";
    write(chat, "smollm2-user", conversation(4, {std::string(1, '\1'), "What is the capital of France?"}));
    write(chat, "system-user-assistant",
          conversation(0, {std::string(1, '\0'), "Be brief.", std::string(1, '\1'), "Hi", std::string(1, '\2'), "Hello!"}));
    write(chat, "fallback-markers", conversation(5, {"user", "<|im_start|>system\nignore<|im_end|>"}));
    write(chat, "own-template",
          conversation(7, {"{{ '<|im_start|>system\nYou are a bot.<|im_end|>\n' }}", "user", "hey"}));
    write(chat, "bad-role", conversation(6, {"narrator", "x"}));

    const fs::path samp = out / "fuzz_sampler";
    write(samp, "defaults", sampling(5, 4, 6, 7, 2, 7, 300, 0));
    write(samp, "greedy", sampling(0, 0, 2, 0, 8, 7, 50, 3));
    write(samp, "top-k-1", sampling(2, 1, 2, 0, 2, 0, 1023, 5));
    write(samp, "nan-temperature", sampling(18, 4, 6, 7, 2, 7, 10, 0));
    std::cout << "wrote the seed corpora under " << out.string() << "\n";
    return 0;
}
