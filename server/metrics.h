// The server's counters and their Prometheus text form (GET /metrics).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "scheduler.h"

namespace smolinfer::server {

class RequestCounts {
public:
    // One answered request; `endpoint` is a known path or "other".
    void add(const std::string& endpoint, int status);
    std::map<std::pair<std::string, int>, long long> snapshot() const;

private:
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, int>, long long> counts_;
};

// Prometheus text exposition format (version 0.0.4).
std::string prometheus_text(const std::map<std::pair<std::string, int>, long long>& requests,
                            const SchedulerCounters& engine);

}  // namespace smolinfer::server
