#include "trace/otlp_http_exporter.h"

#include <fmt/format.h>

#include "base/log.h"
#include "trace/otlp_json.h"

namespace warren::trace {
namespace {

auto Log() { return base::Logger("trace"); }

obs::CounterFamily& DroppedFamily(obs::Metrics& metrics) {
  return metrics.Counter("warren_trace_spans_dropped_total",
                         "Finished spans not exported, by reason: queue_full (the bounded queue "
                         "was full or the exporter stopped) or export_failed (the collector "
                         "refused the batch or could not be reached).");
}

}  // namespace

Result<std::unique_ptr<OtlpHttpExporter>> OtlpHttpExporter::Create(OtlpExporterOptions options,
                                                                   obs::Metrics& metrics) {
  std::string_view url = options.endpoint;
  if (!url.starts_with("http://")) {
    return InvalidArgumentError(fmt::format(
        "tracing endpoint \"{}\" must be http://host:port (https is not supported)", url));
  }
  std::string_view rest = url.substr(7);
  auto slash = rest.find('/');
  std::string_view address = rest.substr(0, slash);
  std::string path(slash == std::string_view::npos ? "" : rest.substr(slash));
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (!path.ends_with("/v1/traces")) path += "/v1/traces";
  if (options.max_queue == 0 || options.max_batch == 0) {
    return InvalidArgumentError("the span queue and batch sizes must be positive");
  }
  ASSIGN_OR_RETURN(auto client, net::HttpClient::ForAddress(address));
  return std::unique_ptr<OtlpHttpExporter>(
      new OtlpHttpExporter(std::move(options), std::move(client), std::move(path), metrics));
}

OtlpHttpExporter::OtlpHttpExporter(OtlpExporterOptions options,
                                   std::unique_ptr<net::HttpClient> client, std::string target,
                                   obs::Metrics& metrics)
    : options_(std::move(options)),
      client_(std::move(client)),
      target_(std::move(target)),
      dropped_full_(DroppedFamily(metrics).Add({{"reason", "queue_full"}})),
      dropped_failed_(DroppedFamily(metrics).Add({{"reason", "export_failed"}})),
      exported_(metrics
                    .Counter("warren_trace_spans_exported_total",
                             "Finished spans an OTLP collector accepted.")
                    .Add({})) {
  thread_ = std::thread([this] { Run(); });
}

OtlpHttpExporter::~OtlpHttpExporter() { Shutdown(); }

void OtlpHttpExporter::Submit(SpanData span) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= options_.max_queue) {
      ++dropped_;
      dropped_full_.Increment();
      return;
    }
    queue_.push_back(std::move(span));
    if (queue_.size() < options_.max_batch) return;
  }
  cv_.notify_one();
}

void OtlpHttpExporter::Shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

uint64_t OtlpHttpExporter::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

uint64_t OtlpHttpExporter::exported() const {
  std::lock_guard lock(mu_);
  return exported_count_;
}

void OtlpHttpExporter::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait_for(lock, options_.flush_interval,
                 [this] { return stopping_ || queue_.size() >= options_.max_batch; });
    // Drains in batches; on stop, everything queued goes before the thread ends.
    while (!queue_.empty()) {
      size_t n = std::min(queue_.size(), options_.max_batch);
      std::vector<SpanData> batch;
      batch.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      lock.unlock();
      Send(std::move(batch));
      lock.lock();
      if (!stopping_ && queue_.size() < options_.max_batch) break;  // wait for more
    }
    if (stopping_ && queue_.empty()) return;
  }
}

void OtlpHttpExporter::Send(std::vector<SpanData> batch) {
  net::ClientRequest request;
  request.method = "POST";
  request.target = target_;
  request.headers.Set("Content-Type", "application/json");
  request.body = EncodeOtlpJson(batch, options_.service_name);
  request.timeout = options_.request_timeout;
  request.max_response_bytes = 64 * 1024;
  auto response = client_->Do(request);
  bool ok = response.ok() && response->status / 100 == 2;
  {
    std::lock_guard lock(mu_);
    (ok ? exported_count_ : dropped_) += batch.size();
  }
  if (ok) {
    exported_.Increment(static_cast<double>(batch.size()));
    if (failing_) Log()->info("tracing collector accepts spans again target={}", target_);
    failing_ = false;
    return;
  }
  dropped_failed_.Increment(static_cast<double>(batch.size()));
  if (!failing_) {
    // Once per outage, not once per batch.
    Log()->warn(
        "spans dropped: the tracing collector did not take them spans={} error={}", batch.size(),
        response.ok() ? fmt::format("HTTP {}", response->status) : response.status().ToString());
  }
  failing_ = true;
}

}  // namespace warren::trace
