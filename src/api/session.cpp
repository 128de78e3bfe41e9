#include "smolinfer/session.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "model/llama.h"
#include "runtime/machine.h"
#include "runtime/thread_pool.h"
#include "sample/sampler.h"
#include "text/chat_template.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace smolinfer {

namespace {

constexpr int kDefaultContext = 4096;

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string weight_types(const gguf::File& file) {
    std::map<std::string, int> counts;
    for (const auto& t : file.tensors()) counts[std::string(t.traits.name)]++;
    std::vector<std::pair<int, std::string>> sorted;
    for (const auto& [name, n] : counts) sorted.emplace_back(-n, name);
    std::sort(sorted.begin(), sorted.end());
    std::string out;
    for (const auto& [neg, name] : sorted) {
        if (!out.empty()) out += ", ";
        out += name + " x" + std::to_string(-neg);
    }
    return out;
}

}  // namespace

const char* stop_reason_name(StopReason r) {
    switch (r) {
        case StopReason::EndOfGeneration: return "eos";
        case StopReason::MaxTokens: return "length";
        case StopReason::ContextFull: return "context";
        case StopReason::Stopped: return "stopped";
    }
    return "unknown";
}

struct Session::Impl {
    std::shared_ptr<const model::LlamaModel> model;
    std::vector<std::string> warnings;  // before vocab: the vocabulary's loading adds to it
    text::Vocab vocab;
    std::unique_ptr<text::Tokenizer> tokenizer;
    text::ChatTemplate chat;
    std::string chat_warning;
    ModelInfo info;
    runtime::ThreadPool pool;
    model::Forward forward;
    std::vector<TokenId> sequence;  // tokens whose keys and values are in the cache
    std::atomic<bool> stop_requested{false};

    Impl(std::shared_ptr<const model::LlamaModel> m, const SessionOptions& o, int n_ctx)
        : model(m),
          vocab(text::Vocab::from_metadata(m->file().metadata(), &warnings)),
          pool(o.threads > 0 ? o.threads : runtime::default_thread_count()),
          forward(m, n_ctx, o.batch) {
        sequence.reserve(size_t(n_ctx));
        tokenizer = std::make_unique<text::Tokenizer>(vocab);
        chat = text::ChatTemplate::from_template(m->file().metadata().get_string("tokenizer.chat_template"), &chat_warning);
        const model::LlamaConfig& c = m->config();
        if (vocab.size() != size_t(c.n_vocab)) {
            throw Error("the vocabulary has " + std::to_string(vocab.size()) + " tokens but token_embd.weight has " +
                        std::to_string(c.n_vocab) + " rows");
        }
        info.name = c.name;
        info.architecture = c.architecture;
        info.weight_types = weight_types(m->file());
        info.file_bytes = m->file().bytes().size();
        info.n_vocab = c.n_vocab;
        info.n_ctx_train = c.n_ctx_train;
        info.n_layer = c.n_layer;
        info.n_embd = c.n_embd;
        info.n_head = c.n_head;
        info.n_head_kv = c.n_head_kv;
        info.n_ff = c.n_ff;
    }

