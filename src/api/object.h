#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/json.h"
#include "base/clock.h"

namespace warren::api {

// A link from a dependent to the object that owns it; the store's garbage collector deletes a
// dependent once every object it names (by uid) is gone.
struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool block_owner_deletion = false;

  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

// Kubernetes ObjectMeta: the fields the store, the REST layer and controllers act on are typed;
// any other metadata field a client sent is kept verbatim in `extra`. Value type.
struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;  // empty for cluster-scoped kinds
  std::string uid;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  int64_t resource_version = 0;  // 0 = unset; on the wire a decimal string
  int64_t generation = 0;
  std::optional<base::WallTime> creation_timestamp;
  std::optional<base::WallTime> deletion_timestamp;
  std::vector<std::string> finalizers;
  std::vector<OwnerReference> owner_references;
  Json extra = Json::object();  // metadata fields we do not model (managedFields, selfLink, ...)
};

// A Kubernetes-shaped object as the store and the REST layer move it: typed metadata plus the
// rest of the document (spec, status, and any field we do not know, which is kept so manifests
// round-trip). Typed views of spec and status (api/types/*.h) are decoded from `body` on demand
// and encoded back into it, so unknown fields inside spec survive as well. Value type;
// thread-compatible.
struct Object {
  std::string api_version;  // "agents.kruise.io/v1alpha1"
  std::string kind;         // "SandboxSet"
  ObjectMeta metadata;
  Json body = Json::object();  // every top-level field except apiVersion, kind and metadata

  // body["spec"] / body["status"], created as empty objects on first mutable access.
  Json& spec();
  Json& status();
  // The field, or a shared null when absent (never creates it).
  const Json& spec() const;
  const Json& status() const;

  // "ns/name", or "name" for cluster-scoped objects.
  std::string Key() const;
  // The group part of apiVersion ("" for "v1").
  std::string_view Group() const;

  bool HasFinalizer(std::string_view finalizer) const;
  // Returns true when the list changed.
  bool AddFinalizer(std::string_view finalizer);
  bool RemoveFinalizer(std::string_view finalizer);

  // The owner reference with controller=true, if any.
  const OwnerReference* ControllerRef() const;
  // A controller reference to this object, for its dependents.
  OwnerReference MakeControllerRef() const;
};

// The group of an apiVersion: "agents.kruise.io/v1alpha1" → "agents.kruise.io", "v1" → "".
std::string_view GroupOf(std::string_view api_version);

// Object::Key() taken apart: {namespace, name} ("name" alone: {"", name}). What work queues hand
// their workers.
std::pair<std::string, std::string> SplitKey(std::string_view key);

}  // namespace warren::api
