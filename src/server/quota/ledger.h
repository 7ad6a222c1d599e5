#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/resources.h"
#include "base/result.h"
#include "server/quota/quota_limits.h"

namespace warren::server::quota {

// One sandbox as a ledger counts it: `lock` names it ("<namespace>/<name>").
struct Entry {
  std::string lock;
  api::SandboxFootprint footprint;
  int64_t reserved_at_ms = 0;  // wall clock, Unix ms: in-flight creates are kept by reconcile
};

struct ReserveOutcome {
  bool admitted = true;
  Usage used;  // before this reservation
};

// What a namespace holds, kept where every server of an install sees the same numbers: in this
// process (MemoryLedger, the embedded default; the store is the truth it is rebuilt from) or in
// Redis (RedisLedger, shared by several servers). Reserve and Release are atomic and idempotent
// by lock, so a replay after a timeout never counts a sandbox twice. Thread-safe. Errors:
// Unavailable/DeadlineExceeded when the backend cannot be reached (the caller fails open).
class Ledger {
 public:
  virtual ~Ledger() = default;
  virtual std::string Describe() const = 0;

  // An existing entry for the lock: admitted, nothing changes. Otherwise the entry is recorded
  // when usage plus it stays within `limits`; else it is not admitted and nothing changes.
  virtual Result<ReserveOutcome> Reserve(std::string_view ns, const Entry& entry,
                                         const Limits& limits) = 0;
  // Removes the lock's entry, if any.
  virtual Status Release(std::string_view ns, std::string_view lock) = 0;
  virtual Result<Usage> UsageOf(std::string_view ns) = 0;
  // Makes the namespace's entries exactly `live`, keeping entries outside it that were reserved
  // at or after `keep_since_ms` (creates still in flight) unless `ended` names them (sandboxes
  // seen to end whose release did not get through), and recounts the sums.
  virtual Status Reconcile(std::string_view ns, const std::vector<Entry>& live,
                           int64_t keep_since_ms, const std::set<std::string>& ended) = 0;
};

}  // namespace warren::server::quota
