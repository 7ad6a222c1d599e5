#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "store/store.h"

namespace warren::store::testing {

// Holds the store's watch delivery from the first event of `kind` that `matches` until Release
// (or destruction). The store delivers every watch on one thread, so while the gate holds, no
// other watcher sees a later event: "the cache has not caught up with our write yet" becomes
// certain instead of a race. Made after the code under test has subscribed, the held event itself
// still reaches that code.
class DeliveryGate {
 public:
  using Predicate = std::function<bool(const WatchEvent&)>;
  DeliveryGate(Store& store, const api::KindInfo& kind, Predicate matches);
  ~DeliveryGate();
  DeliveryGate(const DeliveryGate&) = delete;
  DeliveryGate& operator=(const DeliveryGate&) = delete;

  // True once an event matched and delivery is held, waiting up to `timeout` for it.
  bool WaitHeld(std::chrono::milliseconds timeout);
  // Lets delivery go on; later events pass.
  void Release();

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool held = false;
    bool released = false;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::unique_ptr<Subscription> subscription_;
};

}  // namespace warren::store::testing
