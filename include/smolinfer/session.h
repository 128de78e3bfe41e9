// smolinfer's public C++ API: load a Llama GGUF model, tokenize, and
// generate text token by token.
//
//   auto s = smolinfer::Session::open_file("model.gguf", {});
//   auto prompt = s->tokenize_chat({{"user", "Hi!"}});
//   s->generate(prompt, {}, [](const smolinfer::TokenEvent& e) {
//       std::cout << e.text << std::flush;
//       return true;  // false stops
//   });
//
// Every function that takes input from outside (files, text, ids, options)
// validates it and throws smolinfer::Error with a one-line message.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "smolinfer/error.h"
#include "smolinfer/sampling.h"

namespace smolinfer {

using TokenId = int32_t;

// Which attention arithmetic a session reproduces (llama.cpp's -fa option).
// llama.cpp's default, auto, turns flash attention on for the CPU, so that is
// what its programs print by default; off is its standard path. The two
// differ in the last bits, enough to change a greedy continuation now and
// then; each is exact against llama.cpp run the same way.
enum class FlashAttention { Auto, On, Off };

// "auto", "on", "off".
const char* flash_attention_name(FlashAttention f);
// The option from "auto", "on" or "off" (also "1"/"0", "true"/"false"),
// else nullopt.
std::optional<FlashAttention> parse_flash_attention(std::string_view text);

struct SessionOptions {
    int threads = 0;     // 0: one per hardware thread
    int context = 0;     // KV cache positions; 0: min(4096, the model's training context).
                         // More than the model's training context, or a KV cache this process
                         // cannot allocate: open_* throws smolinfer::Error naming the sizes.
    int batch = 64;      // prompt tokens evaluated per forward pass
    // Compute bit for bit what llama.cpp computes. Only the plain SIMD128
    // WebAssembly build has a choice: there, false multiplies then adds
    // where llama.cpp fuses (several times faster, results differ in the
    // last bits); every other build is exact at full speed.
    bool exact = true;
    FlashAttention flash_attention = FlashAttention::Auto;
    // Sliding-window layers (Gemma 3) keep a cache of the whole context
    // instead of a ring of the window plus 512 positions (llama.cpp's
    // --swa-full): more memory; a prompt sharing only its start with a much
    // longer earlier one can then still reuse it.
    bool swa_full = false;
    // The thread count of the llama.cpp run to reproduce: with flash
    // attention, llama.cpp splits the keys of a token it decodes alone
    // between its threads once more than 256 positions are cached, so the
    // last bits of its output depend on that count. 0: `threads`.
    int reference_threads = 0;
    // llama.cpp's n_ubatch of that run (512 and up): it sizes the
    // sliding-window layers' ring (window + n_ubatch cells, padded to 256),
    // whose cell order flash attention follows. (node-llama-cpp runs
    // sliding-window models with n_ubatch = its batch size + 1.)
    int reference_ubatch = 512;
    // A chat template used instead of the file's (llama-server's
    // --chat-template-file); it also replaces a tool_use variant. One the
    // Jinja interpreter cannot parse is an Error at load (a file's own such
    // template falls back to ChatML with a warning).
    std::optional<std::string> chat_template;
    // open_file: map the model file and use its bytes in place (llama.cpp's
    // default, --mmap) instead of reading it into private memory with
    // transparent huge pages. Mapped weights stay in the page cache, which
    // the kernel may reclaim; read ones streamed faster when decoding
    // (SmolLM2-135M Q4_1, one thread, a Zen 3 KVM host: about 7%).
    bool map_file = false;
};

struct ModelInfo {
    std::string name;
    std::string architecture;  // general.architecture: the model's family ("llama")
    std::string weight_types;  // e.g. "Q4_1 x210, F32 x61, Q8_0 x1"
    std::string file_type;     // general.file_type as llama.cpp names it ("Q4_K_M"); "" when absent or unknown
    std::string dominant_type; // the tensor type holding the most bytes ("Q4_K")
    uint64_t parameters = 0;   // elements of all tensors (as llama.cpp's llama_model_n_params)
    uint64_t file_bytes = 0;   // all files together
    int file_parts = 1;        // files of a split model (gguf-split), else 1
    int n_vocab = 0;
    int n_ctx_train = 0;
    int n_layer = 0;
    int n_embd = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int n_ff = 0;
    double vocab_load_ms = 0;  // reading the vocabulary and building the tokenizer
    uint64_t vocab_bytes = 0;  // the vocabulary's memory (Vocab::memory_bytes, an estimate)
    // Embeddings: the file's pooling ("none", "mean", "cls", "last", "rank")
    // and the length of an embedding. An encoder (bert, nomic-bert,
    // gemma-embedding) makes embeddings only; a decoder can do both.
    std::string pooling;
    int n_embd_out = 0;
    bool encoder = false;
};

// A function call the assistant made (OpenAI's tool_calls[i]): `arguments`
// is JSON text.
struct ToolCall {
    std::string id;
    std::string name;
    std::string arguments;
};

struct ChatMessage {
    std::string role;  // "system", "user", "assistant" or "tool"
    std::string content;
    // Defaulted so that {role, content} stays a complete initializer.
    std::vector<ToolCall> tool_calls = {};  // assistant
    std::string tool_call_id = {};          // tool: the call this answers
    std::string name = {};                  // tool: the function's name
};

// A function the model may call (OpenAI's tools[i].function): `parameters`
// is its JSON Schema as JSON text ("" = {}).
struct Tool {
    std::string name;
    std::string description;
    std::string parameters;
};

struct GenerateOptions {
    int max_tokens = 256;
    SamplingParams sampling;
    bool ignore_eos = false;  // keep going past end-of-generation tokens
    // Generation ends where one of these strings appears in the text (stop
    // reason StopString); the text before it is emitted, the stop string
    // never, and text that could start one is held back until it cannot.
    std::vector<std::string> stop;
    // Log-probabilities for every sampled token (TokenEvent::logprobs and
    // GenerationStats::logprobs) with the top_logprobs (0..20) most likely
    // alternatives. Off: nothing is computed or stored.
    bool logprobs = false;
    int top_logprobs = 0;
    // A GBNF grammar (llama.cpp's format) the output must follow; "": none.
    // A malformed grammar makes start()/generate() throw smolinfer::Error.
    std::string grammar;
    // A JSON Schema (text) the output must follow, turned into a grammar as
    // llama.cpp's json-schema-to-grammar does; "": none. An unsupported
    // keyword makes start()/generate() throw, naming it. Not with `grammar`.
    std::string json_schema;
    // Lazy grammar (llama.cpp's grammar triggers): with any, `grammar` does
    // not constrain until one of these strings appears in the output; it
    // then constrains from that string's start on (the text before is free).
    std::vector<std::string> grammar_triggers;
};

// One step of streamed output. `text` is whole UTF-8 characters only: bytes
// of a character split across tokens are held back until it is complete.
// The last event of a generation may carry held-back bytes with token = -1.
// With stop strings, text is also held back while it could start one, so
// an event's text need not be its token's.
struct TokenEvent {
    TokenId token;
    std::string_view text;
    // The sampled token's log-probabilities when GenerateOptions::logprobs,
    // else (and for token = -1) null. Valid as long as `text`.
    const TokenLogprobs* logprobs = nullptr;
};
using TokenCallback = std::function<bool(const TokenEvent&)>;  // return false to stop

// Names (stop_reason_name): "eos", "length", "context", "stopped", "stop",
// "grammar". GrammarExhausted: the grammar allows no token (not even
// end-of-generation).
enum class StopReason { EndOfGeneration, MaxTokens, ContextFull, Stopped, StopString, GrammarExhausted };
const char* stop_reason_name(StopReason r);

struct GenerationStats {
    int prompt_tokens = 0;     // tokens in the prompt
    int reused_tokens = 0;     // prompt tokens whose KV cache was kept from before
    int generated_tokens = 0;  // tokens sampled (the end-of-generation token not counted)
    double prefill_seconds = 0;
    double decode_seconds = 0;
    int decode_evals = 0;  // single-token forward passes timed by decode_seconds
    StopReason stop = StopReason::MaxTokens;
    std::vector<TokenId> tokens;  // the generated ids
    std::vector<TokenLogprobs> logprobs;  // one per generated id when GenerateOptions::logprobs, else empty

