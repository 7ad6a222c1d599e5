#include "controller/pool_demand.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace warren::controller {
namespace {

constexpr size_t kMaxRefills = 64;

}  // namespace

void PoolDemand::AddClaim(base::WallTime at, int32_t needed) {
  if (!claims_.empty()) at = std::max(at, claims_.back().at);
  needed = std::max(needed, 1);
  claims_.push_back({at, needed});
  ++sizes_[needed];
}

void PoolDemand::AddRefill(Ms took) {
  refills_.push_back(std::max(Ms(0), took));
  while (refills_.size() > kMaxRefills) refills_.pop_front();
}

void PoolDemand::Prune(base::WallTime before) {
  while (!claims_.empty() && claims_.front().at <= before) {
    auto it = sizes_.find(claims_.front().needed);
    if (--it->second == 0) sizes_.erase(it);
    claims_.pop_front();
  }
}

std::optional<PoolDemand::Ms> PoolDemand::RefillP90() const {
  if (refills_.empty()) return std::nullopt;
  std::vector<Ms> sorted(refills_.begin(), refills_.end());
  std::sort(sorted.begin(), sorted.end());
  size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(sorted.size())));
  return sorted[std::max<size_t>(rank, 1) - 1];
}

PoolDemand::Forecast PoolDemand::Predict(base::WallTime now, std::chrono::seconds rate_window,
                                         double cold_per_hour, Ms horizon) const {
  Forecast f;
  f.horizon = horizon;
  f.claims_in_lookback = static_cast<int32_t>(claims_.size());
  if (claims_.empty()) return f;

  // Claims in each minute of the rate window, newest minute first.
  auto minutes = std::max<int64_t>(1, rate_window.count() / 60);
  std::vector<int64_t> per_minute(static_cast<size_t>(minutes), 0);
  int64_t last_minute = 0;
  for (auto it = claims_.rbegin(); it != claims_.rend(); ++it) {
    auto age = std::chrono::duration_cast<std::chrono::minutes>(now - it->at).count();
    if (it->at > now) continue;
    if (age >= minutes) break;
    ++per_minute[static_cast<size_t>(age)];
    if (now - it->at < std::max<Ms>(std::chrono::minutes(1), horizon)) ++last_minute;
  }
  std::nth_element(per_minute.begin(), per_minute.begin() + minutes / 2, per_minute.end());
  f.claims_per_hour = static_cast<double>(per_minute[static_cast<size_t>(minutes / 2)]) * 60.0;

  int32_t by_history = 0;
  if (f.claims_per_hour > cold_per_hour) {
    // The smallest size that leaves at most that share of the recorded claims needing more.
    double allowed = cold_per_hour / f.claims_per_hour * static_cast<double>(claims_.size());
    int64_t above = 0;
    for (auto it = sizes_.rbegin(); it != sizes_.rend(); ++it) {
      if (static_cast<double>(above + it->second) > allowed) {
        by_history = it->first;
        break;
      }
      above += it->second;
    }
  }
  auto span = std::max<Ms>(std::chrono::minutes(1), horizon);
  double expected = static_cast<double>(last_minute) * static_cast<double>(horizon.count()) /
                    static_cast<double>(span.count());
  auto by_rate = static_cast<int32_t>(std::ceil(expected + 2.0 * std::sqrt(expected)));
  f.replicas = std::max(by_history, by_rate);
  return f;
}

}  // namespace warren::controller
