// fuzz_gguf: a whole GGUF file from bytes, then everything the engine does
// with a file that parses (see harness.h).
#include <algorithm>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "harness.h"
#include "model/config.h"
#include "model/weights.h"
#include "smolinfer/error.h"
#include "smolinfer/session.h"
#include "text/vocab.h"

namespace smolinfer::fuzz {

namespace {

// Every typed getter on every key: a wrong type must be an Error, never a
// bad variant access or a read outside the file.
void read_all_metadata(const gguf::Metadata& md) {
    for (const std::string& key : md.keys()) {
        const gguf::Value* v = md.find(key);
        check(v != nullptr, "metadata key listed but not found");
        auto attempt = [](auto&& get) {
            try {
                get();
            } catch (const Error&) {
            }
        };
        attempt([&] { md.get_uint(key); });
        attempt([&] { md.get_u32(key); });
        attempt([&] { md.get_int(key); });
        attempt([&] { md.get_f32(key); });
        attempt([&] { md.get_bool(key); });
        attempt([&] { md.get_string(key); });
        attempt([&] { md.get_string_array(key); });
        attempt([&] { md.get_int_array(key); });
        if (v->type == gguf::ValueType::Array) {
            for (uint64_t i = 0; i < v->count; ++i) v->item(i);
        }
    }
}

void check_tensors(const gguf::File& file, Bytes bytes) {
    for (const gguf::TensorInfo& t : file.tensors()) {
        check(t.data >= bytes.data() && t.n_bytes <= bytes.size() &&
                  uint64_t(t.data - bytes.data()) <= bytes.size() - t.n_bytes,
              "tensor " + t.name + " lies outside the file");
        check(file.find_tensor(t.name) == &t, "tensor index");
        check(t.ne[0] != 0 && t.n_elements % t.ne[0] == 0, "tensor shape");
    }
}

void run_session(Bytes data, const model::LlamaConfig& config) {
    SessionOptions options;
    options.threads = 1;
    options.context = std::min(config.n_ctx_train, 8);
    options.batch = 4;
    const auto session = Session::open_bytes(std::vector<uint8_t>(data.begin(), data.end()), options);
    const int n_vocab = session->info().n_vocab;
    check(n_vocab > 0, "empty vocabulary");

    std::vector<TokenId> prompt = session->tokenize("Hi <|im_start|>user\n\xC3\xA9\xF0\x9F\x98", true, true);
    try {
        const auto chat = session->tokenize_chat({{"user", "Hi"}});
        for (const TokenId id : chat) check(id >= 0 && id < n_vocab, "chat token out of range");
    } catch (const Error&) {
    }
    for (const TokenId id : prompt) check(id >= 0 && id < n_vocab, "prompt token out of range");
    session->detokenize(prompt, true);
    if (prompt.empty()) prompt.push_back(0);
    if (prompt.size() > size_t(session->context() - 1)) prompt.resize(size_t(session->context() - 1));
    if (prompt.empty()) return;  // a context of one: nothing to generate into

    GenerateOptions gen;
    gen.max_tokens = 2;
    gen.sampling.seed = 1;
    const GenerationStats stats = session->generate(prompt, gen, [&](const TokenEvent& e) {
        check(e.token >= -1 && e.token < n_vocab, "generated token out of range");
        return true;
    });
    for (const TokenId id : stats.tokens) check(id >= 0 && id < n_vocab, "generated token out of range");
    session->detokenize(stats.tokens);

    session->reset();
    const TokenId last = TokenId(n_vocab - 1);
    const auto logits = session->evaluate(std::span<const TokenId>(&last, 1), true);
    check(logits.size() == size_t(n_vocab), "logits size");
}

}  // namespace

void gguf_one(Bytes data) {
    gguf::File file;
    try {
        file = gguf::File::parse(data);
    } catch (const Error&) {
        return;
    }
    check_tensors(file, data);
    read_all_metadata(file.metadata());

    model::LlamaConfig config;
    try {
        config = model::LlamaConfig::from_gguf(file);
        model::LlamaWeights::bind(file, config);
        text::Vocab::from_metadata(file.metadata());
    } catch (const Error&) {
        return;
    }
    try {
        run_session(data, config);
    } catch (const Error&) {
    }
}

}  // namespace smolinfer::fuzz
