#include "gateway/metrics_export.h"

#include <set>
#include <string_view>

namespace warren::gateway {
namespace {

std::string_view HelpFor(std::string_view name) {
  if (name == "warren_gateway_requests_total") return "Requests the gateway received, by result.";
  if (name == "warren_gateway_upstream_connections_total") {
    return "Connections into sandboxes: dialed anew, or an idle keep-alive one reused.";
  }
  if (name == "warren_gateway_resumes_total") return "Paused sandboxes resumed by traffic.";
  if (name == "warren_gateway_routes") return "Routes in the gateway's table, by state.";
  if (name == "sandbox_routes") return "Routes to sandboxes in the gateway (running + paused).";
  if (name == "warren_gateway_route_fences") {
    return "Removed routes still fencing out stale updates.";
  }
  if (name == "warren_gateway_open_relays") return "Relays open to sandboxes.";
  if (name == "warren_gateway_sandbox_open_relays") return "Relays open, per sandbox.";
  if (name == "warren_gateway_idle_upstream_connections") {
    return "Idle keep-alive connections into sandboxes.";
  }
  if (name == "warren_gateway_route_events_total") {
    return "Sandbox watch events, by whether they changed the route table.";
  }
  return "Gateway metric.";
}

}  // namespace

MetricsExport::MetricsExport(obs::Metrics& metrics,
                             std::function<std::vector<MetricSample>()> samples)
    : metrics_(metrics), samples_(std::move(samples)) {
  callback_id_ = metrics_.AddCollectCallback([this] { Collect(); });
}

MetricsExport::~MetricsExport() {
  metrics_.RemoveCollectCallback(callback_id_);
  // Series of a gateway that is gone would report their last values forever.
  std::lock_guard lock(mu_);
  for (auto& [key, series] : series_) {
    if (series.gauge) metrics_.Gauge(key.first, HelpFor(key.first)).Remove(series.gauge);
  }
}

void MetricsExport::Collect() {
  std::vector<MetricSample> samples = samples_();
  std::lock_guard lock(mu_);
  std::set<SeriesKey> seen;
  for (const MetricSample& s : samples) {
    SeriesKey key(s.name, obs::Labels(s.labels.begin(), s.labels.end()));
    seen.insert(key);
    auto [it, inserted] = series_.try_emplace(key);
    Series& series = it->second;
    if (s.type == "counter") {
      if (inserted) series.counter = &metrics_.Counter(s.name, HelpFor(s.name)).Add(key.second);
      // A counter only goes up; a sample below the last one (a restarted component) restarts
      // the count from there.
      if (s.value > series.last) series.counter->Increment(s.value - series.last);
      series.last = s.value;
    } else {
      if (inserted) series.gauge = &metrics_.Gauge(s.name, HelpFor(s.name)).Add(key.second);
      series.gauge->Set(s.value);
    }
  }
  for (auto it = series_.begin(); it != series_.end();) {
    if (seen.count(it->first) || !it->second.gauge) {
      ++it;
      continue;
    }
    metrics_.Gauge(it->first.first, HelpFor(it->first.first)).Remove(it->second.gauge);
    it = series_.erase(it);
  }
}

}  // namespace warren::gateway
