#include "stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/small_file.h"
#include "base/strings.h"

namespace warren::bench {

Summary Summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
  };
  s.min = v.front();
  s.p50 = at(0.50);
  s.p90 = at(0.90);
  s.p99 = at(0.99);
  s.max = v.back();
  return s;
}

std::string FormatRow(const std::string& label, const Summary& s) {
  return fmt::format("  {:<34} {:>5} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f}", label, s.n,
                     s.min, s.p50, s.p90, s.p99, s.max);
}

uint64_t MemAvailableBytes() {
  auto text = base::ReadSmallFile("/proc/meminfo");
  if (!text.ok()) return 0;
  for (std::string_view line : base::Split(*text, '\n')) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    auto parts = base::SplitNonEmpty(line.substr(13), ' ');
    if (parts.empty()) return 0;
    return base::ParseUint64(parts[0]).value_or(0) * 1024;
  }
  return 0;
}

}  // namespace warren::bench
