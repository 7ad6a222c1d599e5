// The public write entry points: the backend-neutral rules of write_rules.h decide, and this
// file carries their decisions out inside the writer's batch transaction, where the read and
// the write are atomic without retries.

#include <fmt/format.h>

#include "api/object_codec.h"
#include "base/ids.h"
#include "store/sqlite/sqlite_store_impl.h"

namespace warren::store::sqlite {
namespace {

const api::KindInfo* KindOf(const api::KindRegistry& kinds, const api::Object& object) {
  return kinds.ForObject(object.api_version, object.kind);
}

// Writes what the rules decided.
Result<api::Object> Apply(Txn& txn, const api::KindInfo& kind, const StoredObject& old,
                          rules::Write write) {
  switch (write.action) {
    case rules::Action::kNone:
      break;
    case rules::Action::kPut:
      RETURN_IF_ERROR(txn.Put(kind, write.object, &old));
      break;
    case rules::Action::kRemove:
      RETURN_IF_ERROR(txn.Remove(kind, write.object, old));
      break;
  }
  return std::move(write.object);
}

Result<api::Object> CreateLocked(Txn& txn, const api::KindInfo& kind, api::Object object) {
  const bool generated = object.metadata.name.empty();
  const int attempts = generated ? rules::kGenerateNameAttempts : 1;
  std::string name;
  for (int i = 0; i < attempts && name.empty(); ++i) {
    std::string candidate = rules::CandidateName(object);
    ASSIGN_OR_RETURN(auto existing, txn.Load(kind, object.metadata.namespace_, candidate));
    if (!existing) name = std::move(candidate);
  }
  if (name.empty()) {
    return generated ? rules::NoFreeGeneratedName(kind, object.metadata.generate_name)
                     : rules::AlreadyExists(kind, object.metadata.name);
  }
  object.metadata.name = std::move(name);
  rules::StampCreated(object, base::NewUuid(), txn.now());
  RETURN_IF_ERROR(txn.Put(kind, object, nullptr));
  return object;
}

// Removes references to `owner_uid` from every dependent (orphan propagation).
Status OrphanDependentsLocked(Txn& txn, std::string_view owner_uid) {
  ASSIGN_OR_RETURN(auto dependents, txn.Dependents(owner_uid));
  for (const auto& key : dependents) {
    const api::KindInfo* kind = txn.store().KindByKey(key.kind_key);
    if (kind == nullptr) continue;
    ASSIGN_OR_RETURN(auto dep, txn.Load(*kind, key.namespace_, key.name));
    if (!dep) continue;
    RETURN_IF_ERROR(Apply(txn, *kind, *dep, rules::Orphan(*dep, owner_uid)).status());
  }
  return Status::Ok();
}

Result<api::Object> DeleteLocked(Txn& txn, const api::KindInfo& kind, const StoredObject& old,
                                 const DeleteOptions& options) {
  RETURN_IF_ERROR(rules::CheckPreconditions(kind, old, options.preconditions));
  if (options.propagation == Propagation::kOrphan) {
    RETURN_IF_ERROR(OrphanDependentsLocked(txn, old.object.metadata.uid));
  }
  ASSIGN_OR_RETURN(rules::Write write, rules::Delete(kind, old, options.preconditions, txn.now()));
  return Apply(txn, kind, old, std::move(write));
}

}  // namespace

Status SqliteStoreImpl::CollectLocked(Txn& txn, const Txn::Key& key) {
  const api::KindInfo* kind = txn.store().KindByKey(key.kind_key);
  if (kind == nullptr) return Status::Ok();
  ASSIGN_OR_RETURN(auto dep, txn.Load(*kind, key.namespace_, key.name));
  if (!dep) return Status::Ok();
  std::set<std::string> live;
  for (const auto& ref : dep->object.metadata.owner_references) {
    ASSIGN_OR_RETURN(bool exists, txn.UidExists(ref.uid));
    if (exists) live.insert(ref.uid);
  }
  ASSIGN_OR_RETURN(rules::Write write, rules::Collect(*kind, *dep, live, txn.now()));
  return Apply(txn, *kind, *dep, std::move(write)).status();
}

// ---- Public write entry points ----

Result<api::Object> SqliteStoreImpl::Create(api::Object object) {
  const api::KindInfo* kind = KindOf(kinds_, object);
  if (kind == nullptr) return rules::UnknownKind(object);
  // Admission runs on the caller's thread: only the existence check and the write are serial.
  RETURN_IF_ERROR(rules::PrepareCreate(*kind, object));
  return Submit([kind, object = std::move(object)](Txn& txn) mutable {
    return CreateLocked(txn, *kind, std::move(object));
  });
}

Result<api::Object> SqliteStoreImpl::Update(api::Object object, Subresource subresource) {
  const api::KindInfo* kind = KindOf(kinds_, object);
  if (kind == nullptr) return rules::UnknownKind(object);
  RETURN_IF_ERROR(rules::PrepareUpdate(*kind, object, subresource));
  return Submit(
      [kind, subresource, object = std::move(object)](Txn& txn) mutable -> Result<api::Object> {
        const std::string& name = object.metadata.name;
        ASSIGN_OR_RETURN(auto old, txn.Load(*kind, object.metadata.namespace_, name));
        if (!old) return rules::NotFound(*kind, name);
        RETURN_IF_ERROR(rules::CheckPreconditions(*kind, *old, rules::UpdatePreconditions(object)));
        ASSIGN_OR_RETURN(rules::Write write,
                         rules::Update(*kind, *old, std::move(object), subresource));
        return Apply(txn, *kind, *old, std::move(write));
      });
}

Result<api::Object> SqliteStoreImpl::Patch(const api::KindInfo& kind, std::string_view ns,
                                           std::string_view name, const api::Json& merge_patch,
                                           Subresource subresource) {
  RETURN_IF_ERROR(rules::CheckPatch(kind, merge_patch, subresource));
  std::string ns_s(kind.namespaced ? ns : "");
  std::string name_s(name);
  return Submit([&kind, &merge_patch, subresource, ns_s, name_s](Txn& txn) -> Result<api::Object> {
    ASSIGN_OR_RETURN(auto old, txn.Load(kind, ns_s, name_s));
    if (!old) return rules::NotFound(kind, name_s);
    ASSIGN_OR_RETURN(api::Object patched, rules::ApplyPatch(kind, *old, merge_patch));
    ASSIGN_OR_RETURN(rules::Write write,
                     rules::Update(kind, *old, std::move(patched), subresource));
    return Apply(txn, kind, *old, std::move(write));
  });
}

Result<api::Object> SqliteStoreImpl::Delete(const api::KindInfo& kind, std::string_view ns,
                                            std::string_view name, const DeleteOptions& options) {
  std::string ns_s(kind.namespaced ? ns : "");
  std::string name_s(name);
  return Submit([&kind, &options, ns_s, name_s](Txn& txn) -> Result<api::Object> {
    ASSIGN_OR_RETURN(auto old, txn.Load(kind, ns_s, name_s));
    if (!old) return rules::NotFound(kind, name_s);
    return DeleteLocked(txn, kind, *old, options);
  });
}

}  // namespace warren::store::sqlite
