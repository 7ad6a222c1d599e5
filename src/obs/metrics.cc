#include "obs/metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "base/check.h"

namespace warren::obs {

struct Metrics::Registries {
  std::mutex mu;
  std::map<Labels, std::unique_ptr<prometheus::Registry>> by_const_labels;  // guarded by mu
  std::map<std::string, std::string, std::less<>> type_of;  // name → type; guarded by mu
};

struct Metrics::Callbacks {
  std::mutex mu;
  int next_id = 1;                                          // guarded by mu
  std::vector<std::pair<int, std::function<void()>>> list;  // guarded by mu
  struct Source {
    int id;
    FamilySource render;
  };
  std::map<std::string, Source, std::less<>> sources;  // by key; guarded by mu
};

Metrics::Metrics()
    : registries_(std::make_unique<Registries>()), callbacks_(std::make_unique<Callbacks>()) {}

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

prometheus::Registry& Metrics::RegistryFor(std::string_view name, std::string_view type,
                                           const Labels& const_labels) {
  std::lock_guard lock(registries_->mu);
  auto [it, inserted] = registries_->type_of.try_emplace(std::string(name), type);
  CHECK_MSG(inserted || it->second == type,
            "metric " << name << " registered as " << it->second << " and " << type);
  auto& registry = registries_->by_const_labels[const_labels];
  if (!registry) registry = std::make_unique<prometheus::Registry>();
  return *registry;
}

CounterFamily& Metrics::Counter(std::string_view name, std::string_view help,
                                const Labels& const_labels) {
  return RegisterFamily(prometheus::BuildCounter(), name, help, const_labels,
                        RegistryFor(name, "counter", const_labels));
}

GaugeFamily& Metrics::Gauge(std::string_view name, std::string_view help,
                            const Labels& const_labels) {
  return RegisterFamily(prometheus::BuildGauge(), name, help, const_labels,
                        RegistryFor(name, "gauge", const_labels));
}

HistogramFamily& Metrics::Histogram(std::string_view name, std::string_view help,
                                    const Labels& const_labels) {
  return RegisterFamily(prometheus::BuildHistogram(), name, help, const_labels,
                        RegistryFor(name, "histogram", const_labels));
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

int Metrics::AddFamilySource(std::string key, FamilySource source) {
  std::lock_guard lock(callbacks_->mu);
  int id = callbacks_->next_id++;
  callbacks_->sources.insert_or_assign(std::move(key), Callbacks::Source{id, std::move(source)});
  return id;
}

void Metrics::RemoveFamilySource(int id) {
  std::lock_guard lock(callbacks_->mu);
  std::erase_if(callbacks_->sources, [id](const auto& entry) { return entry.second.id == id; });
}

std::string Metrics::Exposition() const {
  std::vector<prometheus::MetricFamily> rendered;
  {
    // Callbacks and sources run under the lock so one being removed is never running afterwards.
    std::lock_guard lock(callbacks_->mu);
    for (auto& [id, callback] : callbacks_->list) callback();
    for (auto& [key, source] : callbacks_->sources) {
      std::vector<prometheus::MetricFamily> families = source.render();
      std::move(families.begin(), families.end(), std::back_inserter(rendered));
    }
  }
  // Families of one name from several registries (and sources) become one (their series already
  // carry their constant labels), so each name has one HELP and one TYPE line.
  std::map<std::string, prometheus::MetricFamily> merged;
  {
    std::lock_guard lock(registries_->mu);
    for (const auto& [labels, registry] : registries_->by_const_labels) {
      for (prometheus::MetricFamily& family : registry->Collect()) {
        auto [it, inserted] = merged.try_emplace(family.name, family);
        if (inserted) continue;
        std::move(family.metric.begin(), family.metric.end(),
                  std::back_inserter(it->second.metric));
      }
    }
  }
  for (prometheus::MetricFamily& family : rendered) {
    auto [it, inserted] = merged.try_emplace(family.name);
    if (inserted) {
      it->second = std::move(family);
      continue;
    }
    std::move(family.metric.begin(), family.metric.end(), std::back_inserter(it->second.metric));
  }
  std::vector<prometheus::MetricFamily> families;
  families.reserve(merged.size());
  for (auto& [name, family] : merged) families.push_back(std::move(family));
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
