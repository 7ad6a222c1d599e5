#include "server/quota/memory_ledger.h"

#include <set>

namespace warren::server::quota {

void MemoryLedger::Add(Namespace& n, const Entry& e) {
  n.entries.emplace(e.lock, e);
  n.usage.sandboxes += 1;
  n.usage.cpu_millicores += e.footprint.cpu_millicores;
  n.usage.memory_bytes += e.footprint.memory_bytes;
}

void MemoryLedger::Remove(Namespace& n, std::map<std::string, Entry, std::less<>>::iterator it) {
  n.usage.sandboxes -= 1;
  n.usage.cpu_millicores -= it->second.footprint.cpu_millicores;
  n.usage.memory_bytes -= it->second.footprint.memory_bytes;
  n.entries.erase(it);
}

Result<ReserveOutcome> MemoryLedger::Reserve(std::string_view ns, const Entry& entry,
                                             const Limits& limits) {
  std::lock_guard lock(mu_);
  auto it = namespaces_.find(ns);
  if (it == namespaces_.end()) it = namespaces_.emplace(std::string(ns), Namespace{}).first;
  Namespace& n = it->second;
  ReserveOutcome out{.admitted = true, .used = n.usage};
  if (n.entries.contains(entry.lock)) return out;
  if (Exceeds(limits, n.usage, entry.footprint)) {
    out.admitted = false;
    return out;
  }
  Add(n, entry);
  return out;
}

Status MemoryLedger::Release(std::string_view ns, std::string_view lock) {
  std::lock_guard guard(mu_);
  auto n = namespaces_.find(ns);
  if (n == namespaces_.end()) return Status::Ok();
  auto e = n->second.entries.find(lock);
  if (e != n->second.entries.end()) Remove(n->second, e);
  return Status::Ok();
}

Result<Usage> MemoryLedger::UsageOf(std::string_view ns) {
  std::lock_guard lock(mu_);
  auto n = namespaces_.find(ns);
  return n == namespaces_.end() ? Usage{} : n->second.usage;
}

Status MemoryLedger::Reconcile(std::string_view ns, const std::vector<Entry>& live,
                               int64_t keep_since_ms, const std::set<std::string>& ended) {
  std::lock_guard lock(mu_);
  Namespace fresh;
  std::set<std::string, std::less<>> seen;
  for (const Entry& e : live) {
    if (seen.insert(e.lock).second) Add(fresh, e);
  }
  if (auto old = namespaces_.find(ns); old != namespaces_.end()) {
    for (const auto& [lock_name, e] : old->second.entries) {
      if (!seen.contains(lock_name) && e.reserved_at_ms >= keep_since_ms &&
          !ended.contains(lock_name)) {
        Add(fresh, e);
      }
    }
  }
  namespaces_[std::string(ns)] = std::move(fresh);
  return Status::Ok();
}

}  // namespace warren::server::quota
