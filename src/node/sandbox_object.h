#pragma once

#include "api/object.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"

// What the node agent reads off a Sandbox object, in one place for its reconcile files.

namespace warren::node {

// Its agents.kruise.io/sandbox-id label: the runtime's id of it ("" when missing).
inline std::string SandboxIdOf(const api::Object& obj) {
  auto it = obj.metadata.labels.find(api::labels::kSandboxId);
  return it == obj.metadata.labels.end() ? std::string() : it->second;
}

inline api::SandboxStatus StatusOf(const api::Object& obj) {
  auto s = api::DecodeStatus<api::SandboxStatus>(obj);
  return s.ok() ? *s : api::SandboxStatus{};
}

inline bool SpecPaused(const api::Object& obj) {
  const api::Json& spec = obj.spec();
  if (!spec.is_object()) return false;
  auto it = spec.find("paused");
  return it != spec.end() && it->is_boolean() && it->get<bool>();
}

// spec.pauseStrategy.type Stop: a pause ends the processes and keeps the writable layer (E2B's
// pause without memory); the next resume boots the sandbox again on the same files. Any other
// (or none) freezes the processes and keeps memory.
inline bool PausesFilesystemOnly(const api::Object& obj) {
  const api::Json& spec = obj.spec();
  if (!spec.is_object()) return false;
  auto strategy = spec.find("pauseStrategy");
  if (strategy == spec.end() || !strategy->is_object()) return false;
  auto type = strategy->find("type");
  return type != strategy->end() && type->is_string() && type->get<std::string>() == "Stop";
}

// A SandboxSet's member, claimed or not.
inline bool IsPoolMember(const api::Object& obj) {
  const api::OwnerReference* ref = obj.ControllerRef();
  return ref != nullptr && ref->kind == "SandboxSet";
}

// Stock of a warm pool nobody has taken yet: a SandboxSet's member, neither claimed nor being
// claimed (locked) nor deleted. Making it is background work: no request waits on it.
inline bool IsUnclaimedPoolStock(const api::Object& obj) {
  if (!IsPoolMember(obj) || obj.metadata.deletion_timestamp) return false;
  auto claimed = obj.metadata.labels.find(api::labels::kSandboxClaimed);
  if (claimed != obj.metadata.labels.end() && claimed->second == "true") return false;
  return !obj.metadata.annotations.contains(api::annotations::kLock);
}

}  // namespace warren::node
