// The WebAssembly face of the engine, for the worker in web/src/worker.ts.
// Errors never cross as C++ exceptions: every call returns a plain object,
// with an `error` string when something went wrong.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runtime/sha256.h"
#include "smolinfer/error.h"
#include "smolinfer/session.h"
#include "smolinfer/tools.h"

using emscripten::val;

namespace smolinfer::web {

namespace {

val error(const std::string& message) {
    val r = val::object();
    r.set("error", message);
    return r;
}

template <typename T>
T option(const val& o, const char* name, T fallback) {
    if (o.isUndefined() || o.isNull()) return fallback;
    const val v = o[name];
    return (v.isUndefined() || v.isNull()) ? fallback : v.as<T>();
}

val int32_array(const std::vector<TokenId>& ids) {
    return val::global("Int32Array").new_(emscripten::typed_memory_view(ids.size(), ids.data()));
}

std::vector<TokenId> ids_from(const val& array) { return emscripten::vecFromJSArray<TokenId>(array); }

val uint8_array(const std::string& bytes) {
    return val::global("Uint8Array").new_(emscripten::typed_memory_view(bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data())));
}

// The options' "stop" (an array of strings), "logitBias" (an array of
// [token id, bias] pairs); absent: none.
std::vector<std::string> strings_option(const val& o, const char* name) {
    if (o.isUndefined() || o.isNull() || o[name].isUndefined() || o[name].isNull()) return {};
    return emscripten::vecFromJSArray<std::string>(o[name]);
}

std::vector<LogitBias> logit_bias_option(const val& o) {
    std::vector<LogitBias> out;
    if (o.isUndefined() || o.isNull() || o["logitBias"].isUndefined() || o["logitBias"].isNull()) return out;
    const val pairs = o["logitBias"];
    const int n = pairs["length"].as<int>();
    for (int i = 0; i < n; ++i) out.push_back({pairs[i][0].as<int32_t>(), pairs[i][1].as<float>()});
    return out;
}

bool present(const val& o, const char* name) {
    return !o.isUndefined() && !o.isNull() && !o[name].isUndefined() && !o[name].isNull();
}

// A chat message: { role, content } plus an assistant's toolCalls
// ([{ id, name, arguments }]) or a tool result's toolCallId and name.
ChatMessage message_from(const val& m) {
    ChatMessage msg{m["role"].as<std::string>(), m["content"].as<std::string>()};
    if (present(m, "toolCalls")) {
        const val calls = m["toolCalls"];
        const int n = calls["length"].as<int>();
        for (int k = 0; k < n; ++k) {
            msg.tool_calls.push_back({calls[k]["id"].as<std::string>(), calls[k]["name"].as<std::string>(),
                                      calls[k]["arguments"].as<std::string>()});
        }
    }
    if (present(m, "toolCallId")) msg.tool_call_id = m["toolCallId"].as<std::string>();
    if (present(m, "name")) msg.name = m["name"].as<std::string>();
    return msg;
}

// [{ name, description, parameters }] (parameters: JSON Schema text, "" = {}).
std::vector<Tool> tools_from(const val& list) {
    std::vector<Tool> tools;
    if (list.isUndefined() || list.isNull()) return tools;
    const int n = list["length"].as<int>();
    for (int i = 0; i < n; ++i) {
        tools.push_back({list[i]["name"].as<std::string>(), list[i]["description"].as<std::string>(),
                         list[i]["parameters"].as<std::string>()});
    }
    return tools;
}

// The options' "tools": { tools, choice: "auto" | "none" | "required" |
// "named", function (named), parallel (absent: the template's default) }.
ToolRequest tool_request_option(const val& o) {
    ToolRequest r;
    if (!present(o, "tools")) return r;
    const val t = o["tools"];
    r.tools = tools_from(t["tools"]);
    const std::string choice = option<std::string>(t, "choice", "auto");
    if (choice == "auto") r.choice = ToolChoice::Auto;
    else if (choice == "none") r.choice = ToolChoice::None;
    else if (choice == "required") r.choice = ToolChoice::Required;
    else if (choice == "named") r.choice = ToolChoice::Named;
    else throw Error("tools.choice must be \"auto\", \"none\", \"required\" or \"named\" (got \"" + choice + "\")");
    r.function = option<std::string>(t, "function", "");
    if (present(t, "parallel")) r.parallel = t["parallel"].as<bool>();
    return r;
}

// What parse_tool_output read from the answer so far: { status: "complete" |
// "incomplete" | "invalid", content, calls: [{ name, arguments }], closed }.
val tool_output_object(const ToolOutput& out) {
    val r = val::object();
    r.set("status", std::string(out.status == ToolOutput::Status::Complete     ? "complete"
                                : out.status == ToolOutput::Status::Incomplete ? "incomplete"
                                                                               : "invalid"));
    r.set("content", out.content);
    val calls = val::array();
    for (const ToolCall& c : out.calls) {
        val call = val::object();
        call.set("name", c.name);
        call.set("arguments", c.arguments);
        calls.call<void>("push", call);
    }
    r.set("calls", calls);
    r.set("closed", int(out.closed));
    return r;
}

val stats_object(const GenerationStats& st) {
    val s = val::object();
    s.set("promptTokens", st.prompt_tokens);
    s.set("reusedTokens", st.reused_tokens);
    s.set("generatedTokens", st.generated_tokens);
    s.set("prefillTps", st.prefill_tps());
    s.set("decodeTps", st.decode_tps());
    s.set("prefillSeconds", st.prefill_seconds);
    s.set("decodeSeconds", st.decode_seconds);
    s.set("stop", std::string(stop_reason_name(st.stop)));
    return s;
}

}  // namespace

