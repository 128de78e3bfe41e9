// smolinfer serve: an OpenAI-compatible HTTP server (server/) on one model.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <pthread.h>

#include "commands.h"
#include "server/http_server.h"
#include "server/scheduler.h"

namespace smolinfer::cli {

namespace {

struct ServeFlags {
    ModelFlags model;
    std::string host = "127.0.0.1";
    int port = 8080;
    int parallel = 4;
    int queue = 64;
    std::string api_key;
    size_t max_body = 1 << 20;
};

// SIGINT and SIGTERM are blocked in every thread (set before any thread
// starts) and taken by one thread with sigtimedwait, which may then stop
// the server from an ordinary context.
sigset_t stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

int serve(const ServeFlags& f) {
    const sigset_t signals = stop_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    // A client that hangs up makes the next write fail, not the process die.
    std::signal(SIGPIPE, SIG_IGN);

    auto session = f.model.open();
    server::Scheduler scheduler(*session, f.parallel, f.queue);
    server::ServerOptions o;
    o.host = f.host;
    o.port = f.port;
    o.api_key = f.api_key;
    o.max_body = f.max_body;
    // One HTTP thread per request that can be running or waiting, and a few
    // for /health, /metrics and refusals.
    o.threads = f.parallel + f.queue + 4;
    o.model_id = std::filesystem::path(f.model.model).filename().string();
    server::HttpServer http(*session, scheduler, o);
    const int port = http.bind();

    std::atomic<bool> finished{false};
    std::thread on_signal([&] {
        const timespec poll{0, 200'000'000};
        while (!finished.load()) {
            if (sigtimedwait(&signals, nullptr, &poll) > 0) {
                std::fprintf(stderr, "smolinfer serve: stopping\n");
                // Running streams get their last chunk, queued requests a 503;
                // once those are written (or 5 s passed), no more connections.
                scheduler.shutdown();
                http.drain(std::chrono::seconds(5));
                http.stop();
                return;
            }
        }
    });
    std::printf("smolinfer serve: listening on http://%s:%d (model %s, parallel %d)\n", f.host.c_str(), port,
                o.model_id.c_str(), f.parallel);
    std::fflush(stdout);
    const bool ok = http.serve();
    finished.store(true);
    on_signal.join();
    scheduler.shutdown();
    if (!ok) throw Error("the HTTP server stopped with an error");
    return 0;
}

}  // namespace

Action add_serve(CLI::App& app) {
    auto f = std::make_shared<ServeFlags>();
    f->model.add(app, true);
    app.add_option("--host", f->host, "address to listen on")->capture_default_str();
    app.add_option("--port", f->port, "port to listen on (0: any free port, printed)")
        ->capture_default_str()
        ->check(CLI::Range(0, 65535));
    app.add_option("--parallel", f->parallel, "sequences generated together (continuous batching)")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    app.add_option("--queue", f->queue, "requests that may wait for a free sequence; more get 503")
        ->capture_default_str()
        ->check(CLI::Range(0, 4096));
    app.add_option("--api-key", f->api_key, "require 'Authorization: Bearer KEY' (all but /health)");
    app.add_option("--max-body", f->max_body, "largest request body in bytes; more get 413")
        ->capture_default_str()
        ->check(CLI::Range(size_t(1), size_t(1) << 30));
    return [f] { return serve(*f); };
}

}  // namespace smolinfer::cli
