#pragma once

#include <chrono>
#include <string_view>

namespace warren::server::e2b {

// Records one answered E2B API request in the process's metrics registry (obs::Metrics):
//   warren_e2b_requests_total{operation,code}            counter
//   warren_e2b_request_duration_seconds{operation}       histogram (the reference's default
//                                                        buckets, 20 ms × 2^n)
// `operation` is a fixed name per route ("create", "list", "pause", ...). Thread-safe.
void RecordE2bRequest(std::string_view operation, int http_status,
                      std::chrono::steady_clock::duration elapsed);

}  // namespace warren::server::e2b