    void check_ids(std::span<const TokenId> ids) const {
        for (size_t i = 0; i < ids.size(); ++i) {
            if (!vocab.valid(ids[i])) {
                throw Error("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                            " is outside the vocabulary (0.." + std::to_string(vocab.size() - 1) + ")");
            }
        }
    }

    std::span<const float> evaluate(std::span<const TokenId> tokens, bool all_logits) {
        check_ids(tokens);
        if (tokens.empty()) throw Error("evaluate: no tokens");
        const size_t room = size_t(forward.n_ctx()) - sequence.size();
        if (tokens.size() > room) {
            throw Error("the context holds " + std::to_string(forward.n_ctx()) + " tokens: " +
                        std::to_string(sequence.size()) + " are in use and " + std::to_string(tokens.size()) +
                        " more do not fit (use a larger context, -c)");
        }
        const size_t batch = size_t(forward.max_batch());
        if (all_logits && tokens.size() > batch) {
            throw Error("evaluate: with all logits, at most " + std::to_string(batch) + " tokens per call");
        }
        std::span<const float> logits;
        for (size_t at = 0; at < tokens.size(); at += batch) {
            const auto chunk = tokens.subspan(at, std::min(batch, tokens.size() - at));
            logits = forward.run(pool, chunk, int(sequence.size()), all_logits);
            sequence.insert(sequence.end(), chunk.begin(), chunk.end());
        }
        return logits;
    }
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

namespace {

std::unique_ptr<Session::Impl> open_model(std::shared_ptr<const runtime::FileBytes> bytes, const SessionOptions& o) {
    runtime::require_build_cpu_features();
    if (o.context < 0) throw Error("bad option: context must be >= 0");
    if (o.batch < 1 || o.batch > 4096) throw Error("bad option: batch must be in 1..4096");
    if (o.threads < 0 || o.threads > 256) throw Error("bad option: threads must be in 0..256");
    auto model = model::LlamaModel::load(std::move(bytes));
    const int n_ctx_train = model->config().n_ctx_train;
    const int n_ctx = o.context > 0 ? o.context : std::min(kDefaultContext, n_ctx_train);
    if (n_ctx > n_ctx_train) {
        throw Error("context " + std::to_string(n_ctx) + " exceeds the model's training context " +
                    std::to_string(n_ctx_train));
    }
    const model::LlamaConfig& c = model->config();
    const uint64_t kv_bytes = model::KvCache::bytes_for(c.n_layer, n_ctx, c.kv_dim());
    const uint64_t memory = runtime::physical_memory_bytes();
    if (memory != 0 && kv_bytes > memory) {
        throw Error("a context of " + std::to_string(n_ctx) + " tokens needs " + std::to_string(kv_bytes >> 20) +
                    " MiB of KV cache, more than this machine's " + std::to_string(memory >> 20) +
                    " MiB (use a smaller context, -c)");
    }
    return std::make_unique<Session::Impl>(model, o, n_ctx);
}

}  // namespace

std::unique_ptr<Session> Session::open_file(const std::string& path, const SessionOptions& options) {
    auto bytes = runtime::FileBytes::map(path);
    try {
        return std::unique_ptr<Session>(new Session(open_model(std::move(bytes), options)));
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
}

std::unique_ptr<Session> Session::open_bytes(std::vector<uint8_t> buffer, const SessionOptions& options) {
    return std::unique_ptr<Session>(new Session(open_model(runtime::FileBytes::adopt(std::move(buffer)), options)));
}

const ModelInfo& Session::info() const { return impl_->info; }
int Session::threads() const { return impl_->pool.size(); }
int Session::context() const { return impl_->forward.n_ctx(); }
int Session::batch() const { return impl_->forward.max_batch(); }
size_t Session::memory_bytes() const { return impl_->forward.memory_bytes(); }
const std::string& Session::chat_template_warning() const { return impl_->chat_warning; }
const std::vector<std::string>& Session::warnings() const { return impl_->warnings; }

std::vector<TokenId> Session::tokenize(std::string_view text, bool add_special, bool parse_special) const {
    return impl_->tokenizer->encode(text, add_special, parse_special);
}

std::vector<TokenId> Session::tokenize_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
    std::vector<text::ChatMessage> m;
    m.reserve(messages.size());
    for (const auto& msg : messages) m.push_back({msg.role, msg.content});
    return impl_->tokenizer->encode_pieces(impl_->chat.render(m, add_generation_prompt), true);
}

std::string Session::detokenize(std::span<const TokenId> ids, bool special) const {
    return text::detokenize(impl_->vocab, ids, special);
}

bool Session::is_end_of_generation(TokenId id) const { return impl_->vocab.is_end_of_generation(id); }

void Session::stop() { impl_->stop_requested.store(true); }

std::span<const float> Session::evaluate(std::span<const TokenId> tokens, bool all_logits) {
    return impl_->evaluate(tokens, all_logits);
}

void Session::reset() { impl_->sequence.clear(); }

const std::vector<TokenId>& Session::sequence() const { return impl_->sequence; }

GenerationStats Session::generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                                  const TokenCallback& on_token) {
    Impl& s = *impl_;
    options.sampling.validate();
    if (options.max_tokens < 0) throw Error("bad option: max_tokens must be >= 0");
    if (prompt.empty()) throw Error("the prompt is empty");
    s.check_ids(prompt);
    if (prompt.size() > size_t(s.forward.n_ctx())) {
        throw Error("the prompt is " + std::to_string(prompt.size()) + " tokens but the context holds " +
                    std::to_string(s.forward.n_ctx()) + " (use a larger context, -c)");
    }
    s.stop_requested.store(false);

    GenerationStats st;
    st.prompt_tokens = int(prompt.size());
    // Keep the cached prefix the prompt shares; at least one token is
    // evaluated so that there are logits to sample from.
    size_t keep = 0;
    while (keep < s.sequence.size() && keep + 1 < prompt.size() && s.sequence[keep] == prompt[keep]) ++keep;
    s.sequence.resize(keep);
    st.reused_tokens = int(keep);

    const auto t0 = std::chrono::steady_clock::now();
    std::span<const float> logits = s.evaluate(prompt.subspan(keep), false);
    st.prefill_seconds = seconds_since(t0);

    // The penalty cannot look further back than the context holds.
    SamplingParams sampling = options.sampling;
    sampling.repeat_last_n = std::min(sampling.repeat_last_n, s.forward.n_ctx());
    sample::Sampler sampler(sampling, s.info.n_vocab);
    for (const TokenId t : prompt) sampler.accept(t);
    text::StreamDecoder decoder(s.vocab);
    std::string piece;

    const auto t1 = std::chrono::steady_clock::now();
    st.stop = StopReason::MaxTokens;
    for (int i = 0; i < options.max_tokens; ++i) {
        if (s.stop_requested.load()) {
            st.stop = StopReason::Stopped;
            break;
        }
        const TokenId tok = sampler.sample(logits);
        if (!options.ignore_eos && s.vocab.is_end_of_generation(tok)) {
            st.stop = StopReason::EndOfGeneration;
            break;
        }
        sampler.accept(tok);
        st.tokens.push_back(tok);
        st.generated_tokens++;
        piece = decoder.push(tok);
        if (on_token && !on_token(TokenEvent{tok, piece})) {
            st.stop = StopReason::Stopped;
            break;
        }
        if (i + 1 == options.max_tokens) break;
        if (s.sequence.size() == size_t(s.forward.n_ctx())) {
            st.stop = StopReason::ContextFull;
            break;
        }
        const TokenId one[1] = {tok};
        logits = s.evaluate(one, false);
        st.decode_evals++;
    }
    st.decode_seconds = seconds_since(t1);
    piece = decoder.finish();
    if (!piece.empty() && on_token) on_token(TokenEvent{-1, piece});
    return st;
}

}  // namespace smolinfer
