#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/field_selector.h"
#include "api/json.h"
#include "api/kinds.h"
#include "api/label_selector.h"
#include "api/object.h"
#include "base/result.h"

namespace warren::store {

// Errors every backend returns, with Kubernetes' wording so the REST layer passes them through:
//   NotFound          sandboxes.agents.kruise.io "x" not found
//   AlreadyExists     sandboxes.agents.kruise.io "x" already exists
//   Aborted           Operation cannot be fulfilled on sandboxes.agents.kruise.io "x": the object
//                     has been modified; please apply your changes to the latest version and try
//                     again (stale resourceVersion 5, current 7)        → HTTP 409 Conflict
//   OutOfRange        too old resource version: 5 (oldest available: 120) → HTTP 410 Gone
//   InvalidArgument   admission failures (api/admission.h), bad continue tokens, bad input
//   Unavailable       the store is shutting down, or its disk refused the write (nothing was
//                     written; retry)

struct ListOptions {
  std::string namespace_;  // "" = every namespace (and always "" for cluster-scoped kinds)
  api::LabelSelector label_selector;
  api::FieldSelector field_selector;
  int64_t limit = 0;  // 0 = no limit
  // From a previous page's ObjectList::continue_token: the next page, read at the same
  // revision as the first so pages form one consistent list.
  std::string continue_token;
};

struct ObjectList {
  std::vector<api::Object> items;  // ordered by namespace, then name
  int64_t resource_version = 0;    // the revision the list reflects
  std::string continue_token;      // empty on the last page
};

// Conditions a write applies only if they hold (else Aborted/Conflict).
struct Preconditions {
  int64_t resource_version = 0;  // 0 = any
  std::string uid;               // "" = any
};

// What happens to dependents (objects whose ownerReferences name the deleted object).
enum class Propagation {
  kBackground,  // the garbage collector deletes them once the owner is gone (the default)
  kOrphan,      // they are kept, with the owner reference removed
};

struct DeleteOptions {
  Preconditions preconditions;
  Propagation propagation = Propagation::kBackground;
};

// Which part of an object an update or patch writes.
enum class Subresource {
  kMain,    // everything but the status, when the kind has a status subresource
  kStatus,  // the status only; the generation is not bumped
  // Both in one write, for a controller in the server that changes its own metadata and the
  // status together (a node agent's finalizer and first status): one commit and one watch event
  // instead of two. Not offered over HTTP, where the two stay separate as in Kubernetes.
  kMainAndStatus,
};

enum class EventType { kAdded, kModified, kDeleted };
std::string_view EventTypeName(EventType type);  // "ADDED", "MODIFIED", "DELETED"

// One change seen by a watch. For kDeleted the object is its last state, with
// metadata.resourceVersion set to the revision of the deletion.
struct WatchEvent {
  EventType type = EventType::kAdded;
  std::shared_ptr<const api::Object> object;  // shared between watchers; never null
  int64_t revision = 0;
};

struct WatchOptions {
  std::string namespace_;  // "" = every namespace
  api::LabelSelector label_selector;
  api::FieldSelector field_selector;
  // nullopt: the current objects first (as ADDED, at one consistent revision), then every
  // change. A revision: every change after it, in order (resuming a watch); older than the
  // store's history → OutOfRange (410 Gone) and the client should list again.
  std::optional<int64_t> resource_version;
  // Events a pull-based Watcher may hold before the watch ends with ResourceExhausted (a
  // consumer that cannot keep up must re-list rather than grow memory without bound).
  size_t max_queued_events = 100000;
};

// The name a watch's field selector pins with `metadata.name=<name>`, or "" when it pins none.
// A watch without a revision then lists only that key of its kind and namespace first: waiting
// for one sandbox must not read every sandbox.
std::string PinnedName(const WatchOptions& options);

// Callbacks of a push subscription. Both run on a store thread, one call at a time and in
// revision order; they must not block (hand work to another thread) and must not call back
// into the store synchronously.
struct WatchSink {
  std::function<void(const WatchEvent&)> on_event;
  // Called once if the watch ends by itself (store shutdown, history lost); not after Cancel.
  std::function<void(const Status&)> on_close;
};

// A live push subscription. Destroying it cancels it. Thread-safe.
class Subscription {
 public:
  virtual ~Subscription() = default;
  // Stops delivery; after it returns no callback is running or will run (except the one it is
  // called from, when called inside a callback). Idempotent.
  virtual void Cancel() = 0;
  // Stops delivery without waiting; safe from anywhere, including the callbacks.
  virtual void CancelAsync() = 0;
};

// A pull-based watch, for controllers: a thread calls Next in a loop. Thread-safe.
class Watcher {
 public:
  virtual ~Watcher() = default;
  // The next event; nullopt when `timeout` passes first. Once the watch has ended, returns the
  // reason (OutOfRange/Gone, ResourceExhausted for a consumer that fell too far behind,
  // Unavailable at shutdown, Cancelled after Stop).
  virtual Result<std::optional<WatchEvent>> Next(std::chrono::milliseconds timeout) = 0;
  virtual void Stop() = 0;
};

// The object store: Kubernetes-shaped objects with one global revision counter, optimistic
// concurrency, finalizers, owner-reference garbage collection and watches. Every write runs
// admission (api/admission.h) first. Implementations are thread-safe; a write returns only once
// it is durable.
class Store {
 public:
  virtual ~Store() = default;

  virtual Result<api::Object> Get(const api::KindInfo& kind, std::string_view namespace_,
                                  std::string_view name) = 0;
  virtual Result<ObjectList> List(const api::KindInfo& kind, const ListOptions& options) = 0;

  // Creates the object (kind from its apiVersion/kind). metadata.name may be empty when
  // generateName is set (a 5-character suffix is added); uid, creationTimestamp, generation 1
  // and resourceVersion are assigned; a status is dropped for kinds with a status subresource.
  virtual Result<api::Object> Create(api::Object object) = 0;

  // Replaces the object, or with kStatus only its status (kMainAndStatus: both). A non-zero
  // metadata.resourceVersion is a precondition (stale → Aborted, 409). The generation goes up
  // when anything but metadata and status changes. Removing the last finalizer of an object
  // being deleted deletes it. An update that changes nothing writes nothing.
  virtual Result<api::Object> Update(api::Object object,
                                     Subresource subresource = Subresource::kMain) = 0;

  // Applies a JSON merge patch (RFC 7386) atomically. A metadata.resourceVersion in the patch
  // is a precondition.
  virtual Result<api::Object> Patch(const api::KindInfo& kind, std::string_view namespace_,
                                    std::string_view name, const api::Json& merge_patch,
                                    Subresource subresource = Subresource::kMain) = 0;

  // Deletes the object. With finalizers it only gets a deletionTimestamp (and stays until the
  // last finalizer is removed); the returned object shows which happened.
  virtual Result<api::Object> Delete(const api::KindInfo& kind, std::string_view namespace_,
                                     std::string_view name, const DeleteOptions& options = {}) = 0;

  // Push watch of one kind (or every kind when `kind` is null).
  virtual Result<std::unique_ptr<Subscription>> Subscribe(const api::KindInfo* kind,
                                                          WatchOptions options, WatchSink sink) = 0;

  // Pull watch built on Subscribe.
  Result<std::unique_ptr<Watcher>> Watch(const api::KindInfo* kind, WatchOptions options);

  // The revision of the last committed write.
  virtual int64_t CurrentRevision() = 0;

  // Shorthand for Update(object, kStatus).
  Result<api::Object> UpdateStatus(api::Object object) {
    return Update(std::move(object), Subresource::kStatus);
  }
};

}  // namespace warren::store