class Engine {
public:
    // Memory for a model of `size` bytes, filled by JavaScript and handed to
    // load(); 0 if it cannot be had.
    static uintptr_t allocate(double size) {
        if (!(size > 0) || size > 4294967295.0) return 0;
        return reinterpret_cast<uintptr_t>(std::malloc(size_t(size)));
    }
    static void release(uintptr_t ptr) { std::free(reinterpret_cast<void*>(ptr)); }

    static std::string sha256(uintptr_t ptr, double size) {
        runtime::Sha256 h;
        h.update({reinterpret_cast<const uint8_t*>(ptr), size_t(size)});
        return h.finish_hex();
    }

    // Takes ownership of the buffer, also on failure.
    val load(uintptr_t ptr, double size, val options) {
        return open([&](const SessionOptions& o) {
            return Session::open_malloc(reinterpret_cast<uint8_t*>(ptr), size_t(size), o);
        }, options);
    }

    // The files of a split model, in order: takes ownership of every buffer, also on failure.
    val load_parts(val ptrs, val sizes, val options) {
        std::vector<Session::MallocPart> parts;
        const auto p = emscripten::vecFromJSArray<double>(ptrs);
        const auto n = emscripten::vecFromJSArray<double>(sizes);
        for (size_t i = 0; i < p.size(); ++i) {
            parts.push_back({reinterpret_cast<uint8_t*>(uintptr_t(p[i])), i < n.size() ? size_t(n[i]) : 0});
        }
        return open([&](const SessionOptions& o) { return Session::open_malloc_parts(parts, o); }, options);
    }

    void unload() {
        generation_.reset();
        session_.reset();
    }

    bool loaded() const { return session_ != nullptr; }

    val tokenize(const std::string& text, bool add_special, bool parse_special) {
        if (!session_) return error("no model is loaded");
        try {
            val r = val::object();
            r.set("ids", int32_array(session_->tokenize(text, add_special, parse_special)));
            return r;
        } catch (const std::exception& e) {
            return error(e.what());
        }
    }

    // `tools` ([{ name, description, parameters }], may be empty) are
    // described by the template when it knows how; a bad one is an error
    // naming it (check_tools, as the server's 400).
    val chat_tokens(val messages, bool add_generation_prompt, val tools) {
        if (!session_) return error("no model is loaded");
        try {
            std::vector<ChatMessage> m;
            const int n = messages["length"].as<int>();
            for (int i = 0; i < n; ++i) m.push_back(message_from(messages[i]));
            const std::vector<Tool> t = tools_from(tools);
            check_tools(t);
            val r = val::object();
            r.set("ids", int32_array(session_->tokenize_chat(m, add_generation_prompt, t)));
            return r;
        } catch (const std::exception& e) {
            return error(e.what());
        }
    }

