#pragma once

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "api/object.h"
#include "base/clock.h"
#include "store/store.h"

namespace warren::node {

// Writes Event objects (warren.dev/v1alpha1, the core/v1 Event shape) about Sandboxes, as a
// kubelet does: `warren get events` shows them. A repeat of the same reason and message for
// the same object bumps count and lastTimestamp instead of adding an object. Events carry an
// owner reference to their Sandbox, so the garbage collector removes them with it.
//
// Thread-safe. Blocking (store writes). Failures are logged, never returned: an Event is a
// report, and the reconcile that emits it must not fail because of it.
class EventRecorder {
 public:
  EventRecorder(store::Store& store, base::Clock& clock, std::string component, std::string host);

  void Warning(const api::Object& about, const std::string& reason, const std::string& message);
  void Normal(const api::Object& about, const std::string& reason, const std::string& message);
  // Forget the repeats of an object (deleted).
  void Forget(const std::string& uid);

 private:
  void Record(const api::Object& about, const std::string& type, const std::string& reason,
              const std::string& message);

  store::Store& store_;
  base::Clock& clock_;
  const std::string component_;
  const std::string host_;
  std::mutex mu_;
  // (uid, reason, message) → the Event's name; guarded by mu_.
  std::map<std::tuple<std::string, std::string, std::string>, std::string> seen_;
};

}  // namespace warren::node
