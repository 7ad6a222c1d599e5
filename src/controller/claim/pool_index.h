#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "controller/informer.h"

namespace warren::controller::claim {

// The claimable members of every pool, by pool and template revision, kept current from the
// pool-sandbox informer: what a claim picks from without reading the store.
//
// Take() removes the member it returns, so two claims in this process never try the same
// sandbox. The member comes back only through the cache: when a newer version of it arrives
// that is still claimable (its claim lost a race and nothing changed it for good), or through
// Return() when the claim failed without writing. Picks are random within a pool, preferring the
// set's current revision (the reference's §3.9 steps 5-6: fewer conflicts with the rolling
// update and between claimers).
//
// With a Node informer, a member on a node whose Node says anything but Ready=True (the node
// lifecycle controller's Ready=Unknown for a node that stopped renewing, a node reporting itself
// not ready) is set aside: never taken, not counted as stock, back when its node is Ready again.
// A member whose node has no Node object is claimable (one process without Nodes, tests).
//
// Hibernated members (paused while idle, MemberState::kHibernated) are a second tier: taken
// only when the pool has no running member, since the claim must wake them first.
//
// Thread-safe. Borrows the informers; the handlers are added in the constructor, so construct
// the index before the informers start (nodes before sandboxes, as PoolInformers does).
class PoolIndex {
 public:
  explicit PoolIndex(Informer& sandboxes, Informer* nodes = nullptr);

  // A claimable member of ns/pool, preferring template hash `revision`, then a running member
  // over a hibernated one (only when `wake` allows it); null when none.
  ObjectPtr Take(std::string_view ns, std::string_view pool, std::string_view revision,
                 bool wake = true);
  // Gives back a member whose claim did not change it.
  void Return(const ObjectPtr& member);
  // Waits until ns/pool has a claimable member, running or (when `wake`) hibernated (true), or
  // `deadline` passes (false).
  bool WaitForStock(std::string_view ns, std::string_view pool,
                    std::chrono::steady_clock::time_point deadline, bool wake = true);
  // Running claimable members of ns/pool; hibernated ones.
  size_t Available(std::string_view ns, std::string_view pool) const;
  size_t Hibernated(std::string_view ns, std::string_view pool) const;
  // Ends every WaitForStock (they return false) now and from now on (server shutdown).
  void Shutdown();

 private:
  struct Bucket {
    std::vector<ObjectPtr> items;
    std::unordered_map<std::string, size_t> position;  // object key → index in items
  };
  struct Pool {
    std::unordered_map<std::string, Bucket> by_revision;  // template hash → members
    size_t size = 0;
  };
  using Pools = std::unordered_map<std::string, Pool>;  // by "ns/pool"
  struct Placement {
    std::string pool_key, revision;
    bool hibernated = false;
  };

  void OnChange(const Informer::Change& change);
  void OnNode(const Informer::Change& change);
  // Into its pool's bucket, or set aside when its node is not Ready.
  void InsertLocked(const std::string& key, const ObjectPtr& object);
  void InsertClaimableLocked(const std::string& key, const ObjectPtr& object);
  void EraseLocked(const std::string& key);
  ObjectPtr TakeLocked(Pools& tier, const std::string& pool_key, std::string_view revision);

  mutable std::mutex mu_;
  std::condition_variable stock_cv_;
  Pools pools_;                                           // running; guarded by mu_
  Pools hibernated_;                                      // guarded by mu_
  std::unordered_map<std::string, Placement> placement_;  // object key; guarded by mu_
  std::unordered_map<std::string, int64_t> taken_;        // object key → version taken at
  std::unordered_set<std::string> unready_nodes_;         // guarded by mu_
  // Claimable members on unready nodes: node → object key → member. Guarded by mu_.
  std::unordered_map<std::string, std::unordered_map<std::string, ObjectPtr>> set_aside_;
  std::unordered_map<std::string, std::string> set_aside_node_;  // object key → node; mu_
  std::mt19937_64 rng_;                                          // guarded by mu_
  bool shut_down_ = false;                                       // guarded by mu_
};

}  // namespace warren::controller::claim
