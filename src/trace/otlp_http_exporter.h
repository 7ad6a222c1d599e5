#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/result.h"
#include "net/http_client.h"
#include "obs/metrics.h"
#include "trace/span_data.h"

namespace warren::trace {

struct OtlpExporterOptions {
  // The collector: "http://host:port" (OTLP/HTTP's base; spans go to <endpoint>/v1/traces), or
  // a full URL ending in /v1/traces. https is not supported.
  std::string endpoint;
  std::string service_name = "warren";
  // Spans waiting to be sent; past this a span is dropped and counted
  // (warren_trace_spans_dropped_total{reason="queue_full"}), so a slow or dead collector costs
  // memory up to this bound and never slows a request.
  size_t max_queue = 2048;
  size_t max_batch = 512;                           // spans per POST
  std::chrono::milliseconds flush_interval{1000};   // a partial batch waits at most this
  std::chrono::milliseconds request_timeout{5000};  // one POST
};

// Sends finished spans to an OTLP/HTTP collector as JSON from one background thread: Submit
// queues (bounded, never blocks on the network), the thread posts a batch when max_batch spans
// are queued or flush_interval has passed. A failed POST drops its batch (counted with
// reason="export_failed"): spans are diagnostics, not data to retry at any cost.
// Thread-safe. Destruction (or Shutdown) sends what is queued, then stops the thread.
class OtlpHttpExporter : public SpanSink {
 public:
  static Result<std::unique_ptr<OtlpHttpExporter>> Create(OtlpExporterOptions options,
                                                          obs::Metrics& metrics);
  ~OtlpHttpExporter() override;

  void Submit(SpanData span) override;
  // Sends what is queued and stops; later spans are dropped (counted as queue_full).
  void Shutdown();

  uint64_t dropped() const;   // spans dropped for any reason
  uint64_t exported() const;  // spans a collector accepted (2xx)

 private:
  OtlpHttpExporter(OtlpExporterOptions options, std::unique_ptr<net::HttpClient> client,
                   std::string target, obs::Metrics& metrics);
  void Run();
  void Send(std::vector<SpanData> batch);

  const OtlpExporterOptions options_;
  const std::unique_ptr<net::HttpClient> client_;
  const std::string target_;  // "/v1/traces" or the endpoint's own path
  prometheus::Counter& dropped_full_;
  prometheus::Counter& dropped_failed_;
  prometheus::Counter& exported_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<SpanData> queue_;   // guarded by mu_
  bool stopping_ = false;        // guarded by mu_
  uint64_t dropped_ = 0;         // guarded by mu_
  uint64_t exported_count_ = 0;  // guarded by mu_
  bool failing_ = false;         // the sender thread's own: the last POST failed (log once)
  std::thread thread_;
};

}  // namespace warren::trace
