#include "obs/operation_metrics.h"

namespace warren::obs {

OperationMetrics::OperationMetrics(const OperationMetricsSpec& spec, Metrics& metrics)
    : duration_(spec.duration.empty()
                    ? nullptr
                    : &metrics.Histogram(spec.duration, spec.duration_help, spec.const_labels)),
      total_(spec.total.empty() ? nullptr
                                : &metrics.Counter(spec.total, spec.total_help, spec.const_labels)),
      buckets_(spec.buckets) {}

OperationMetrics::Series& OperationMetrics::SeriesFor(std::string_view namespace_) {
  auto it = series_.find(namespace_);
  if (it != series_.end()) return it->second;
  std::string ns(namespace_);
  Series s{nullptr, nullptr, nullptr};
  if (duration_ != nullptr) s.duration = &duration_->Add({{"namespace", ns}}, buckets_);
  if (total_ != nullptr) {
    s.success = &total_->Add({{"namespace", ns}, {"result", "success"}});
    s.failure = &total_->Add({{"namespace", ns}, {"result", "failure"}});
  }
  return series_.emplace(std::move(ns), s).first->second;
}

void OperationMetrics::Record(std::string_view namespace_, bool ok, double seconds) {
  std::lock_guard lock(mu_);
  Series& s = SeriesFor(namespace_);
  if (ok && s.duration) s.duration->Observe(seconds);
  if (prometheus::Counter* c = ok ? s.success : s.failure) c->Increment();
}

}  // namespace warren::obs
