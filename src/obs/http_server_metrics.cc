#include "obs/http_server_metrics.h"

namespace warren::obs {
namespace {

constexpr std::string_view kOpen = "warren_http_connections_open";
constexpr std::string_view kQueued = "warren_http_blocking_queued";
constexpr std::string_view kOpenHelp = "Client connections open, per listener.";
constexpr std::string_view kQueuedHelp =
    "Blocking handlers waiting for a thread of the listener's pool.";

CounterFamily& Accepted(Metrics& m) {
  return m.Counter("warren_http_connections_accepted_total",
                   "Client connections accepted and served, per listener.");
}
CounterFamily& Rejected(Metrics& m) {
  return m.Counter("warren_http_connections_rejected_total",
                   "Client connections refused (503, then closed), by the limit they hit: "
                   "listener_full or address_full.");
}
CounterFamily& Reclaimed(Metrics& m) {
  return m.Counter("warren_http_connections_reclaimed_total",
                   "Idle client connections closed to make room for a new one when the listener "
                   "was full, per listener.");
}
CounterFamily& TimedOut(Metrics& m) {
  return m.Counter("warren_http_connections_timed_out_total",
                   "Client connections closed by a deadline, by phase: head, body, idle (between "
                   "requests), write, relay (silence in a proxied exchange).");
}

}  // namespace

HttpServerMetrics::HttpServerMetrics(Metrics& metrics, std::string listener,
                                     std::function<net::ConnectionStats()> stats)
    : metrics_(metrics),
      listener_(std::move(listener)),
      stats_(std::move(stats)),
      open_(&metrics_.Gauge(kOpen, kOpenHelp).Add({{"listener", listener_}})),
      queued_(&metrics_.Gauge(kQueued, kQueuedHelp).Add({{"listener", listener_}})) {
  callback_id_ = metrics_.AddCollectCallback([this] { Collect(); });
}

HttpServerMetrics::~HttpServerMetrics() {
  metrics_.RemoveCollectCallback(callback_id_);
  // A listener that is gone would report its last gauge values forever.
  metrics_.Gauge(kOpen, kOpenHelp).Remove(open_);
  metrics_.Gauge(kQueued, kQueuedHelp).Remove(queued_);
}

void HttpServerMetrics::Advance(prometheus::Counter& counter, uint64_t value) {
  uint64_t& last = last_[&counter];
  // A counter of a server started again under the same name (tests) starts from 0.
  if (value > last) counter.Increment(static_cast<double>(value - last));
  last = value;
}

void HttpServerMetrics::Collect() {
  net::ConnectionStats s = stats_();
  std::lock_guard lock(mu_);
  open_->Set(static_cast<double>(s.open));
  queued_->Set(static_cast<double>(s.blocking_queued));
  Advance(Accepted(metrics_).Add({{"listener", listener_}}), s.accepted);
  Advance(Rejected(metrics_).Add({{"listener", listener_}, {"reason", "listener_full"}}),
          s.rejected_listener_full);
  Advance(Rejected(metrics_).Add({{"listener", listener_}, {"reason", "address_full"}}),
          s.rejected_address_full);
  Advance(Reclaimed(metrics_).Add({{"listener", listener_}}), s.reclaimed_idle);
  const std::pair<const char*, uint64_t> phases[] = {
      {"head", s.timed_out_head},   {"body", s.timed_out_body},   {"idle", s.timed_out_idle},
      {"write", s.timed_out_write}, {"relay", s.timed_out_relay},
  };
  for (const auto& [phase, value] : phases) {
    Advance(TimedOut(metrics_).Add({{"listener", listener_}, {"phase", phase}}), value);
  }
}

}  // namespace warren::obs
