#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "controller/informer.h"

namespace warren::controller {

// The last write a controller made for a key that its informer had not shown when the
// controller stopped waiting for it. A reconcile that counts from the cache must not act until
// the cache has reached its own last write: counting from behind it, it would create, claim or
// delete again what it already did (client-go's controller "expectations", by revision).
// Thread-safe.
class OwnWriteFence {
 public:
  // How soon a key whose cache is behind its own writes is looked at again.
  static constexpr std::chrono::milliseconds kRetryAfter{50};

  // Waits up to `timeout` for `cache` to reach `revision`; when it does not, remembers the
  // revision for `key`. Returns whether the cache reached it.
  bool WaitFor(const std::string& key, int64_t revision, const Informer& cache,
               std::chrono::milliseconds timeout);
  // Whether `cache` has reached the write remembered for `key` (true when there is none); a
  // reached write is forgotten.
  bool Reached(const std::string& key, const Informer& cache);
  // The key's object is gone.
  void Forget(const std::string& key);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, int64_t> unseen_;  // guarded by mu_
};

}  // namespace warren::controller