    // One input's embedding: `input` a string (special tokens added, its
    // own text never parsed as special) or an array of token ids.
    val embed(val input, bool normalize) {
        if (!session_) return error("no model is loaded");
        try {
            const std::vector<TokenId> ids =
                input.isString() ? session_->tokenize(input.as<std::string>(), true, false) : ids_from(input);
            const std::vector<float> v = session_->embed_tokens(ids, normalize);
            val r = val::object();
            r.set("vector", val::global("Float32Array").new_(emscripten::typed_memory_view(v.size(), v.data())));
            r.set("tokens", int(ids.size()));
            return r;
        } catch (const std::exception& e) {
            return error(e.what());
        }
    }

    val detokenize(val ids, bool special) {
        if (!session_) return error("no model is loaded");
        try {
            val r = val::object();
            r.set("text", session_->detokenize(ids_from(ids), special));
            return r;
        } catch (const std::exception& e) {
            return error(e.what());
        }
    }

    // Evaluates the prompt; then next() gives one piece per call. With
    // options.tools the template's tool calls are constrained (plan_tools,
    // as smolinfer serve) and each piece brings the answer so far read back
    // (`tools`, see tool_output_object).
    val start(val prompt_ids, val options) {
        if (!session_) return error("no model is loaded");
        generation_.reset();
        tool_plan_ = {};
        answer_.clear();
        try {
            GenerateOptions o;
            o.max_tokens = option<int>(options, "maxTokens", 256);
            o.ignore_eos = option<bool>(options, "ignoreEos", false);
            o.sampling.temperature = option<float>(options, "temperature", o.sampling.temperature);
            o.sampling.top_k = option<int>(options, "topK", o.sampling.top_k);
            o.sampling.top_p = option<float>(options, "topP", o.sampling.top_p);
            o.sampling.min_p = option<float>(options, "minP", o.sampling.min_p);
            o.sampling.repeat_penalty = option<float>(options, "repeatPenalty", o.sampling.repeat_penalty);
            o.sampling.repeat_last_n = option<int>(options, "repeatLastN", o.sampling.repeat_last_n);
            o.sampling.seed = uint64_t(option<double>(options, "seed", 0.0));
            o.sampling.frequency_penalty = option<float>(options, "frequencyPenalty", 0.0f);
            o.sampling.presence_penalty = option<float>(options, "presencePenalty", 0.0f);
            o.sampling.logit_bias = logit_bias_option(options);
            o.stop = strings_option(options, "stop");
            o.logprobs = option<bool>(options, "logprobs", false);
            o.top_logprobs = option<int>(options, "topLogprobs", 0);
            o.grammar = option<std::string>(options, "grammar", "");
            o.json_schema = option<std::string>(options, "jsonSchema", "");
            const ToolRequest tools = tool_request_option(options);
            check_tools(tools.tools);
            ToolPlan plan = plan_tools(session_->tool_syntax(true), tools);
            if (plan.grammar) {
                if (!o.grammar.empty() || !o.json_schema.empty()) {
                    throw Error("grammar and jsonSchema: leave them out when tools may be called");
                }
                o.grammar = std::move(plan.grammar->gbnf);
                o.grammar_triggers = std::move(plan.grammar->triggers);
            }
            const auto ids = ids_from(prompt_ids);
            generation_ = session_->start(ids, o);
            tool_plan_ = std::move(plan);
            return stats_object(generation_->stats());
        } catch (const std::exception& e) {
            return error(e.what());
        }
    }

    val next() {
        if (!generation_) return error("no generation is running");
        val r = val::object();
        try {
            const auto event = generation_->next();
            r.set("done", !event.has_value());
            if (event) {
                r.set("token", event->token);
                r.set("text", std::string(event->text));
                if (event->logprobs) r.set("logprobs", logprobs_object(*event->logprobs));
                if (tool_plan_.parse && !event->text.empty()) {
                    answer_ += event->text;
                    r.set("tools", tool_output_object(parse_tool_output(session_->tool_syntax(true), tool_plan_.names,
                                                                        tool_plan_.parallel, answer_)));
                }
            } else {
                r.set("stats", stats_object(generation_->stats()));
            }
        } catch (const std::exception& e) {
            return error(e.what());
        }
        return r;
    }

