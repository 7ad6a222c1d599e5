#pragma once

#include <map>
#include <mutex>
#include <string>

#include "server/quota/ledger.h"

namespace warren::server::quota {

// The embedded ledger: this process's memory, rebuilt from the store at start (every live
// Sandbox is an entry) and kept by the quota service's watch. Thread-safe.
class MemoryLedger final : public Ledger {
 public:
  std::string Describe() const override { return "embedded"; }
  Result<ReserveOutcome> Reserve(std::string_view ns, const Entry& entry,
                                 const Limits& limits) override;
  Status Release(std::string_view ns, std::string_view lock) override;
  Result<Usage> UsageOf(std::string_view ns) override;
  Status Reconcile(std::string_view ns, const std::vector<Entry>& live, int64_t keep_since_ms,
                   const std::set<std::string>& ended) override;

 private:
  struct Namespace {
    std::map<std::string, Entry, std::less<>> entries;
    Usage usage;
  };
  static void Add(Namespace& n, const Entry& e);
  static void Remove(Namespace& n, std::map<std::string, Entry, std::less<>>::iterator it);

  std::mutex mu_;
  std::map<std::string, Namespace, std::less<>> namespaces_;  // guarded by mu_
};

}  // namespace warren::server::quota
