#include "smolinfer/session.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <new>

#include "api/model_files.h"
#include "api/model_summary.h"
#include "api/session_impl.h"
#include "text/detokenizer.h"
#include "runtime/machine.h"

namespace smolinfer {

namespace {

// make(), and the milliseconds it took in `ms`.
template <class Make>
auto timed(double& ms, Make make) {
    const auto t0 = std::chrono::steady_clock::now();
    auto made = make();
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return made;
}

constexpr int kDefaultContext = 4096;

}  // namespace

const char* stop_reason_name(StopReason r) {
    switch (r) {
        case StopReason::EndOfGeneration: return "eos";
        case StopReason::MaxTokens: return "length";
        case StopReason::ContextFull: return "context";
        case StopReason::Stopped: return "stopped";
        case StopReason::StopString: return "stop";
        case StopReason::GrammarExhausted: return "grammar";
    }
    return "unknown";
}

const char* flash_attention_name(FlashAttention f) {
    switch (f) {
        case FlashAttention::Auto: return "auto";
        case FlashAttention::On: return "on";
        case FlashAttention::Off: return "off";
    }
    return "unknown";
}

std::optional<FlashAttention> parse_flash_attention(std::string_view text) {
    if (text == "auto") return FlashAttention::Auto;
    if (text == "on" || text == "1" || text == "true") return FlashAttention::On;
    if (text == "off" || text == "0" || text == "false") return FlashAttention::Off;
    return std::nullopt;
}

model::KvCache::ValueLayout value_layout(FlashAttention f) {
    // auto: on, as llama.cpp decides for its CPU backend.
    return f == FlashAttention::Off ? model::KvCache::ValueLayout::Transposed : model::KvCache::ValueLayout::Rows;
}

Session::Impl::Impl(std::shared_ptr<const model::LlamaModel> m, const SessionOptions& o, int n_ctx)
    : model(m),
      vocab(timed(info.vocab_load_ms, [&] { return text::Vocab::from_metadata(m->file().metadata(), &warnings); })),
      pool(o.threads > 0 ? o.threads : runtime::default_thread_count()),
      // An encoder reads a whole sequence in one pass, which keeps every position.
      forward(m, n_ctx, m->config().encoder ? n_ctx : o.batch),
      cache(m->config().n_layer, n_ctx, m->config().kv_dim(), value_layout(o.flash_attention),
            o.swa_full || m->config().encoder ? 0 : m->config().swa_ring(n_ctx, o.reference_ubatch),
            m->config().swa_layers, m->config().n_swa) {
    cells.tokens.reserve(size_t(n_ctx));
    cells.arithmetic.reserve(size_t(n_ctx));
    forward.set_reference_threads(o.reference_threads);
    double tokenizer_ms = 0;
    tokenizer = timed(tokenizer_ms, [&] { return std::make_unique<text::Tokenizer>(vocab); });
    info.vocab_load_ms += tokenizer_ms;
    info.vocab_bytes = vocab.memory_bytes();
    text::ChatTokens chat_tokens;
    if (vocab.bos()) chat_tokens.bos = vocab.text(*vocab.bos());
    if (vocab.eos()) chat_tokens.eos = vocab.text(*vocab.eos());
    const auto& md = m->file().metadata();
    chat = o.chat_template
               ? text::ChatTemplate::from_caller(*o.chat_template, chat_tokens)
               : text::ChatTemplate::from_template(md.get_string("tokenizer.chat_template"), &chat_warning, chat_tokens,
                                                   md.get_string("tokenizer.chat_template.tool_use"));
    const model::LlamaConfig& c = m->config();
    if (vocab.size() != size_t(c.n_vocab)) {
        throw Error("the vocabulary has " + std::to_string(vocab.size()) + " tokens but token_embd.weight has " +
                    std::to_string(c.n_vocab) + " rows");
    }
    info.name = c.name;
    info.architecture = c.architecture;
    const ModelSummary summary = summarize(m->file(), &warnings);
    info.weight_types = summary.weight_types;
    info.parameters = summary.parameters;
    info.file_type = summary.file_type;
    info.dominant_type = summary.dominant_type;
    info.file_bytes = m->file().total_bytes();
    info.file_parts = int(m->file().part_count());
    info.n_vocab = c.n_vocab;
    info.n_ctx_train = c.n_ctx_train;
    info.n_layer = c.n_layer;
    info.n_embd = c.n_embd;
    info.n_head = c.n_head;
    info.n_head_kv = c.n_head_kv;
    info.n_ff = c.n_ff;
    info.pooling = model::pooling_name(c.pooling);
    info.n_embd_out = c.n_embd;
    info.encoder = c.encoder;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

namespace {

std::unique_ptr<Session::Impl> open_model(std::shared_ptr<const runtime::FileBytes> bytes, const SessionOptions& o) {
    runtime::require_build_cpu_features();
    if (o.context < 0) throw Error("bad option: context must be >= 0");
    if (o.batch < 1 || o.batch > 4096) throw Error("bad option: batch must be in 1..4096");
    if (o.threads < 0 || o.threads > 256) throw Error("bad option: threads must be in 0..256");
    quant::Isa isa = quant::best_isa();
    if (!o.exact && isa == quant::Isa::WasmSimd) isa = quant::Isa::WasmSimdFast;
    auto model = model::LlamaModel::load(std::move(bytes), isa);
    const int n_ctx_train = model->config().n_ctx_train;
    const int n_ctx = o.context > 0 ? o.context : std::min(kDefaultContext, n_ctx_train);
    if (n_ctx > n_ctx_train) {
        throw Error("context " + std::to_string(n_ctx) + " exceeds the model's training context " +
                    std::to_string(n_ctx_train));
    }
    if (o.reference_threads < 0) throw Error("reference_threads must be 0 or more");
    if (o.reference_ubatch < 512 || o.reference_ubatch > (1 << 20)) {
        throw Error("reference_ubatch must be 512 to 1048576 (smaller micro-batches are not reproduced)");
    }
    const model::LlamaConfig& c = model->config();
    const uint64_t kv_bytes = model::KvCache::bytes_for(c.n_layer, n_ctx, c.kv_dim(), value_layout(o.flash_attention),
                                                        o.swa_full || c.encoder ? 0 : c.swa_ring(n_ctx, o.reference_ubatch),
                                                        c.swa_layers);
    const uint64_t memory = runtime::physical_memory_bytes();
    if (memory != 0 && kv_bytes > memory) {
        throw Error("a context of " + std::to_string(n_ctx) + " tokens needs " + std::to_string(kv_bytes >> 20) +
                    " MiB of KV cache, more than this machine's " + std::to_string(memory >> 20) +
                    " MiB (use a smaller context, -c)");
    }
    try {
        return std::make_unique<Session::Impl>(model, o, n_ctx);
    } catch (const std::bad_alloc&) {
        // The machine has the memory but this process cannot have it (an
        // address-space limit, a 32-bit or wasm heap): still name the sizes.
        throw Error("cannot allocate a context of " + std::to_string(n_ctx) + " tokens (" +
                    std::to_string(kv_bytes >> 20) + " MiB of KV cache): not enough memory (use a smaller context, -c)");
    }
}

}  // namespace

std::unique_ptr<Session> Session::open_file(const std::string& path, const SessionOptions& options) {
    // The caller's template is checked before the model is read (it is the
    // caller's mistake, not the file's).
    if (options.chat_template) text::ChatTemplate::from_caller(*options.chat_template);
    try {
        return std::unique_ptr<Session>(new Session(open_model(open_model_files(path, options.map_file), options)));
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
}

std::unique_ptr<Session> Session::open_malloc(uint8_t* data, size_t size, const SessionOptions& options) {
    return std::unique_ptr<Session>(new Session(open_model(runtime::FileBytes::adopt_malloc(data, size), options)));
}

std::unique_ptr<Session> Session::open_malloc_parts(std::span<const MallocPart> parts, const SessionOptions& options) {
    std::vector<std::shared_ptr<const runtime::FileBytes>> owned;
    owned.reserve(parts.size());
    for (const MallocPart& p : parts) owned.push_back(runtime::FileBytes::adopt_malloc(p.data, p.size));
    return std::unique_ptr<Session>(new Session(open_model(runtime::FileBytes::join(std::move(owned)), options)));
}

std::unique_ptr<Session> Session::open_bytes(std::vector<uint8_t> buffer, const SessionOptions& options) {
    return std::unique_ptr<Session>(new Session(open_model(runtime::FileBytes::adopt(std::move(buffer)), options)));
}

const ModelInfo& Session::info() const { return impl_->info; }
int Session::threads() const { return impl_->pool.size(); }
int Session::context() const { return impl_->cache.n_ctx(); }
int Session::batch() const { return impl_->forward.max_batch(); }
bool Session::flash_attention() const { return impl_->cache.layout() == model::KvCache::ValueLayout::Rows; }
size_t Session::memory_bytes() const { return impl_->forward.memory_bytes() + size_t(impl_->cache.bytes()); }
std::string Session::kernels() const { return std::string(quant::isa_name(impl_->model->isa())); }
const std::string& Session::chat_template_warning() const { return impl_->chat_warning; }
const std::vector<std::string>& Session::warnings() const { return impl_->warnings; }

std::vector<TokenId> Session::tokenize(std::string_view text, bool add_special, bool parse_special) const {
    return impl_->tokenizer->encode(text, add_special, parse_special);
}

std::vector<TokenId> Session::tokenize_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
    return tokenize_chat(messages, add_generation_prompt, {});
}

namespace {

std::vector<text::ChatMessage> text_messages(const std::vector<ChatMessage>& messages) {
    std::vector<text::ChatMessage> out;
    out.reserve(messages.size());
    for (const auto& msg : messages) {
        text::ChatMessage t{msg.role, msg.content};
        for (const ToolCall& c : msg.tool_calls) t.tool_calls.push_back({c.id, c.name, c.arguments});
        t.tool_call_id = msg.tool_call_id;
        t.name = msg.name;
        out.push_back(std::move(t));
    }
    return out;
}

}  // namespace

std::vector<text::PromptPiece> Session::Impl::chat_pieces(const std::vector<ChatMessage>& messages,
                                                          bool add_generation_prompt,
                                                          const std::vector<Tool>& tools) const {
    if (model->config().encoder) refuse_encoder(model->config());
    // A base model (Gemma 3 270M, ...) was never taught a chat format:
    // guessing one (llama.cpp takes ChatML) gives answers that look broken.
    if (!chat.present()) {
        throw Error("the model has no chat template (tokenizer.chat_template): it is a base model, not a chat "
                    "model; give it text to continue instead of chat messages");
    }
    std::vector<text::ChatTool> t;
    t.reserve(tools.size());
    for (const Tool& tool : tools) t.push_back({tool.name, tool.description, tool.parameters});
    std::vector<text::PromptPiece> pieces = chat.render(text_messages(messages), add_generation_prompt, std::time(nullptr), t);
    // Templates that write bos_token themselves (Llama 3, Llama 2, ...) would
    // get a second BOS from the tokenizer: as llama.cpp does, the rendered
    // BOS text is dropped when the vocabulary adds BOS anyway.
    if (vocab.add_bos() && vocab.bos() && !pieces.empty() && pieces.front().parse_special) {
        const std::string& bos = vocab.text(*vocab.bos());
        std::string& first = pieces.front().text;
        if (!bos.empty() && first.compare(0, bos.size(), bos) == 0) first.erase(0, bos.size());
    }
    return pieces;
}

std::vector<TokenId> Session::tokenize_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                            const std::vector<Tool>& tools) const {
    return impl_->tokenizer->encode_pieces(impl_->chat_pieces(messages, add_generation_prompt, tools), true);
}

const ToolSyntax& Session::tool_syntax(bool with_tools) const { return impl_->chat.tool_syntax(with_tools); }

std::string Session::render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                 const std::vector<Tool>& tools) const {
    std::string out;
    for (const auto& p : impl_->chat_pieces(messages, add_generation_prompt, tools)) out += p.text;
    return out;
}

