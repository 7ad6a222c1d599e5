#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/json.h"
#include "cli/printer.h"

namespace warren::cli {

// The newest resource sample of one sandbox, as E2B's metrics routes report it
// (`cpuUsedPct` is a percentage of the sandbox's own `cpuCount` cores).
struct UsageSample {
  int64_t cpu_count = 0;
  double cpu_used_pct = 0;
  int64_t mem_used = 0;
  int64_t mem_total = 0;
  int64_t disk_used = 0;
  int64_t disk_total = 0;

  // The cores in use, in thousandths ("250m" for a quarter of a core).
  int64_t MilliCores() const;
};

// One row of `warren top`: a Sandbox and its sample, if the node has taken one yet.
struct SandboxUsage {
  std::string ns;
  std::string name;
  std::string sandbox_id;  // "" while the Sandbox has none
  std::optional<UsageSample> sample;
};

// Reads one entry of `{"sandboxes": {id: {...}}}`; fields that are missing count as 0, so a
// server that leaves one out still yields a row.
UsageSample ParseUsageSample(const api::Json& metric);

enum class UsageSort { kNone, kCpu, kMemory };

// Sorts the heaviest first, as `kubectl top --sort-by`; rows with no sample go last, and ties
// keep the listing's order (namespace, then name).
void SortUsage(std::vector<SandboxUsage>& rows, UsageSort by);

// "45Mi" for memory and disk the way `kubectl top` prints memory: whole units, Ki below 1 Mi and
// Gi from 10 Gi on, so columns stay short.
std::string FormatBytes(int64_t bytes);

// The table `warren top` prints: [NAMESPACE] NAME SANDBOX-ID CPU(cores) CPU% MEMORY(bytes)
// MEM-LIMIT DISK, "-" where there is no sample (or no limit).
Table UsageTable(const std::vector<SandboxUsage>& rows, bool with_namespace);

}  // namespace warren::cli
