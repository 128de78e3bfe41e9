#include "http_server.h"

#include <chrono>
#include <ctime>
#include <map>
#include <thread>

#include <httplib.h>

#include "openai_embeddings.h"
#include "openai_request.h"
#include "openai_response.h"

namespace smolinfer::server {

using nlohmann::json;

namespace {

constexpr auto kPoll = std::chrono::milliseconds(100);

// Every path the server answers, with its one method.
const std::map<std::string, std::string>& known_paths() {
    static const std::map<std::string, std::string> paths = {
        {"/health", "GET"},
        {"/metrics", "GET"},
        {"/v1/models", "GET"},
        {"/v1/chat/completions", "POST"},
        {"/v1/completions", "POST"},
        {"/v1/embeddings", "POST"},
        {"/apply-template", "POST"},
    };
    return paths;
}

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& param = "", const std::string& code = "") {
    res.status = status;
    res.set_content(dump(error_body(message, type, param, code)), "application/json");
}

// The body httplib's own refusals (404, 413, a malformed request, ...) get.
void fill_error(const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    switch (res.status) {
        case 413:
            // The rest of the body is still unread: this connection cannot carry another request.
            res.set_header("Connection", "close");
            send_error(res, 413, "the request body is larger than the server accepts (--max-body)",
                       "invalid_request_error", "", "body_too_large");
            break;
        case 404: send_error(res, 404, "no such endpoint: " + req.path, "invalid_request_error", "", "not_found"); break;
        default:
            send_error(res, res.status, "the request could not be served (HTTP " + std::to_string(res.status) + ")",
                       res.status >= 500 ? "server_error" : "invalid_request_error");
    }
}

// Compares in time that depends on the lengths only, not on where the texts differ.
bool same_secret(const std::string& given, const std::string& expected) {
    if (given.size() != expected.size()) return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ expected[i]);
    return diff == 0;
}

long long unix_now() { return static_cast<long long>(std::time(nullptr)); }

// Reads a ticket's items on behalf of one request.
TicketItem wait(Ticket& ticket) {
    for (;;) {
        if (auto item = ticket.next(kPoll)) return std::move(*item);
    }
}

void refuse(httplib::Response& res, const Rejected& r) {
    if (r.client_error) {
        send_error(res, 400, r.message, "invalid_request_error");
    } else {
        send_error(res, 503, r.message, "server_error");
    }
}

// Streams the chunks of an admitted request as server-sent events; the
// sequence is cancelled as soon as the client cannot be written to.
struct EventStream {
    std::shared_ptr<Ticket> ticket;
    ResponseShaper shaper;
    bool started = false;

    bool write(httplib::DataSink& sink, const std::string& data) {
        if (!sink.is_writable() || !sink.write(data.data(), data.size())) {
            ticket->cancel();
            return false;
        }
        return true;
    }

    bool provide(httplib::DataSink& sink) {
        std::string out;
        if (!started) {
            started = true;
            for (const json& c : shaper.start()) out += sse_frame(c);
            return out.empty() || write(sink, out);
        }
        auto item = ticket->next(kPoll);
        if (!item) {
            if (!sink.is_writable()) {
                ticket->cancel();
                return false;
            }
            return true;
        }
        bool last = false;
        if (const auto* e = std::get_if<BatchEvent>(&*item)) {
            for (const json& c : shaper.event(*e)) out += sse_frame(c);
            if (e->finished) {
                for (const json& c : shaper.finish(*e->finished)) out += sse_frame(c);
                last = true;
            }
        } else if (const auto* r = std::get_if<Rejected>(&*item)) {
            // The engine failed mid-stream: say so in the stream, as OpenAI does.
            out += sse_frame(error_body(r->message, "server_error"));
            last = true;
        }
        if (last) out += sse_done();
        if (!out.empty() && !write(sink, out)) return false;
        if (last) sink.done();
        return true;
    }
};

}  // namespace