    double prefill_tps() const { return prefill_seconds > 0 ? (prompt_tokens - reused_tokens) / prefill_seconds : 0; }
    double decode_tps() const { return decode_seconds > 0 ? decode_evals / decode_seconds : 0; }
};

class Session;
class BatchGenerator;

// v / |v| as llama.cpp's common_embd_normalize(2) computes it (a zero
// vector stays zero): what Session::embed returns by default.
std::vector<float> normalized(std::vector<float> v);

// A generation advanced one token at a time (for callers that must keep
// their own event loop running between tokens, like the browser worker).
// The session must outlive it and must not be used while it runs.
class Generation {
public:
    ~Generation();
    Generation(const Generation&) = delete;
    Generation& operator=(const Generation&) = delete;

    // The next piece of output, or nullopt once the generation has ended
    // (stats().stop says why). The event's text stays valid until the next call.
    std::optional<TokenEvent> next();

    // Ends the generation now (stop reason Stopped); held-back bytes are dropped.
    void cancel();

    const GenerationStats& stats() const;

    struct State;  // defined in the library

private:
    friend class Session;
    explicit Generation(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

class Session {
public:
    // A split model (llama.cpp's gguf-split: "<name>-00001-of-00003.gguf", ...)
    // opens from its first part; the other parts are found beside it by name.
    static std::unique_ptr<Session> open_file(const std::string& path, const SessionOptions& options);
    static std::unique_ptr<Session> open_bytes(std::vector<uint8_t> bytes, const SessionOptions& options);
    // Takes ownership of `size` bytes from malloc, freed with free() (also
    // when opening fails).
    static std::unique_ptr<Session> open_malloc(uint8_t* data, size_t size, const SessionOptions& options);
    // The files of a split model in order, each from malloc (all freed with
    // free(), also when opening fails).
    struct MallocPart {
        uint8_t* data;
        size_t size;
    };
    static std::unique_ptr<Session> open_malloc_parts(std::span<const MallocPart> parts, const SessionOptions& options);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const ModelInfo& info() const;
    int threads() const;
    int context() const;
    int batch() const;  // most tokens one evaluate(..., all_logits = true) takes
    bool flash_attention() const;  // SessionOptions::flash_attention resolved (auto: on)
    size_t memory_bytes() const;  // KV cache and scratch (the weights stay in the file mapping)
    // The matmul kernels in use ("avx2", "wasm-relaxed-simd", "wasm-simd128-fast", ...).
    std::string kernels() const;
    // Non-empty when the chat template was not recognized and ChatML is used.
    const std::string& chat_template_warning() const;
    // Problems with the file that did not stop it from loading.
    const std::vector<std::string>& warnings() const;

    // add_special: BOS/EOS as the model asks. parse_special: control-token
    // texts become those tokens.
    std::vector<TokenId> tokenize(std::string_view text, bool add_special = true, bool parse_special = true) const;
    // The conversation in the model's chat format, ready for generate().
    // Throws smolinfer::Error when the file has no chat template (a base model).
    std::vector<TokenId> tokenize_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
    // With tools the template describes them (when it knows how; SmolLM2's
    // does not and ignores them, as llama.cpp's rendering does). A file's
    // tokenizer.chat_template.tool_use is used when `tools` is non-empty.
    std::vector<TokenId> tokenize_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                       const std::vector<Tool>& tools) const;
    // The same prompt as text (llama-server's /apply-template): the BOS text
    // the tokenizer adds anyway is left out.
    std::string render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                            const std::vector<Tool>& tools) const;
    // How the chat template used for a request with (or without) tools
    // writes tool calls (smolinfer/tools.h; a model without a template: none).
    const struct ToolSyntax& tool_syntax(bool with_tools) const;
    // special: render control tokens as their text.
    std::string detokenize(std::span<const TokenId> ids, bool special = false) const;
    bool is_end_of_generation(TokenId id) const;