std::string Session::detokenize(std::span<const TokenId> ids, bool special) const {
    return text::detokenize(impl_->vocab, ids, special);
}

bool Session::is_end_of_generation(TokenId id) const { return impl_->vocab.is_end_of_generation(id); }

void Session::stop() { impl_->stop_requested.store(true); }

std::span<const float> Session::Impl::read(std::span<const TokenId> request, size_t from, bool all_logits,
                                           model::PassOutput output) {
    const std::span<const TokenId> tokens = request.subspan(from);
    check_ids(tokens);
    if (tokens.empty()) throw Error("evaluate: no tokens");
    if (model->config().encoder) refuse_encoder(model->config());
    const size_t room = size_t(cache.n_ctx()) - cells.size();
    if (tokens.size() > room) {
        throw Error("the context holds " + std::to_string(cache.n_ctx()) + " tokens: " + std::to_string(cells.size()) +
                    " are in use and " + std::to_string(tokens.size()) + " more do not fit (use a larger context, -c)");
    }
    const size_t batch = size_t(forward.max_batch());
    if (all_logits && tokens.size() > batch) {
        throw Error("evaluate: with all logits, at most " + std::to_string(batch) + " tokens per call");
    }
    // Chunks never cross llama.cpp's micro-batches, whose sizes pick its
    // flash-attention path.
    std::span<const float> logits;
    for (size_t at = from; at < request.size();) {
        const size_t end = model::request_pass(at, request.size(), batch).end;
        const auto chunk = request.subspan(at, end - at);
        const model::FlashPath path = model::flash_path_for(at, request.size());
        logits = forward.run(pool, cache, chunk, int(cells.size()), all_logits, path, output);
        for (size_t j = 0; j < chunk.size(); ++j) cells.push(chunk[j], rule.of(int(j), int(chunk.size()), path));
        at = end;
    }
    return logits;
}

std::span<const float> Session::evaluate(std::span<const TokenId> tokens, bool all_logits) {
    return impl_->evaluate(tokens, all_logits);
}

void Session::reset() {
    impl_->cells.clear();
    impl_->cache.clear();
}

const std::vector<TokenId>& Session::sequence() const { return impl_->cells.tokens; }

GenerationStats Session::generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                                  const TokenCallback& on_token) {
    const auto generation = start(prompt, options);
    while (const auto event = generation->next()) {
        if (on_token && !on_token(*event)) {
            generation->cancel();
            break;
        }
    }
    return generation->stats();
}

}  // namespace smolinfer
