#include "store/testing/delivery_gate.h"

#include "base/check.h"

namespace warren::store::testing {

DeliveryGate::DeliveryGate(Store& store, const api::KindInfo& kind, Predicate matches) {
  WatchSink sink;
  sink.on_event = [state = state_, matches = std::move(matches)](const WatchEvent& e) {
    std::unique_lock lock(state->mu);
    if (state->held || state->released || !matches(e)) return;
    state->held = true;
    state->cv.notify_all();
    state->cv.wait(lock, [&] { return state->released; });
  };
  auto subscribed =
      store.Subscribe(&kind, {.resource_version = store.CurrentRevision()}, std::move(sink));
  CHECK_OK(subscribed.status());
  subscription_ = std::move(subscribed).value();
}

DeliveryGate::~DeliveryGate() {
  Release();
  subscription_->Cancel();
}

bool DeliveryGate::WaitHeld(std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mu);
  return state_->cv.wait_for(lock, timeout, [&] { return state_->held; });
}

void DeliveryGate::Release() {
  std::lock_guard lock(state_->mu);
  state_->released = true;
  state_->cv.notify_all();
}

}  // namespace warren::store::testing
