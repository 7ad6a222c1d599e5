#include "obs/metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "base/check.h"

namespace warren::obs {

struct Metrics::Callbacks {
  std::mutex mu;
  int next_id = 1;                                          // guarded by mu
  std::vector<std::pair<int, std::function<void()>>> list;  // guarded by mu
};

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      callbacks_(std::make_unique<Callbacks>()) {}

Metrics::~Metrics() = default;

Metrics& Metrics::Default() {
  static Metrics* metrics = new Metrics();  // never destroyed: families outlive static users
  return *metrics;
}

namespace {

// prometheus-cpp reports a bad name or a type clash by throwing; both are bugs in our code.
template <class Builder>
auto& RegisterFamily(Builder builder, std::string_view name, std::string_view help,
                     const Labels& const_labels, prometheus::Registry& registry) {
  try {
    return builder.Name(std::string(name))
        .Help(std::string(help))
        .Labels(const_labels)
        .Register(registry);
  } catch (const std::exception& e) {
    CHECK_MSG(false, "register metric " << name << ": " << e.what());
  }
  __builtin_unreachable();
}

}  // namespace

CounterFamily& Metrics::Counter(std::string_view name, std::string_view help,
                                const Labels& const_labels) {
  return RegisterFamily(prometheus::BuildCounter(), name, help, const_labels, *registry_);
}

GaugeFamily& Metrics::Gauge(std::string_view name, std::string_view help,
                            const Labels& const_labels) {
  return RegisterFamily(prometheus::BuildGauge(), name, help, const_labels, *registry_);
}

HistogramFamily& Metrics::Histogram(std::string_view name, std::string_view help,
                                    const Labels& const_labels) {
  return RegisterFamily(prometheus::BuildHistogram(), name, help, const_labels, *registry_);
}

int Metrics::AddCollectCallback(std::function<void()> callback) {
  std::lock_guard lock(callbacks_->mu);
  int id = callbacks_->next_id++;
  callbacks_->list.emplace_back(id, std::move(callback));
  return id;
}

void Metrics::RemoveCollectCallback(int id) {
  std::lock_guard lock(callbacks_->mu);
  std::erase_if(callbacks_->list, [id](const auto& entry) { return entry.first == id; });
}

std::string Metrics::Exposition() const {
  {
    // Callbacks run under the lock so one being removed is never running afterwards.
    std::lock_guard lock(callbacks_->mu);
    for (auto& [id, callback] : callbacks_->list) callback();
  }
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  std::stable_sort(families.begin(), families.end(),
                   [](const auto& a, const auto& b) { return a.name < b.name; });
  return prometheus::TextSerializer().Serialize(families);
}

Buckets ExponentialBuckets(double start, double factor, int count) {
  CHECK(start > 0 && factor > 1 && count > 0);
  Buckets b;
  b.reserve(count);
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) b.push_back(v);
  return b;
}

Buckets LinearBuckets(double start, double width, int count) {
  CHECK(width > 0 && count > 0);
  Buckets b;
  b.reserve(count);
  for (int i = 0; i < count; ++i) b.push_back(start + width * i);
  return b;
}

Buckets DefaultDurationBuckets() { return ExponentialBuckets(0.02, 2, 12); }
Buckets ClaimDurationBuckets() { return ExponentialBuckets(0.01, 2, 10); }
Buckets RecycleDurationBuckets() { return ExponentialBuckets(0.1, 2, 13); }
Buckets RetryBuckets() { return LinearBuckets(0, 1, 11); }
Buckets FastDurationBuckets() { return ExponentialBuckets(0.00025, 2, 16); }

}  // namespace warren::obs
