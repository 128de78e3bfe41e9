#include "metrics.h"

#include <cstdio>

namespace smolinfer::server {

void RequestCounts::add(const std::string& endpoint, int status) {
    std::lock_guard lock(mutex_);
    counts_[{endpoint, status}]++;
}

std::map<std::pair<std::string, int>, long long> RequestCounts::snapshot() const {
    std::lock_guard lock(mutex_);
    return counts_;
}

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

std::string number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

}  // namespace

std::string prometheus_text(const std::map<std::pair<std::string, int>, long long>& requests,
                            const SchedulerCounters& engine) {
    std::string out;
    metric(out, "smolinfer_requests_total", "counter", "HTTP requests answered, by endpoint and status.");
    for (const auto& [key, n] : requests) {
        out += "smolinfer_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
               "\"} " + std::to_string(n) + "\n";
    }
    metric(out, "smolinfer_prompt_tokens_total", "counter", "Prompt tokens of the requests admitted.");
    out += "smolinfer_prompt_tokens_total " + std::to_string(engine.prompt_tokens) + "\n";
    metric(out, "smolinfer_generated_tokens_total", "counter", "Tokens generated (cancelled requests' included).");
    out += "smolinfer_generated_tokens_total " + std::to_string(engine.generated_tokens) + "\n";
    metric(out, "smolinfer_queue_length", "gauge", "Requests waiting for a free sequence.");
    out += "smolinfer_queue_length " + std::to_string(engine.queued) + "\n";
    metric(out, "smolinfer_running_sequences", "gauge", "Sequences generating now.");
    out += "smolinfer_running_sequences " + std::to_string(engine.running) + "\n";
    metric(out, "smolinfer_decode_tokens_per_second", "gauge",
           "Tokens generated per second of engine steps, over the server's life (all sequences together).");
    out += "smolinfer_decode_tokens_per_second " +
           number(engine.step_seconds > 0 ? double(engine.generated_tokens) / engine.step_seconds : 0.0) + "\n";
    return out;
}

}  // namespace smolinfer::server
