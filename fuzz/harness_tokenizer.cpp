// fuzz_tokenizer: arbitrary bytes as text to tokenize and as token ids to
// detokenize (see harness.h).
#include <array>
#include <climits>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "harness.h"
#include "input.h"
#include "utf8.h"
#include "runtime/file_bytes.h"
#include "smolinfer/error.h"
#include "support/tiny_model.h"
#include "text/byte_encoding.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace smolinfer::fuzz {

namespace {

// SmolLM2's vocabulary when $SMOLINFER_MODEL names the model file; else null.
const text::Vocab* real_vocab() {
    struct Real {
        std::shared_ptr<const runtime::FileBytes> bytes;
        std::unique_ptr<gguf::File> file;
        std::unique_ptr<text::Vocab> vocab;
        Real() {
            const char* path = std::getenv("SMOLINFER_MODEL");
            if (path == nullptr || *path == '\0') return;
            bytes = runtime::FileBytes::map(path);
            file = std::make_unique<gguf::File>(gguf::File::parse(bytes->bytes()));
            vocab = std::make_unique<text::Vocab>(text::Vocab::from_metadata(file->metadata()));
        }
    };
    static const Real real;
    return real.vocab.get();
}

// One token id from two input bytes: mostly near the vocabulary (some just
// outside it), sometimes an extreme value.
text::TokenId next_id(Input& in, size_t n_vocab) {
    const auto v = in.take<uint16_t>();
    static constexpr text::TokenId kExtremes[] = {INT_MIN, INT_MIN + 1, -2, -1, INT_MAX - 1, INT_MAX};
    if (v >= 0xFFF0) {
        const unsigned k = v - 0xFFF0u;
        if (k < std::size(kExtremes)) return kExtremes[k];
        return text::TokenId(n_vocab + (k - std::size(kExtremes)));  // n_vocab, n_vocab + 1, ...
    }
    return text::TokenId(v % (n_vocab + 4)) - 2;  // -2 .. n_vocab + 1
}

// Whether every byte of `text` has a single-byte token. Tokenizers drop a
// byte without one (as llama.cpp does; SmolLM2 lacks 21 of the 256, e.g. 0x04).
bool bytes_have_tokens(const text::Vocab& vocab, std::string_view text) {
    struct Table {
        const text::Vocab* vocab = nullptr;
        std::array<bool, 256> has{};
    };
    static Table tables[2];
    Table* t = &tables[0];
    if (t->vocab != nullptr && t->vocab != &vocab) t = &tables[1];
    if (t->vocab != &vocab) {
        t->vocab = &vocab;
        for (int b = 0; b < 256; ++b) t->has[size_t(b)] = vocab.find(text::byte_to_symbol(uint8_t(b))).has_value();
    }
    for (const char c : text) {
        if (!t->has[uint8_t(c)]) return false;
    }
    return true;
}

void encode_checks(const text::Vocab& vocab, std::string_view text, bool add_special, bool parse_special) {
    const text::Tokenizer tok(vocab);
    const std::vector<text::TokenId> ids = tok.encode(text, add_special, parse_special);
    for (const text::TokenId id : ids) check(vocab.valid(id), "encode returned id " + std::to_string(id));
    const std::string back = text::detokenize(vocab, ids, /*special=*/true);
    // Valid UTF-8 comes back byte for byte when each of its bytes has a
    // token and nothing was added.
    if (!add_special && valid_utf8(text) && bytes_have_tokens(vocab, text)) {
        check(back == text, "detokenize(tokenize(s)) != s");
    }
    // The streamed pieces add up to the whole.
    text::StreamDecoder stream(vocab, true);
    std::string streamed;
    for (const text::TokenId id : ids) streamed += stream.push(id);
    streamed += stream.finish();
    check(streamed == back, "streamed detokenization differs from detokenize");
}

void decode_checks(const text::Vocab& vocab, Input& in, bool special) {
    std::vector<text::TokenId> ids;
    while (!in.empty() && ids.size() < 4096) ids.push_back(next_id(in, vocab.size()));

    bool all_valid = true;
    for (const text::TokenId id : ids) all_valid = all_valid && vocab.valid(id);
    std::string whole;
    bool threw = false;
    try {
        whole = text::detokenize(vocab, ids, special);
    } catch (const Error&) {
        threw = true;
    }
    check(threw == !all_valid, "detokenize must throw exactly when an id is out of range");

    // The stream decoder rejects a bad id and keeps going with the rest.
    text::StreamDecoder stream(vocab, special);
    std::string streamed;
    std::vector<text::TokenId> valid_ids;
    for (const text::TokenId id : ids) {
        try {
            streamed += stream.push(id);
            check(vocab.valid(id), "StreamDecoder accepted id " + std::to_string(id));
            valid_ids.push_back(id);
        } catch (const Error&) {
            check(!vocab.valid(id), "StreamDecoder rejected valid id " + std::to_string(id));
        }
    }
    streamed += stream.finish();
    check(streamed == text::detokenize(vocab, valid_ids, special), "streamed text differs from detokenize");
}

}  // namespace

void tokenizer_one(Bytes data) {
    Input in(data);
    const auto flags = in.take<uint8_t>();
    const text::Vocab* vocab = &test::tiny_vocab();
    if ((flags & 1) != 0) {
        if (const text::Vocab* real = real_vocab()) vocab = real;
    }
    const bool add_special = (flags & 2) != 0;
    const bool parse_special = (flags & 4) != 0;
    const bool special = (flags & 8) != 0;

    const std::string_view text = in.rest();
    encode_checks(*vocab, text, add_special, parse_special);
    encode_checks(*vocab, text, add_special, !parse_special);

    Input ids(data.subspan(data.empty() ? 0 : 1));
    decode_checks(*vocab, ids, special);
}

}  // namespace smolinfer::fuzz