    val cancel() {
        if (!generation_) return error("no generation is running");
        generation_->cancel();
        return stats_object(generation_->stats());
    }

private:
    // { token, logprob, bytes, top: [{ token, logprob, bytes }] }; bytes are
    // the token's raw piece (it may be part of a UTF-8 character).
    val logprobs_object(const TokenLogprobs& lp) const {
        const auto choice = [&](TokenId id, float logprob) {
            val c = val::object();
            const TokenId one[1] = {id};
            c.set("token", id);
            c.set("logprob", logprob);
            c.set("bytes", uint8_array(session_->detokenize(one)));
            return c;
        };
        val r = choice(lp.token, lp.logprob);
        val top = val::array();
        for (const TokenChoice& c : lp.top) top.call<void>("push", choice(c.token, c.logprob));
        r.set("top", top);
        return r;
    }

    template <typename OpenFn>
    val open(OpenFn&& open_session, const val& options) {
        session_.reset();
        generation_.reset();
        try {
            SessionOptions o;
            o.threads = option<int>(options, "threads", 1);
            o.context = option<int>(options, "contextSize", 0);
            o.exact = option<bool>(options, "exact", true);
            const std::string fa = option<std::string>(options, "flashAttention", "auto");
            const auto flash = parse_flash_attention(fa);
            if (!flash || (fa != "auto" && fa != "on" && fa != "off")) {
                return error("flashAttention must be \"auto\", \"on\" or \"off\" (got \"" + fa + "\")");
            }
            o.flash_attention = *flash;
            // A template used instead of the file's (llama-server's --chat-template-file).
            if (present(options, "chatTemplate")) o.chat_template = options["chatTemplate"].as<std::string>();
            session_ = open_session(o);
        } catch (const std::exception& e) {
            return error(e.what());
        }
        const ModelInfo& m = session_->info();
        val info = val::object();
        info.set("name", m.name);
        info.set("architecture", m.architecture);
        info.set("parameters", double(m.parameters));
        info.set("fileType", m.file_type);
        info.set("dominantType", m.dominant_type);
        info.set("quantization", m.file_type.empty() ? m.dominant_type : m.file_type);
        info.set("weightTypes", m.weight_types);
        info.set("fileBytes", double(m.file_bytes));
        info.set("parts", m.file_parts);
        info.set("vocabSize", m.n_vocab);
        info.set("trainContext", m.n_ctx_train);
        info.set("contextSize", session_->context());
        info.set("flashAttention", session_->flash_attention());
        info.set("layers", m.n_layer);
        info.set("threads", session_->threads());
        info.set("kernels", session_->kernels());
        info.set("pooling", m.pooling);
        info.set("embeddingSize", m.n_embd_out);
        info.set("encoder", m.encoder);
        // How the chat template writes tool calls (with tools): "json" calls
        // are read back; "none" (SmolLM2's own) shows no tools at all.
        const ToolSyntax::Kind calls = session_->tool_syntax(true).kind;
        info.set("toolCalls", calls == ToolSyntax::Kind::Json ? "json" : calls == ToolSyntax::Kind::None ? "none" : "unsupported");
        val warnings = val::array();
        for (const std::string& w : session_->warnings()) warnings.call<void>("push", w);
        if (!session_->chat_template_warning().empty()) warnings.call<void>("push", session_->chat_template_warning());
        info.set("warnings", warnings);
        return info;
    }

    std::unique_ptr<Session> session_;
    std::unique_ptr<Generation> generation_;
    ToolPlan tool_plan_;  // the running generation's: parse set when its answer is read for calls
    std::string answer_;  // the text so far, when it is
};

}  // namespace smolinfer::web

EMSCRIPTEN_BINDINGS(smolinfer) {
    using smolinfer::web::Engine;
    emscripten::class_<Engine>("Engine")
        .constructor<>()
        .class_function("allocate", &Engine::allocate)
        .class_function("release", &Engine::release)
        .class_function("sha256", &Engine::sha256)
        .function("load", &Engine::load)
        .function("loadParts", &Engine::load_parts)
        .function("unload", &Engine::unload)
        .function("loaded", &Engine::loaded)
        .function("tokenize", &Engine::tokenize)
        .function("chatTokens", &Engine::chat_tokens)
        .function("detokenize", &Engine::detokenize)
        .function("embed", &Engine::embed)
        .function("start", &Engine::start)
        .function("next", &Engine::next)
        .function("cancel", &Engine::cancel);
}
