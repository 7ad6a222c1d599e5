// What each write does, inside the writer's batch transaction, and the public entry points that
// prepare and submit them.

#include <fmt/format.h>

#include <algorithm>

#include "api/admission.h"
#include "api/merge_patch.h"
#include "api/object_codec.h"
#include "base/ids.h"
#include "store/sqlite/sqlite_store_impl.h"

namespace warren::store::sqlite {
namespace {

constexpr int kGenerateNameAttempts = 8;

Status Conflict(const api::KindInfo& kind, std::string_view name, std::string_view detail) {
  return AbortedError(fmt::format(
      "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply "
      "your changes to the latest version and try again ({})",
      kind.Resource(), name, detail));
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

const api::KindInfo* KindOf(const api::KindRegistry& kinds, const api::Object& object) {
  return kinds.ForObject(object.api_version, object.kind);
}

Status UnknownKind(const api::Object& object) {
  return NotFoundError(fmt::format("the server doesn't have a resource type \"{}\" in \"{}\"",
                                   object.kind, object.api_version));
}

// The document without what the generation does not track: metadata always, and the status.
api::Json GenerationTracked(const api::Object& obj) {
  api::Json body = obj.body;
  body.erase("status");
  return body;
}

}  // namespace

Result<api::Object> SqliteStoreImpl::CreateLocked(Txn& txn, const api::KindInfo& kind,
                                                  api::Object object) {
  if (object.metadata.name.empty()) {
    // generateName: Kubernetes' 5-character suffix, retried on the rare collision.
    for (int i = 0; i < kGenerateNameAttempts; ++i) {
      std::string candidate = object.metadata.generate_name + base::GenerateNameSuffix();
      ASSIGN_OR_RETURN(auto existing, txn.Load(kind, object.metadata.namespace_, candidate));
      if (!existing) {
        object.metadata.name = std::move(candidate);
        break;
      }
    }
    if (object.metadata.name.empty()) {
      return AlreadyExistsError(
          fmt::format("{}: could not find a free name with generateName \"{}\"; try again",
                      kind.Resource(), object.metadata.generate_name));
    }
  } else {
    ASSIGN_OR_RETURN(auto existing,
                     txn.Load(kind, object.metadata.namespace_, object.metadata.name));
    if (existing) {
      return AlreadyExistsError(
          fmt::format("{} \"{}\" already exists", kind.Resource(), object.metadata.name));
    }
  }
  object.metadata.uid = base::NewUuid();
  object.metadata.creation_timestamp = txn.now();
  object.metadata.deletion_timestamp.reset();
  object.metadata.generation = 1;
  RETURN_IF_ERROR(txn.Put(kind, object, nullptr));
  return object;
}

Result<api::Object> SqliteStoreImpl::UpdateLocked(Txn& txn, const api::KindInfo& kind,
                                                  const StoredObject& old, api::Object object,
                                                  Subresource subresource) {
  const api::Object& before = old.object;
  api::Object next;
  if (subresource == Subresource::kStatus) {
    next = before;
    auto status = object.body.find("status");
    if (status == object.body.end() || status->is_null()) {
      next.body.erase("status");
    } else {
      next.body["status"] = *status;
    }
    RETURN_IF_ERROR(api::AdmitStatus(kind, next));
  } else {
    next = std::move(object);
    // Fields the server owns.
    next.metadata.name = before.metadata.name;
    next.metadata.namespace_ = before.metadata.namespace_;
    next.metadata.uid = before.metadata.uid;
    next.metadata.creation_timestamp = before.metadata.creation_timestamp;
    next.metadata.deletion_timestamp = before.metadata.deletion_timestamp;
    next.metadata.generation = before.metadata.generation;
    next.metadata.generate_name = before.metadata.generate_name;
    if (kind.status_subresource) {
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
    if (GenerationTracked(next) != GenerationTracked(before)) ++next.metadata.generation;
  }
  next.metadata.resource_version = old.revision;
  // Nothing changed: nothing to write, no event (Kubernetes does the same).
  if (next.body == before.body &&
      api::MetadataToJson(next.metadata) == api::MetadataToJson(before.metadata)) {
    return before;
  }
  // The last finalizer of an object being deleted is gone: it goes now.
  if (next.metadata.deletion_timestamp && next.metadata.finalizers.empty()) {
    RETURN_IF_ERROR(txn.Remove(kind, next, old));
    return next;
  }
  RETURN_IF_ERROR(txn.Put(kind, next, &old));
  return next;
}

Status SqliteStoreImpl::OrphanDependentsLocked(Txn& txn, std::string_view owner_uid) {
  ASSIGN_OR_RETURN(auto dependents, txn.Dependents(owner_uid));
  for (const auto& key : dependents) {
    const api::KindInfo* kind = txn.store().KindByKey(key.kind_key);
    if (kind == nullptr) continue;
    ASSIGN_OR_RETURN(auto dep, txn.Load(*kind, key.namespace_, key.name));
    if (!dep) continue;
    api::Object next = dep->object;
    std::erase_if(next.metadata.owner_references,
                  [&](const api::OwnerReference& r) { return r.uid == owner_uid; });
    RETURN_IF_ERROR(txn.Put(*kind, next, &*dep));
  }
  return Status::Ok();
}

Result<api::Object> SqliteStoreImpl::DeleteLocked(Txn& txn, const api::KindInfo& kind,
                                                  const StoredObject& old,
                                                  const DeleteOptions& options) {
  RETURN_IF_ERROR(CheckPreconditions(kind, old, options.preconditions));
  if (options.propagation == Propagation::kOrphan) {
    RETURN_IF_ERROR(OrphanDependentsLocked(txn, old.object.metadata.uid));
  }
  api::Object next = old.object;
  next.metadata.resource_version = old.revision;
  if (!next.metadata.finalizers.empty()) {
    // Finalizers hold the object: mark it and let their owners finish.
    if (next.metadata.deletion_timestamp) return next;
    next.metadata.deletion_timestamp = txn.now();
    RETURN_IF_ERROR(txn.Put(kind, next, &old));
    return next;
  }
  RETURN_IF_ERROR(txn.Remove(kind, next, old));
  return next;
}

Status SqliteStoreImpl::CollectLocked(Txn& txn, const Txn::Key& key) {
  const api::KindInfo* kind = txn.store().KindByKey(key.kind_key);
  if (kind == nullptr) return Status::Ok();
  ASSIGN_OR_RETURN(auto dep, txn.Load(*kind, key.namespace_, key.name));
  if (!dep || dep->object.metadata.owner_references.empty()) return Status::Ok();
  std::vector<api::OwnerReference> alive;
  for (const auto& ref : dep->object.metadata.owner_references) {
    ASSIGN_OR_RETURN(bool exists, txn.UidExists(ref.uid));
    if (exists) alive.push_back(ref);
  }
  if (alive.empty()) {
    DeleteOptions options;
    options.preconditions.uid = dep->object.metadata.uid;
    return DeleteLocked(txn, *kind, *dep, options).status();
  }
  if (alive.size() == dep->object.metadata.owner_references.size()) return Status::Ok();
  // Some owners remain: drop only the references to the ones that are gone.
  api::Object next = dep->object;
  next.metadata.owner_references = std::move(alive);
  return txn.Put(*kind, next, &*dep);
}

// ---- Public write entry points ----

Result<api::Object> SqliteStoreImpl::Create(api::Object object) {
  const api::KindInfo* kind = KindOf(kinds_, object);
  if (kind == nullptr) return UnknownKind(object);
  if (object.metadata.resource_version != 0) {
    return InvalidArgumentError(fmt::format(
        "{} \"{}\" is invalid: metadata.resourceVersion: Invalid value: \"{}\": must not be set "
        "on objects to be created",
        kind->GroupKind(), object.metadata.name, object.metadata.resource_version));
  }
  if (!kind->namespaced) object.metadata.namespace_.clear();
  object.metadata.uid.clear();
  object.metadata.creation_timestamp.reset();
  object.metadata.deletion_timestamp.reset();
  object.metadata.generation = 0;
  if (kind->status_subresource) object.body.erase("status");
  // Admission runs on the caller's thread: only the existence check and the write are serial.
  RETURN_IF_ERROR(api::AdmitCreate(*kind, object));
  return Submit([kind, object = std::move(object)](Txn& txn) mutable {
    return CreateLocked(txn, *kind, std::move(object));
  });
}

Result<api::Object> SqliteStoreImpl::Update(api::Object object, Subresource subresource) {
  const api::KindInfo* kind = KindOf(kinds_, object);
  if (kind == nullptr) return UnknownKind(object);
  if (subresource == Subresource::kStatus && !kind->status_subresource) {
    return NotFoundError(fmt::format("{} has no status subresource", kind->Resource()));
  }
  if (!kind->namespaced) object.metadata.namespace_.clear();
  return Submit(
      [kind, subresource, object = std::move(object)](Txn& txn) mutable -> Result<api::Object> {
        const std::string& name = object.metadata.name;
        ASSIGN_OR_RETURN(auto old, txn.Load(*kind, object.metadata.namespace_, name));
        if (!old) {
          return NotFoundError(fmt::format("{} \"{}\" not found", kind->Resource(), name));
        }
        Preconditions pre{object.metadata.resource_version, object.metadata.uid};
        RETURN_IF_ERROR(CheckPreconditions(*kind, *old, pre));
        return UpdateLocked(txn, *kind, *old, std::move(object), subresource);
      });
}

Result<api::Object> SqliteStoreImpl::Patch(const api::KindInfo& kind, std::string_view ns,
                                           std::string_view name, const api::Json& merge_patch,
                                           Subresource subresource) {
  if (!merge_patch.is_object()) {
    return InvalidArgumentError(
        fmt::format("a merge patch must be a JSON object, got {}", api::JsonTypeName(merge_patch)));
  }
  if (subresource == Subresource::kStatus && !kind.status_subresource) {
    return NotFoundError(fmt::format("{} has no status subresource", kind.Resource()));
  }
  std::string ns_s(kind.namespaced ? ns : "");
  std::string name_s(name);
  return Submit([&kind, &merge_patch, subresource, ns_s, name_s](Txn& txn) -> Result<api::Object> {
    ASSIGN_OR_RETURN(auto old, txn.Load(kind, ns_s, name_s));
    if (!old) return NotFoundError(fmt::format("{} \"{}\" not found", kind.Resource(), name_s));
    api::Json doc = api::ObjectToJson(old->object);
    api::ApplyMergePatch(doc, merge_patch);
    ASSIGN_OR_RETURN(api::Object patched, api::ObjectFromJson(std::move(doc)));
    if (patched.metadata.name != name_s || patched.metadata.namespace_ != ns_s) {
      return InvalidArgumentError(fmt::format(
          "{} \"{}\" is invalid: metadata.name: Invalid value: a patch may not change the "
          "name or namespace",
          kind.GroupKind(), name_s));
    }
    if (patched.api_version != old->object.api_version || patched.kind != old->object.kind) {
      return InvalidArgumentError(
          fmt::format("{} \"{}\" is invalid: a patch may not change apiVersion or kind",
                      kind.GroupKind(), name_s));
    }
    // A resourceVersion in the patch is a precondition; the patched object carries it.
    RETURN_IF_ERROR(CheckPreconditions(kind, *old, {patched.metadata.resource_version, ""}));
    return UpdateLocked(txn, kind, *old, std::move(patched), subresource);
  });
}

Result<api::Object> SqliteStoreImpl::Delete(const api::KindInfo& kind, std::string_view ns,
                                            std::string_view name, const DeleteOptions& options) {
  std::string ns_s(kind.namespaced ? ns : "");
  std::string name_s(name);
  return Submit([&kind, &options, ns_s, name_s](Txn& txn) -> Result<api::Object> {
    ASSIGN_OR_RETURN(auto old, txn.Load(kind, ns_s, name_s));
    if (!old) return NotFoundError(fmt::format("{} \"{}\" not found", kind.Resource(), name_s));
    return DeleteLocked(txn, kind, *old, options);
  });
}

}  // namespace warren::store::sqlite
