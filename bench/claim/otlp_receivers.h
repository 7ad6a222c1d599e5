#pragma once

// OTLP/HTTP JSON receivers in the bench process, for the server's --tracing-endpoint:
// SpanCounter counts what it is sent (`claim_bench --tracing`, tracing's overhead), SpanRecorder
// keeps it by trace id (`--trace-slowest`, where the slowest claims spent their time).

#include <atomic>
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

// Answers 200 and counts the spans by their "spanId" keys: parsing every batch would charge the
// bench's own CPU.
class SpanCounter {
 public:
  SpanCounter();
  std::string endpoint() const;
  size_t spans() const { return spans_.load(); }

 private:
  std::atomic<size_t> spans_{0};
  std::unique_ptr<net::HttpServer> server_;
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