    // Evaluates `prompt` and samples up to max_tokens. Where the prompt
    // starts with tokens already in the KV cache (the previous prompt, in a
    // chat), their cells are kept as far as a fresh session would compute
    // them the same way, so that tokens and log-probabilities are bit for
    // bit a fresh session's: an answer's cells, decoded one at a time, are
    // computed again as prompt tokens, and so is a repeated prompt's last
    // token (reused_tokens counts the cells kept).
    // Limits: a prompt longer than context() throws smolinfer::Error naming
    // both sizes, before anything is evaluated. Generation that fills the
    // context stops with StopReason::ContextFull after context() -
    // prompt.size() + 1 tokens (the last sampled token is not evaluated);
    // nothing is ever truncated or shifted out of the context silently.
    GenerationStats generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                             const TokenCallback& on_token);

    // The same, one token per call: evaluates the prompt now (so that a bad
    // prompt or option throws here) and returns the generation.
    std::unique_ptr<Generation> start(std::span<const TokenId> prompt, const GenerateOptions& options);

    // Makes a running generate() return after the current token. Thread-safe.
    void stop();

    // The embedding of `text` as llama.cpp computes it (llama_get_embeddings_seq;
    // with no pooling in the file, the last token's final hidden state, as
    // its programs return), L2-normalised unless `normalize` is false (what
    // llama.cpp's --embd-normalize 2 and OpenAI's API give). The text is
    // tokenized with the model's special tokens added ([CLS] ... [SEP],
    // BOS/EOS) and its own text never read as special tokens. An encoder
    // sees the whole text at once: it must fit the context. Throws
    // smolinfer::Error for an empty text, a text longer than the context
    // (naming both lengths), or a model whose pooling cannot give one
    // (rank: a reranker; mean or cls on a decoder). On a decoder it empties
    // the sequence (the KV cache is reused from position 0).
    std::vector<float> embed(std::string_view text, bool normalize = true);
    // The same for tokens already made (special tokens included as wanted).
    std::vector<float> embed_tokens(std::span<const TokenId> tokens, bool normalize = true);

    // Low level: appends tokens to the sequence and returns their logits, one
    // row of n_vocab per token when all_logits, else the last token's row.
    // The span is valid until the next call. One call computes what one
    // llama_decode call of these tokens computes in llama.cpp (with flash
    // attention the size of its 512-token micro-batches picks the arithmetic).
    // With all_logits, at most batch() tokens.
    std::span<const float> evaluate(std::span<const TokenId> tokens, bool all_logits);
    // Forgets the sequence (the KV cache is reused from position 0).
    void reset();
    const std::vector<TokenId>& sequence() const;

    struct Impl;  // defined in the library; not part of the API

private:
    friend class BatchGenerator;
    explicit Session(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace smolinfer
