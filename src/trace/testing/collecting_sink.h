#pragma once

#include <mutex>
#include <vector>

#include "trace/span_data.h"
#include "trace/tracer.h"

namespace warren::trace::testing {

// A sink that keeps every span, installed for the life of the object. Thread-safe.
class CollectingSink : public SpanSink {
 public:
  explicit CollectingSink(TracerConfig config = {}) { Install(*this, config); }
  ~CollectingSink() override { Uninstall(); }

  void Submit(SpanData span) override {
    std::lock_guard lock(mu_);
    spans_.push_back(std::move(span));
  }
  std::vector<SpanData> spans() const {
    std::lock_guard lock(mu_);
    return spans_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<SpanData> spans_;
};

}  // namespace warren::trace::testing