HttpServer::HttpServer(const Session& session, Scheduler& scheduler, ServerOptions options)
    : session_(session), scheduler_(scheduler), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
    routes();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
    const int port = options_.port == 0 ? http_->bind_to_any_port(options_.host)
                                        : (http_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
    if (port < 0) {
        throw Error("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                    " (address in use, or not an address of this machine)");
    }
    return port;
}

bool HttpServer::serve() { return http_->listen_after_bind(); }

void HttpServer::stop() { http_->stop(); }

void HttpServer::drain(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (in_flight_->load() > 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // A non-streaming answer is counted until its handler returns; httplib
    // writes it right after, on the same thread: give that write a moment.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

void HttpServer::routes() {
    httplib::Server& h = *http_;
    const size_t threads = size_t(options_.threads);
    h.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    h.set_payload_max_length(options_.max_body);

    h.set_error_handler([](const httplib::Request& req, httplib::Response& res) { fill_error(req, res); });
    h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        send_error(res, 500, "internal error: " + what, "server_error");
    });
    h.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
        counts_.add(known_paths().count(req.path) ? req.path : "other", res.status);
    });

    // Each known path answers its method; the others get 405. Checks run in
    // the handlers, after httplib has read the body: a refusal that left a
    // body unread would desynchronize a kept-alive connection.
    const auto route = [&h](const std::string& path, const std::string& method, httplib::Server::Handler handler) {
        const httplib::Server::Handler wrong_method = [path, method](const httplib::Request& req, httplib::Response& res) {
            res.set_header("Allow", method);
            send_error(res, 405, path + " takes " + method + ", not " + req.method, "invalid_request_error", "",
                       "method_not_allowed");
        };
        const auto pick = [&](const char* m) { return method == m ? handler : wrong_method; };
        h.Get(path, pick("GET"));
        h.Post(path, pick("POST"));
        h.Put(path, pick("PUT"));
        h.Patch(path, pick("PATCH"));
        h.Delete(path, pick("DELETE"));
    };
    // Everything but /health needs the key when there is one.
    const auto keyed = [this](httplib::Server::Handler handler) {
        return [this, handler](const httplib::Request& req, httplib::Response& res) {
            if (!options_.api_key.empty() && !same_secret(req.get_header_value("Authorization"), "Bearer " + options_.api_key)) {
                return send_error(res, 401,
                                  req.has_header("Authorization") ? "the API key is not valid"
                                                                  : "an API key is needed (Authorization: Bearer KEY)",
                                  "authentication_error", "", "invalid_api_key");
            }
            handler(req, res);
        };
    };

    route("/health", "GET", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"status":"ok"})", "application/json");
    });
    route("/v1/models", "GET", keyed([this](const httplib::Request&, httplib::Response& res) {
        const json list = {{"object", "list"},
                           {"data", json::array({{{"id", options_.model_id},
                                                  {"object", "model"},
                                                  {"created", unix_now()},
                                                  {"owned_by", "smolinfer"}}})}};
        res.set_content(dump(list), "application/json");
    }));
    route("/metrics", "GET", keyed([this](const httplib::Request&, httplib::Response& res) {
        res.set_content(prometheus_text(counts_.snapshot(), scheduler_.counters()), "text/plain; version=0.0.4");
    }));

    const auto generate = [this](Endpoint endpoint) {
        return [this, endpoint](const httplib::Request& req, httplib::Response& res) {
            // Counted while the handler runs; a stream hands its count to
            // its releaser, which runs once the stream's last byte is out.
            in_flight_->fetch_add(1);
            struct Release {
                std::shared_ptr<std::atomic<int>> count;
                ~Release() {
                    if (count) count->fetch_sub(1);
                }
            } release{in_flight_};
            ParsedRequest p;
            try {
                p = parse_request(endpoint, req.body);
            } catch (const BadRequest& e) {
                send_error(res, 400, e.what(), "invalid_request_error", e.param());
                return;
            }
            Job job;
            if (endpoint == Endpoint::Chat) {
                job.messages = std::move(p.messages);
                job.tools = p.tools.tools;
            } else {
                job.prompt = std::move(p.prompt);
            }
            job.options = p.options;
            // Tools the model may call: the template's syntax decides how
            // calls are constrained and read back (SmolLM2's has none: its
            // answers stay text, as llama-server's do).
            std::optional<ToolParsing> tool_parsing;
            if (ToolPlan plan = plan_tools(session_.tool_syntax(true), p.tools); plan.parse) {
                if (plan.grammar) {
                    job.options.grammar = std::move(plan.grammar->gbnf);
                    job.options.grammar_triggers = std::move(plan.grammar->triggers);
                }
                tool_parsing = ToolParsing{session_.tool_syntax(true), std::move(plan.names), plan.parallel};
            }
            job.max_tokens_given = p.max_tokens.has_value();
            if (p.max_tokens) job.options.max_tokens = *p.max_tokens;
            auto ticket = scheduler_.submit(std::move(job));
            if (!ticket) {
                res.set_header("Retry-After", "1");
                send_error(res, 503, "the server is busy: too many requests are waiting (try again)", "server_error", "",
                           "queue_full");
                return;
            }
            // Nothing is sent before the engine has accepted the prompt and
            // options, so that a bad grammar or a too-long prompt is a 400.
            TicketItem first = wait(*ticket);
            if (const auto* r = std::get_if<Rejected>(&first)) return refuse(res, *r);

            ResponseMeta meta;
            meta.endpoint = endpoint;
            meta.id = new_response_id(endpoint);
            meta.created = unix_now();
            meta.model = p.model.value_or(options_.model_id);
            meta.stream = p.stream;
            meta.include_usage = p.include_usage;
            meta.logprobs = p.options.logprobs;
            meta.tools = std::move(tool_parsing);
            TokenBytes bytes = [this](TokenId id) {
                const TokenId one[1] = {id};
                return session_.detokenize(one);
            };
            if (!p.stream) {
                ResponseShaper shaper(meta, bytes);
                for (;;) {
                    TicketItem item = wait(*ticket);
                    if (const auto* r = std::get_if<Rejected>(&item)) {
                        send_error(res, 500, r->message, "server_error");
                        return;
                    }
                    const auto& e = std::get<BatchEvent>(item);
                    shaper.event(e);
                    if (e.finished) {
                        res.set_content(dump(shaper.finish(*e.finished).front()), "application/json");
                        return;
                    }
                }
            }
            auto stream = std::make_shared<EventStream>(EventStream{ticket, ResponseShaper(meta, bytes)});
            res.set_header("Cache-Control", "no-cache");
            res.set_chunked_content_provider(
                "text/event-stream", [stream](size_t, httplib::DataSink& sink) { return stream->provide(sink); },
                [stream, count = std::move(release.count)](bool success) {
                    if (!success) stream->ticket->cancel();
                    count->fetch_sub(1);
                });
        };
    };
    route("/v1/embeddings", "POST", keyed([this](const httplib::Request& req, httplib::Response& res) {
        in_flight_->fetch_add(1);
        struct Release {
            std::shared_ptr<std::atomic<int>> count;
            ~Release() { count->fetch_sub(1); }
        } release{in_flight_};
        EmbeddingsRequest r;
        try {
            r = parse_embeddings_request(req.body);
        } catch (const BadRequest& e) {
            return send_error(res, 400, e.what(), "invalid_request_error", e.param());
        }
        const int width = session_.info().n_embd_out;
        if (r.dimensions && *r.dimensions > width) {
            return send_error(res, 400,
                              "'dimensions' is " + std::to_string(*r.dimensions) + "; the model's embeddings have " +
                                  std::to_string(width),
                              "invalid_request_error", "dimensions");
        }
        EmbeddingJob job;
        for (EmbeddingInput& in : r.inputs) {
            if (in.is_tokens) {
                job.tokens.push_back(std::move(in.tokens));
            } else {
                job.texts.push_back(std::move(in.text));
            }
        }
        if (!job.texts.empty() && !job.tokens.empty()) {
            return send_error(res, 400, "'input' mixes texts and token ids", "invalid_request_error", "input");
        }
        auto ticket = scheduler_.submit(std::move(job));
        if (!ticket) {
            res.set_header("Retry-After", "1");
            return send_error(res, 503, "the server is busy: too many requests are waiting (try again)", "server_error",
                              "", "queue_full");
        }
        TicketItem item = wait(*ticket);
        if (const auto* rejected = std::get_if<Rejected>(&item)) return refuse(res, *rejected);
        Embedded& done = std::get<Embedded>(item);
        if (r.dimensions) {
            for (auto& v : done.vectors) v = shorten(v, *r.dimensions);
        }
        res.set_content(dump(embeddings_response(done.vectors, r.base64, r.model.value_or(options_.model_id),
                                                 done.prompt_tokens)),
                        "application/json");
    }));
    // llama-server's: the prompt a chat request would generate from, so
    // that prompts can be compared. Rendering reads the session's template
    // and vocabulary only, which the engine thread never changes.
    route("/apply-template", "POST", keyed([this](const httplib::Request& req, httplib::Response& res) {
        ParsedRequest p;
        try {
            p = parse_template_request(req.body);
        } catch (const BadRequest& e) {
            return send_error(res, 400, e.what(), "invalid_request_error", e.param());
        }
        try {
            const std::string prompt = session_.render_chat(p.messages, p.add_generation_prompt, p.tools.tools);
            res.set_content(dump(json{{"prompt", prompt}}), "application/json");
        } catch (const Error& e) {
            send_error(res, 400, e.what(), "invalid_request_error", "messages");
        }
    }));
    route("/v1/chat/completions", "POST", keyed(generate(Endpoint::Chat)));
    route("/v1/completions", "POST", keyed(generate(Endpoint::Completion)));
}

}  // namespace smolinfer::server
