#pragma once

// An OTLP/HTTP JSON receiver in the bench process that keeps the spans it is sent, by trace id,
// so `claim_bench --trace-slowest` can say where its slowest claims spent their time.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "net/http_server.h"

namespace warren::bench {

struct RecordedSpan {
  std::string name;
  std::string span_id;
  std::string parent_span_id;
  std::string service;  // the resource's service.name: "warren" or "warren-envd"
  int64_t start_unix_ns = 0;
  int64_t end_unix_ns = 0;
};

class SpanRecorder {
 public:
  SpanRecorder();
  std::string endpoint() const;
  // The spans of one trace (32 lowercase hex), in the order they started.
  std::vector<RecordedSpan> Trace(const std::string& trace_id) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::vector<RecordedSpan>> by_trace_;
  std::unique_ptr<net::HttpServer> server_;
};

}  // namespace warren::bench
