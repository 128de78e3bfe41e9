// The HTTP side of `smolinfer serve`: routes, the API key, body limits and
// OpenAI-style errors; generation requests go to the Scheduler.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "metrics.h"
#include "scheduler.h"

namespace httplib {
class Server;
}

namespace smolinfer::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;            // 0: any free port
    std::string api_key;        // "": no key needed
    size_t max_body = 1 << 20;  // bytes of a request body
    int threads = 16;           // HTTP worker threads (one per open connection)
    std::string model_id;       // what /v1/models lists and responses name by default
};

class HttpServer {
public:
    // The session is only read (detokenizing single tokens), which is safe
    // while the scheduler's engine thread generates.
    HttpServer(const Session& session, Scheduler& scheduler, ServerOptions options);
    ~HttpServer();

    // Binds the address; returns the port (the chosen one for port 0).
    // Throws smolinfer::Error when it cannot.
    int bind();
    // Serves until stop(); returns false when serving failed.
    bool serve();
    // Thread-safe: stops accepting and makes serve() return. Responses still
    // being written are cut: call drain() first for a clean end.
    void stop();
    // Waits (at most `timeout`) until every generation response has been
    // written to the end, e.g. the last chunks and data: [DONE] the
    // scheduler's shutdown gives running streams.
    void drain(std::chrono::milliseconds timeout);

private:
    void routes();

    const Session& session_;
    Scheduler& scheduler_;
    ServerOptions options_;
    RequestCounts counts_;
    std::unique_ptr<httplib::Server> http_;
    // Generation responses not yet written to the end (shared with the
    // stream releasers, which may run after a handler returned).
    std::shared_ptr<std::atomic<int>> in_flight_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace smolinfer::server
