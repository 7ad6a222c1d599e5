#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "trace/span_data.h"

namespace warren::trace {

// A span sink that appends each span as one OTLP/JSON line (otlp_json.h EncodeOtlpSpan) to a
// file: how envd, which has no route to an OTLP endpoint from inside its sandbox, hands its spans
// to the node agent, which collects the file (node/envd_span_collector.h) and forwards them to
// the exporter. Past `max_bytes` the file starts over (the collector notices it shrank). Best
// effort: a write that fails loses that span and never fails the request. Thread-safe; Submit is
// one write(2).
class SpanLog final : public SpanSink {
 public:
  static Result<std::unique_ptr<SpanLog>> Open(const std::string& path,
                                               uint64_t max_bytes = 4 << 20);
  void Submit(SpanData span) override;

 private:
  SpanLog(base::UniqueFd file, uint64_t max_bytes)
      : max_bytes_(max_bytes), file_(std::move(file)) {}

  const uint64_t max_bytes_;
  std::mutex mu_;
  base::UniqueFd file_;  // guarded by mu_
};

}  // namespace warren::trace
