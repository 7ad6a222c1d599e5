#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "server/quota/ledger.h"

struct redisContext;

namespace warren::server::quota {

// The ledger in Redis, shared by every server of an install (the reference's layout,
// openkruise-agents.md §3.10, hash-tagged per namespace so one namespace's keys share a Redis
// Cluster slot):
//   warren:quota:{<ns>}:live  hash  lock → "<cpu millicores>:<memory bytes>:<reserved at ms>"
//   warren:quota:{<ns>}:sum   hash  sandboxes, cpu, memory
// Reserve and Release are each one Lua script, so check-and-add is atomic across servers and a
// replay of the same lock adds nothing. Every call has `timeout` (connect and each command); a
// connection that failed is dropped and made again on the next call. One connection, calls
// serialised (a call is ~0.1 ms on loopback; the quota service is not a hot loop).
// Thread-safe.
class RedisLedger final : public Ledger {
 public:
  // `address`: "host:port" or "redis://host:port". Does not connect yet.
  static Result<std::unique_ptr<RedisLedger>> Create(std::string address,
                                                     std::chrono::milliseconds timeout);
  ~RedisLedger() override;

  std::string Describe() const override {
    return "redis at " + host_ + ":" + std::to_string(port_);
  }
  Result<ReserveOutcome> Reserve(std::string_view ns, const Entry& entry,
                                 const Limits& limits) override;
  Status Release(std::string_view ns, std::string_view lock) override;
  Result<Usage> UsageOf(std::string_view ns) override;
  Status Reconcile(std::string_view ns, const std::vector<Entry>& live, int64_t keep_since_ms,
                   const std::set<std::string>& ended) override;

 private:
  RedisLedger(std::string host, int port, std::chrono::milliseconds timeout);
  struct Reply;
  // Runs one command (argv) on the connection, connecting first when needed. Under mu_.
  Result<Reply> CommandLocked(const std::vector<std::string>& argv);
  Result<Reply> Command(const std::vector<std::string>& argv);

  const std::string host_;
  const int port_;
  const std::chrono::milliseconds timeout_;
  struct ContextFree {
    void operator()(redisContext* context) const;
  };
  std::mutex mu_;
  std::unique_ptr<redisContext, ContextFree> context_;  // guarded by mu_
};

}  // namespace warren::server::quota
