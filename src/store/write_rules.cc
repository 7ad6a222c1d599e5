#include "store/write_rules.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/admission.h"
#include "api/merge_patch.h"
#include "api/object_codec.h"
#include "base/ids.h"

namespace warren::store::rules {
namespace {

// The document without what the generation does not track: metadata always, and the status.
api::Json GenerationTracked(const api::Object& obj) {
  api::Json body = obj.body;
  body.erase("status");
  return body;
}

}  // namespace

Status NotFound(const api::KindInfo& kind, std::string_view name) {
  return NotFoundError(fmt::format("{} \"{}\" not found", kind.Resource(), name));
}

Status AlreadyExists(const api::KindInfo& kind, std::string_view name) {
  return AlreadyExistsError(fmt::format("{} \"{}\" already exists", kind.Resource(), name));
}

Status Conflict(const api::KindInfo& kind, std::string_view name, std::string_view detail) {
  return AbortedError(fmt::format(
      "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply "
      "your changes to the latest version and try again ({})",
      kind.Resource(), name, detail));
}

Status UnknownKind(const api::Object& object) {
  return NotFoundError(fmt::format("the server doesn't have a resource type \"{}\" in \"{}\"",
                                   object.kind, object.api_version));
}

Status NoFreeGeneratedName(const api::KindInfo& kind, std::string_view generate_name) {
  return AlreadyExistsError(
      fmt::format("{}: could not find a free name with generateName \"{}\"; try again",
                  kind.Resource(), generate_name));
}

Status TooLarge(const api::KindInfo& kind, std::string_view name, size_t bytes, size_t limit) {
  return InvalidArgumentError(fmt::format("{} \"{}\" is too large: {} bytes, the limit is {}",
                                          kind.Resource(), name, bytes, limit));
}

Status ContinueTooOld(int64_t revision, int64_t oldest_kept) {
  return OutOfRangeError(fmt::format(
      "the provided continue parameter is too old to display a consistent list result (its "
      "revision {} is older than the oldest kept, {}); list again without continue",
      revision, oldest_kept));
}

Status WatchTooOld(int64_t revision, int64_t oldest_available) {
  return OutOfRangeError(fmt::format(
      "too old resource version: {} (oldest available: {}); list again and watch from the "
      "list's resourceVersion",
      revision, oldest_available));
}

Status WatchFromTheFuture(int64_t revision, int64_t current) {
  return InvalidArgumentError(fmt::format(
      "resourceVersion {} is newer than the store's current revision {}", revision, current));
}

Status CheckPreconditions(const api::KindInfo& kind, const StoredObject& current,
                          const Preconditions& pre) {
  const std::string& name = current.object.metadata.name;
  if (!pre.uid.empty() && pre.uid != current.object.metadata.uid) {
    return AbortedError(fmt::format(
        "Operation cannot be fulfilled on {} \"{}\": Precondition failed: UID in precondition: "
        "{}, UID in object meta: {}",
        kind.Resource(), name, pre.uid, current.object.metadata.uid));
  }
  if (pre.resource_version != 0 && pre.resource_version != current.revision) {
    return Conflict(kind, name,
                    fmt::format("stale resourceVersion {}, current {}", pre.resource_version,
                                current.revision));
  }
  return Status::Ok();
}

Status PrepareCreate(const api::KindInfo& kind, api::Object& object) {
  if (object.metadata.resource_version != 0) {
    return InvalidArgumentError(fmt::format(
        "{} \"{}\" is invalid: metadata.resourceVersion: Invalid value: \"{}\": must not be set "
        "on objects to be created",
        kind.GroupKind(), object.metadata.name, object.metadata.resource_version));
  }
  if (!kind.namespaced) object.metadata.namespace_.clear();
  object.metadata.uid.clear();
  object.metadata.creation_timestamp.reset();
  object.metadata.deletion_timestamp.reset();
  object.metadata.generation = 0;
  if (kind.status_subresource) object.body.erase("status");
  return api::AdmitCreate(kind, object);
}

std::string CandidateName(const api::Object& object) {
  if (!object.metadata.name.empty()) return object.metadata.name;
  // Kubernetes' 5-character suffix; the backend retries on the rare collision.
  return object.metadata.generate_name + base::GenerateNameSuffix();
}

void StampCreated(api::Object& object, std::string uid, base::WallTime now) {
  object.metadata.uid = std::move(uid);
  object.metadata.creation_timestamp = now;
  object.metadata.deletion_timestamp.reset();
  object.metadata.generation = 1;
}

Status PrepareUpdate(const api::KindInfo& kind, api::Object& object, Subresource subresource) {
  if (subresource == Subresource::kStatus && !kind.status_subresource) {
    return NotFoundError(fmt::format("{} has no status subresource", kind.Resource()));
  }
  if (!kind.namespaced) object.metadata.namespace_.clear();
  return Status::Ok();
}

Preconditions UpdatePreconditions(const api::Object& object) {
  return Preconditions{object.metadata.resource_version, object.metadata.uid};
}

Status CheckPatch(const api::KindInfo& kind, const api::Json& merge_patch,
                  Subresource subresource) {
  if (!merge_patch.is_object()) {
    return InvalidArgumentError(
        fmt::format("a merge patch must be a JSON object, got {}", api::JsonTypeName(merge_patch)));
  }
  if (subresource == Subresource::kStatus && !kind.status_subresource) {
    return NotFoundError(fmt::format("{} has no status subresource", kind.Resource()));
  }
  return Status::Ok();
}

Result<api::Object> ApplyPatch(const api::KindInfo& kind, const StoredObject& current,
                               const api::Json& merge_patch) {
  const api::Object& old = current.object;
  api::Json doc = api::ObjectToJson(old);
  api::ApplyMergePatch(doc, merge_patch);
  ASSIGN_OR_RETURN(api::Object patched, api::ObjectFromJson(std::move(doc)));
  if (patched.metadata.name != old.metadata.name ||
      patched.metadata.namespace_ != old.metadata.namespace_) {
    return InvalidArgumentError(fmt::format(
        "{} \"{}\" is invalid: metadata.name: Invalid value: a patch may not change the "
        "name or namespace",
        kind.GroupKind(), old.metadata.name));
  }
  if (patched.api_version != old.api_version || patched.kind != old.kind) {
    return InvalidArgumentError(
        fmt::format("{} \"{}\" is invalid: a patch may not change apiVersion or kind",
                    kind.GroupKind(), old.metadata.name));
  }
  // A resourceVersion in the patch is a precondition; the patched object carries it.
  RETURN_IF_ERROR(CheckPreconditions(kind, current, {patched.metadata.resource_version, ""}));
  return patched;
}

Result<Write> Update(const api::KindInfo& kind, const StoredObject& current, api::Object requested,
                     Subresource subresource) {
  const api::Object& before = current.object;
  api::Object next;
  if (subresource == Subresource::kStatus) {
    next = before;
    auto status = requested.body.find("status");
    if (status == requested.body.end() || status->is_null()) {
      next.body.erase("status");
    } else {
      next.body["status"] = *status;
    }
    RETURN_IF_ERROR(api::AdmitStatus(kind, next));
  } else {
    next = std::move(requested);
    // Fields the server owns.
    next.metadata.name = before.metadata.name;
    next.metadata.namespace_ = before.metadata.namespace_;
    next.metadata.uid = before.metadata.uid;
    next.metadata.creation_timestamp = before.metadata.creation_timestamp;
    next.metadata.deletion_timestamp = before.metadata.deletion_timestamp;
    next.metadata.generation = before.metadata.generation;
    next.metadata.generate_name = before.metadata.generate_name;
    if (kind.status_subresource && subresource == Subresource::kMain) {
      auto status = before.body.find("status");
      if (status == before.body.end()) {
        next.body.erase("status");
      } else {
        next.body["status"] = *status;
      }
    }
    if (before.metadata.deletion_timestamp) {
      for (const auto& f : next.metadata.finalizers) {
        if (!before.HasFinalizer(f)) {
          return InvalidArgumentError(fmt::format(
              "{} \"{}\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be "
              "added if the object is being deleted, found new finalizer \"{}\"",
              kind.GroupKind(), before.metadata.name, f));
        }
      }
    }
    RETURN_IF_ERROR(api::AdmitUpdate(kind, before, next));
    if (subresource == Subresource::kMainAndStatus && kind.status_subresource) {
      RETURN_IF_ERROR(api::AdmitStatus(kind, next));
    }
    if (GenerationTracked(next) != GenerationTracked(before)) ++next.metadata.generation;
  }
  next.metadata.resource_version = current.revision;
  // Nothing changed: nothing to write, no event (Kubernetes does the same).
  if (next.body == before.body &&
      api::MetadataToJson(next.metadata) == api::MetadataToJson(before.metadata)) {
    return Write{Action::kNone, before};
  }
  // The last finalizer of an object being deleted is gone: it goes now.
  if (next.metadata.deletion_timestamp && next.metadata.finalizers.empty()) {
    return Write{Action::kRemove, std::move(next)};
  }
  return Write{Action::kPut, std::move(next)};
}

Result<Write> Delete(const api::KindInfo& kind, const StoredObject& current,
                     const Preconditions& preconditions, base::WallTime now) {
  RETURN_IF_ERROR(CheckPreconditions(kind, current, preconditions));
  api::Object next = current.object;
  next.metadata.resource_version = current.revision;
  if (!next.metadata.finalizers.empty()) {
    // Finalizers hold the object: mark it and let their owners finish.
    if (next.metadata.deletion_timestamp) return Write{Action::kNone, std::move(next)};
    next.metadata.deletion_timestamp = now;
    return Write{Action::kPut, std::move(next)};
  }
  return Write{Action::kRemove, std::move(next)};
}

Write Orphan(const StoredObject& dependent, std::string_view owner_uid) {
  api::Object next = dependent.object;
  size_t removed = std::erase_if(next.metadata.owner_references,
                                 [&](const api::OwnerReference& r) { return r.uid == owner_uid; });
  return Write{removed ? Action::kPut : Action::kNone, std::move(next)};
}

Result<Write> Collect(const api::KindInfo& kind, const StoredObject& dependent,
                      const std::set<std::string>& live_owner_uids, base::WallTime now) {
  const auto& refs = dependent.object.metadata.owner_references;
  if (refs.empty()) return Write{Action::kNone, dependent.object};
  std::vector<api::OwnerReference> alive;
  for (const auto& ref : refs) {
    if (live_owner_uids.count(ref.uid)) alive.push_back(ref);
  }
  if (alive.empty()) {
    Preconditions pre;
    pre.uid = dependent.object.metadata.uid;
    return Delete(kind, dependent, pre, now);
  }
  if (alive.size() == refs.size()) return Write{Action::kNone, dependent.object};
  // Some owners remain: drop only the references to the ones that are gone.
  api::Object next = dependent.object;
  next.metadata.owner_references = std::move(alive);
  return Write{Action::kPut, std::move(next)};
}

}  // namespace warren::store::rules
