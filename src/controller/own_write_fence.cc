#include "controller/own_write_fence.h"

#include <algorithm>

namespace warren::controller {

bool OwnWriteFence::WaitFor(const std::string& key, int64_t revision, const Informer& cache,
                            std::chrono::milliseconds timeout) {
  if (cache.WaitForRevision(revision, timeout)) return true;
  std::lock_guard lock(mu_);
  int64_t& unseen = unseen_[key];
  unseen = std::max(unseen, revision);
  return false;
}

bool OwnWriteFence::Reached(const std::string& key, const Informer& cache) {
  std::lock_guard lock(mu_);
  auto it = unseen_.find(key);
  if (it == unseen_.end()) return true;
  if (cache.revision() < it->second) return false;
  unseen_.erase(it);
  return true;
}

void OwnWriteFence::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  unseen_.erase(key);
}

}  // namespace warren::controller
