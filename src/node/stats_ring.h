#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "base/clock.h"

namespace warren::node {

// One sample of a sandbox's resource use, as GET /sandboxes/{id}/metrics and the Prometheus
// exporter read them.
struct StatsSample {
  base::WallTime time{};
  uint64_t cpu_usage_ns = 0;  // cumulative
  double cpu_used_pct = 0;    // of `cpu_count` CPUs over the interval since the previous sample
  int64_t cpu_count = 0;      // the CPUs the sandbox may use (its limit, rounded up; else host)
  uint64_t memory_bytes = 0;  // working set (usage minus inactive file cache)
  uint64_t memory_limit_bytes = 0;
  uint64_t disk_bytes = 0;        // the writable layer
  uint64_t disk_limit_bytes = 0;  // what it may grow to (ephemeral-storage); 0 = unbounded
  uint64_t pids = 0;
  uint64_t oom_kills = 0;  // cumulative
};

// The last `capacity` samples of one sandbox, oldest first. A value type; the agent guards it.
class StatsRing {
 public:
  explicit StatsRing(size_t capacity) : capacity_(capacity) {}

  // Appends a sample; computes its cpu_used_pct from the previous one.
  void Add(StatsSample sample);
  // Samples with start <= time <= end (either may be zero = unbounded), oldest first.
  std::vector<StatsSample> Range(base::WallTime start, base::WallTime end) const;
  const StatsSample* Latest() const { return samples_.empty() ? nullptr : &samples_.back(); }
  size_t size() const { return samples_.size(); }

 private:
  size_t capacity_;
  std::deque<StatsSample> samples_;
};

}  // namespace warren::node
