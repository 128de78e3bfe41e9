// A small Llama GGUF with random weights and a real byte-level BPE
// vocabulary, written by our own GGUF writer: the seed for crafted-file
// tests, and a model the forward pass can be checked on without the real one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "quant/types.h"
#include "text/vocab.h"

namespace smolinfer::test {

struct TinyModelSpec {
    int n_embd = 64;
    int n_layer = 2;
    int n_head = 4;
    int n_head_kv = 2;
    int n_ff = 128;
    int n_ctx = 256;
    quant::Type weight_type = quant::Type::Q8_0;
    bool tied_output = true;
    uint32_t seed = 42;
    bool add_bos = false;  // tokenizer.ggml.add_bos_token
    std::string chat_template =
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
        "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
};

// The file's writer, so a test can change any part before serializing.
gguf::Writer tiny_llama_writer(const TinyModelSpec& spec = {});

std::vector<uint8_t> tiny_llama(const TinyModelSpec& spec = {});

// The vocabulary of tiny_llama() (tokens 0-2 are the control tokens
// <|endoftext|>, <|im_start|>, <|im_end|>; 3..258 the 256 single bytes).
const text::Vocab& tiny_vocab();

// Writes bytes to a fresh file under the system temp directory; returns its path.
std::string write_temp_file(const std::vector<uint8_t>& bytes, const std::string& name);

}  // namespace smolinfer::test
