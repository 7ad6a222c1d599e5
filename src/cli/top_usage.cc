#include "cli/top_usage.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace warren::cli {

int64_t UsageSample::MilliCores() const {
  return std::llround(cpu_used_pct * static_cast<double>(cpu_count) * 10.0);
}

namespace {

int64_t Int(const api::Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  return j[key].get<int64_t>();
}

}  // namespace

UsageSample ParseUsageSample(const api::Json& metric) {
  UsageSample s;
  s.cpu_count = Int(metric, "cpuCount");
  if (metric.is_object() && metric.contains("cpuUsedPct") && metric["cpuUsedPct"].is_number()) {
    s.cpu_used_pct = metric["cpuUsedPct"].get<double>();
  }
  s.mem_used = Int(metric, "memUsed");
  s.mem_total = Int(metric, "memTotal");
  s.disk_used = Int(metric, "diskUsed");
  s.disk_total = Int(metric, "diskTotal");
  return s;
}

void SortUsage(std::vector<SandboxUsage>& rows, UsageSort by) {
  if (by == UsageSort::kNone) return;
  auto key = [by](const SandboxUsage& r) -> int64_t {
    if (!r.sample) return -1;
    return by == UsageSort::kCpu ? r.sample->MilliCores() : r.sample->mem_used;
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const SandboxUsage& a, const SandboxUsage& b) { return key(a) > key(b); });
}

std::string FormatBytes(int64_t bytes) {
  constexpr int64_t kKi = 1024, kMi = kKi * 1024, kGi = kMi * 1024;
  if (bytes < 0) bytes = 0;
  if (bytes < kMi) return fmt::format("{}Ki", bytes / kKi);
  if (bytes < 10 * kGi) return fmt::format("{}Mi", bytes / kMi);
  return fmt::format("{}Gi", bytes / kGi);
}

Table UsageTable(const std::vector<SandboxUsage>& rows, bool with_namespace) {
  std::vector<std::string> header = {"NAME",          "SANDBOX-ID", "CPU(cores)", "CPU%",
                                     "MEMORY(bytes)", "MEM-LIMIT",  "DISK"};
  if (with_namespace) header.insert(header.begin(), "NAMESPACE");
  Table table(std::move(header));
  for (const SandboxUsage& r : rows) {
    std::vector<std::string> row = {r.name, r.sandbox_id.empty() ? "-" : r.sandbox_id};
    if (r.sample) {
      const UsageSample& s = *r.sample;
      row.push_back(fmt::format("{}m", s.MilliCores()));
      row.push_back(fmt::format("{:.0f}%", s.cpu_used_pct));
      row.push_back(FormatBytes(s.mem_used));
      row.push_back(s.mem_total > 0 ? FormatBytes(s.mem_total) : "-");
      row.push_back(s.disk_total > 0
                        ? fmt::format("{}/{}", FormatBytes(s.disk_used), FormatBytes(s.disk_total))
                        : FormatBytes(s.disk_used));
    } else {
      row.insert(row.end(), 5, "-");
    }
    if (with_namespace) row.insert(row.begin(), r.ns);
    table.AddRow(std::move(row));
  }
  return table;
}

}  // namespace warren::cli
