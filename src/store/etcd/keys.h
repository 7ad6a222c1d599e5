#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "api/kinds.h"

namespace warren::store::etcd {

// Where an object key points.
struct ObjectKey {
  const api::KindInfo* kind = nullptr;
  std::string namespace_;
  std::string name;
};

// The key layout under one prefix (immutable; thread-safe):
//   <prefix>/<group>/<plural>/<namespace>/<name>   a namespaced object
//   <prefix>/<group>/<plural>/<name>               a cluster-scoped object
//   <prefix>/_uids/<uid>                           the key of the live object with that uid
//   <prefix>/_owners/<owner uid>/<group>/...       a dependent of that owner (value empty)
//   <prefix>/_feed                                 a marker a watch's replay can stop at
// Groups are DNS names, so they never start with "_". Keys sort by namespace then name except
// where one namespace is a prefix of another followed by '-' or '.' (as Kubernetes' own keys).
class Keys {
 public:
  Keys(std::string prefix, const api::KindRegistry& kinds);

  std::string Object(const api::KindInfo& kind, std::string_view ns, std::string_view name) const;
  // Every object of the kind, or of the kind in one namespace ("" = all).
  std::string KindPrefix(const api::KindInfo& kind, std::string_view ns = "") const;
  // Every key of this store (objects and indexes).
  std::string All() const { return prefix_ + "/"; }
  std::string Uid(std::string_view uid) const;
  std::string UidPrefix() const { return prefix_ + "/_uids/"; }
  std::string OwnersOf(std::string_view owner_uid) const;  // prefix of the owner's dependents
  std::string OwnersPrefix() const { return prefix_ + "/_owners/"; }
  std::string OwnerEntry(std::string_view owner_uid, std::string_view object_key) const;

  // An object key's kind, namespace and name; nullopt for index keys and unknown kinds.
  std::optional<ObjectKey> Parse(std::string_view key) const;
  // The dependent's object key of an owner entry; nullopt for anything else.
  std::optional<std::string> DependentOf(std::string_view owner_entry) const;

 private:
  std::string prefix_;
  std::map<std::string, const api::KindInfo*, std::less<>> by_path_;  // "<group>/<plural>"
};

}  // namespace warren::store::etcd
