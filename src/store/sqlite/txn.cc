#include <fmt/format.h>

#include <chrono>
#include <set>

#include "api/object_codec.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/sqlite_store_impl.h"

namespace warren::store::sqlite {
namespace {

int64_t Millis(base::WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::set<std::string> OwnerUids(const api::Object* obj) {
  std::set<std::string> uids;
  if (obj) {
    for (const auto& r : obj->metadata.owner_references) uids.insert(r.uid);
  }
  return uids;
}

}  // namespace

Result<std::optional<StoredObject>> Txn::Load(const api::KindInfo& kind, std::string_view ns,
                                              std::string_view name) {
  ASSIGN_OR_RETURN(auto current,
                   store_.ReadCurrent(conn_, kind.GroupKind(),
                                      kind.namespaced ? ns : std::string_view(), name, changes_));
  if (!current.object) return std::optional<StoredObject>();
  loaded_.push_back(current.object);
  return std::optional<StoredObject>(StoredObject{*current.object, current.revision});
}

std::shared_ptr<const api::Object> Txn::Loaded(const StoredObject& stored) const {
  for (const auto& object : loaded_) {
    if (object->metadata.resource_version == stored.revision) return object;
  }
  return std::make_shared<const api::Object>(stored.object);
}

Result<bool> Txn::UidExists(std::string_view uid) {
  ASSIGN_OR_RETURN(auto q, conn_.Prepare("SELECT 1 FROM objects WHERE uid = ?1 LIMIT 1"));
  q.Bind(1, uid);
  return q.Step();
}

Result<std::vector<Txn::Key>> Txn::Dependents(std::string_view owner_uid) {
  ASSIGN_OR_RETURN(
      auto q, conn_.Prepare("SELECT kind, namespace, name FROM owner_refs WHERE owner_uid = ?1"));
  q.Bind(1, owner_uid);
  std::vector<Key> keys;
  while (true) {
    ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    keys.push_back({std::string(q.Text(0)), std::string(q.Text(1)), std::string(q.Text(2))});
  }
  return keys;
}

Status Txn::UpdateOwnerRefs(const api::KindInfo& kind, const api::Object& object,
                            const api::Object* previous) {
  std::set<std::string> before = OwnerUids(previous);
  std::set<std::string> after = OwnerUids(&object);
  if (before == after) return Status::Ok();
  const std::string kind_key = kind.GroupKind();
  const std::string& ns = object.metadata.namespace_;
  const std::string& name = object.metadata.name;
  for (const auto& uid : before) {
    if (after.count(uid)) continue;
    ASSIGN_OR_RETURN(auto q, conn_.Prepare("DELETE FROM owner_refs WHERE owner_uid = ?1 AND "
                                           "kind = ?2 AND namespace = ?3 AND name = ?4"));
    RETURN_IF_ERROR(Broken(q.Bind(1, uid).Bind(2, kind_key).Bind(3, ns).Bind(4, name).Run()));
  }
  bool check = false;
  for (const auto& uid : after) {
    if (before.count(uid)) continue;
    ASSIGN_OR_RETURN(auto q, conn_.Prepare("INSERT OR IGNORE INTO owner_refs(owner_uid, kind, "
                                           "namespace, name) VALUES(?1, ?2, ?3, ?4)"));
    RETURN_IF_ERROR(Broken(q.Bind(1, uid).Bind(2, kind_key).Bind(3, ns).Bind(4, name).Run()));
    ASSIGN_OR_RETURN(bool exists, UidExists(uid));
    if (!exists) check = true;
  }
  // An owner that is already gone: let the collector decide about this dependent.
  if (check) gc_checks_.push_back({kind_key, ns, name});
  return Status::Ok();
}

Status Txn::Put(const api::KindInfo& kind, api::Object& object, const StoredObject* previous) {
  const int64_t rv = revision_ + 1;
  object.metadata.resource_version = rv;
  std::string doc = api::ObjectToJsonText(object);
  if (doc.size() > store_.options().max_object_bytes) {
    return InvalidArgumentError(fmt::format("{} \"{}\" is too large: {} bytes, the limit is {}",
                                            kind.Resource(), object.metadata.name, doc.size(),
                                            store_.options().max_object_bytes));
  }
  const std::string kind_key = kind.GroupKind();
  const std::string& ns = object.metadata.namespace_;
  const std::string& name = object.metadata.name;
  {
    ASSIGN_OR_RETURN(
        auto q, conn_.Prepare("INSERT INTO events(rv, type, kind, namespace, name, prev_rv, ts, "
                              "doc) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
    q.Bind(1, rv)
        .Bind(2, int64_t{previous ? kStoredModified : kStoredAdded})
        .Bind(3, kind_key)
        .Bind(4, ns)
        .Bind(5, name)
        .Bind(6, previous ? previous->revision : 0)
        .Bind(7, Millis(now_))
        .Bind(8, doc);
    RETURN_IF_ERROR(Broken(q.Run()));
  }
  revision_ = rv;
  {
    ASSIGN_OR_RETURN(auto q,
                     conn_.Prepare("INSERT INTO objects(kind, namespace, name, uid, rv) "
                                   "VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(kind, namespace, name) "
                                   "DO UPDATE SET rv = excluded.rv"));
    q.Bind(1, kind_key).Bind(2, ns).Bind(3, name).Bind(4, object.metadata.uid).Bind(5, rv);
    RETURN_IF_ERROR(Broken(q.Run()));
  }
  RETURN_IF_ERROR(UpdateOwnerRefs(kind, object, previous ? &previous->object : nullptr));
  Change change;
  change.revision = rv;
  change.type = previous ? EventType::kModified : EventType::kAdded;
  change.kind_key = kind_key;
  change.object = std::make_shared<const api::Object>(object);
  if (previous) change.previous = Loaded(*previous);
  changes_.push_back(std::move(change));
  return Status::Ok();
}

Status Txn::Remove(const api::KindInfo& kind, api::Object& last, const StoredObject& previous) {
  const int64_t rv = revision_ + 1;
  last.metadata.resource_version = rv;
  std::string doc = api::ObjectToJsonText(last);
  const std::string kind_key = kind.GroupKind();
  const std::string& ns = last.metadata.namespace_;
  const std::string& name = last.metadata.name;
  {
    ASSIGN_OR_RETURN(
        auto q, conn_.Prepare("INSERT INTO events(rv, type, kind, namespace, name, prev_rv, ts, "
                              "doc) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
    q.Bind(1, rv)
        .Bind(2, int64_t{kStoredDeleted})
        .Bind(3, kind_key)
        .Bind(4, ns)
        .Bind(5, name)
        .Bind(6, previous.revision)
        .Bind(7, Millis(now_))
        .Bind(8, doc);
    RETURN_IF_ERROR(Broken(q.Run()));
  }
  revision_ = rv;
  {
    ASSIGN_OR_RETURN(
        auto q,
        conn_.Prepare("DELETE FROM objects WHERE kind = ?1 AND namespace = ?2 AND name = ?3"));
    RETURN_IF_ERROR(Broken(q.Bind(1, kind_key).Bind(2, ns).Bind(3, name).Run()));
  }
  api::Object none;
  none.metadata.namespace_ = ns;
  none.metadata.name = name;
  RETURN_IF_ERROR(UpdateOwnerRefs(kind, none, &previous.object));
  // Its dependents may now have no owner left.
  auto dependents = Dependents(last.metadata.uid);
  RETURN_IF_ERROR(Broken(dependents.status()));
  for (auto& d : *dependents) gc_checks_.push_back(std::move(d));

  Change change;
  change.revision = rv;
  change.type = EventType::kDeleted;
  change.kind_key = kind_key;
  change.object = std::make_shared<const api::Object>(last);
  changes_.push_back(std::move(change));
  return Status::Ok();
}

}  // namespace warren::store::sqlite
