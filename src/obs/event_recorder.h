#pragma once

#include <chrono>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "api/object.h"
#include "base/clock.h"
#include "base/status.h"
#include "store/store.h"

namespace warren::obs {

enum class EventType { kNormal, kWarning };

// Records Event objects (warren.dev/v1alpha1 Event, shaped like core/v1) about other objects,
// for `warren get events` and `warren describe`. Like Kubernetes' recorder it folds repeats: the
// same type, reason and message about the same object within `fold_window` bumps `count` and
// `lastTimestamp` of the existing Event instead of creating another, so a controller retrying
// a failure every second writes one Event, not thousands.
//
// Borrows the store (must outlive the recorder). Thread-safe. A failed write is returned (and
// callers usually log and ignore it: an Event is a report, never a reason to fail the work).
class EventRecorder {
 public:
  struct Options {
    std::string component;  // source.component, e.g. "sandboxset-controller"
    std::string host;       // source.host; "" = this machine's hostname
    std::chrono::seconds fold_window{600};
    size_t max_remembered = 4096;  // folded events remembered (least recently used dropped)
  };
  EventRecorder(store::Store& store, Options options, base::Clock& clock = base::RealClock());

  Status Record(const api::Object& involved, EventType type, std::string_view reason,
                std::string_view message);
  Status Normal(const api::Object& involved, std::string_view reason, std::string_view message) {
    return Record(involved, EventType::kNormal, reason, message);
  }
  Status Warning(const api::Object& involved, std::string_view reason, std::string_view message) {
    return Record(involved, EventType::kWarning, reason, message);
  }

 private:
  // uid (or namespace/kind/name when the object has no uid yet), type, reason, message.
  using Key = std::tuple<std::string, int, std::string, std::string>;
  struct Remembered {
    std::string namespace_, name;  // the Event object
    base::WallTime first_seen;
    std::list<Key>::iterator lru;
  };

  Status Create(const api::Object& involved, EventType type, std::string_view reason,
                std::string_view message, const Key& key);
  void Remember(const Key& key, std::string namespace_, std::string name, base::WallTime now);

  store::Store& store_;
  Options options_;
  base::Clock& clock_;
  std::mutex mu_;
  std::map<Key, Remembered> remembered_;  // guarded by mu_
  std::list<Key> lru_;                    // guarded by mu_; most recent at the front
};

}  // namespace warren::obs
