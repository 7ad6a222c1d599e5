#pragma once

#include <string>
#include <vector>

namespace warren::bench {

// Order statistics of a sample of latencies in milliseconds.
struct Summary {
  size_t n = 0;
  double min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Summary Summarize(std::vector<double> samples_ms);
std::string FormatRow(const std::string& label, const Summary& s);

// MemAvailable from /proc/meminfo, in bytes (0 when unreadable).
uint64_t MemAvailableBytes();

}  // namespace warren::bench
