#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "controller/informer.h"
#include "store/store.h"

namespace warren::controller::testing {

// Plays the node agent's status role in unit tests of the pool controllers, which need members
// to become Running and Ready without real sandboxes: every pool Sandbox with no phase gets
// status phase=Running and condition Ready=True, written through the status subresource as the
// node agent writes it. Integration tests (tests/privileged/pool) run the real node agent.
// While `hold` is set, new sandboxes are left Pending (to test creating members). With
// `follow_pause` it also plays the node's pause and resume: spec.paused true makes a Running
// sandbox Paused (Ready=False), false makes a Paused one Running and Ready again.
// Thread-safe; borrows the store.
class PoolTestNode {
 public:
  explicit PoolTestNode(store::Store& store);
  ~PoolTestNode();

  void set_hold(bool hold) { hold_ = hold; }
  void set_follow_pause(bool follow) { follow_pause_ = follow; }
  // Marks every pending pool sandbox ready now (after a hold).
  void ReadyAll();
  // Sets a sandbox's phase to Failed (Ready=False).
  void Fail(const std::string& ns, const std::string& name);

 private:
  void MarkReady(const std::string& ns, const std::string& name);
  void FollowPause(const std::string& ns, const std::string& name);

  store::Store& store_;
  std::atomic<bool> hold_{false};
  std::atomic<bool> follow_pause_{false};
  std::unique_ptr<Informer> sandboxes_;
  std::unique_ptr<std::thread> worker_;
  struct Queue;
  std::unique_ptr<Queue> queue_;
};

}  // namespace warren::controller::testing
