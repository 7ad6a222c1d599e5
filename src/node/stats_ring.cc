#include "node/stats_ring.h"

namespace warren::node {

void StatsRing::Add(StatsSample sample) {
  if (capacity_ == 0) return;
  if (!samples_.empty()) {
    const StatsSample& prev = samples_.back();
    const auto wall_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(sample.time - prev.time).count();
    if (wall_ns > 0 && sample.cpu_usage_ns >= prev.cpu_usage_ns && sample.cpu_count > 0) {
      const double used = static_cast<double>(sample.cpu_usage_ns - prev.cpu_usage_ns);
      sample.cpu_used_pct =
          100.0 * used / (static_cast<double>(wall_ns) * static_cast<double>(sample.cpu_count));
    }
  }
  samples_.push_back(sample);
  while (samples_.size() > capacity_) samples_.pop_front();
}

std::vector<StatsSample> StatsRing::Range(base::WallTime start, base::WallTime end) const {
  std::vector<StatsSample> out;
  for (const StatsSample& s : samples_) {
    if (start != base::WallTime{} && s.time < start) continue;
    if (end != base::WallTime{} && s.time > end) continue;
    out.push_back(s);
  }
  return out;
}

}  // namespace warren::node
