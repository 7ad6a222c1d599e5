// The public write entry points of the etcd backend: the rules of write_rules.h decide on what
// was read, and a transaction guarded by the read revision writes it. A lost race is read and
// decided again only where the contract allows: never when the caller named a resourceVersion
// (that is a 409), always otherwise.

#include <fmt/format.h>

#include <set>

#include "api/object_codec.h"
#include "base/ids.h"
#include "base/log.h"
#include "store/etcd/etcd_store_impl.h"

namespace warren::store::etcd {
namespace {

// Attempts of one read-decide-write before giving up with Conflict: only writers without a
// resourceVersion loop, and each lost round means another writer won.
constexpr int kMaxAttempts = 64;

api::Json Put(const std::string& key, std::string_view value) {
  return {{"request_put", {{"key", B64(key)}, {"value", B64(value)}}}};
}
api::Json Del(const std::string& key) { return {{"request_delete_range", {{"key", B64(key)}}}}; }
api::Json RangeOp(const std::string& key, const std::string& range_end = "",
                  bool keys_only = false) {
  api::Json r = {{"key", B64(key)}};
  if (!range_end.empty()) r["range_end"] = B64(range_end);
  if (keys_only) r["keys_only"] = true;
  return {{"request_range", std::move(r)}};
}

std::set<std::string> OwnerUids(const api::Object* obj) {
  std::set<std::string> uids;
  if (obj) {
    for (const auto& r : obj->metadata.owner_references) uids.insert(r.uid);
  }
  return uids;
}

const api::Json& Kvs(const api::Json& range) {
  static const api::Json kEmpty = api::Json::array();
  auto it = range.find("kvs");
  return it == range.end() ? kEmpty : *it;
}

}  // namespace

Result<Committed> EtcdStoreImpl::Commit(const api::KindInfo& kind, const StoredObject* previous,
                                        rules::Write& write) {
  api::Object& object = write.object;
  const std::string key = keys_.Object(kind, object.metadata.namespace_, object.metadata.name);
  const bool remove = write.action == rules::Action::kRemove;
  api::Json compare = previous ? api::Json{{"key", B64(key)},
                                           {"result", "EQUAL"},
                                           {"target", "MOD"},
                                           {"mod_revision", std::to_string(previous->revision)}}
                               : api::Json{{"key", B64(key)},
                                           {"result", "EQUAL"},
                                           {"target", "CREATE"},
                                           {"create_revision", "0"}};
  api::Json success = api::Json::array();
  std::string value;
  // Index changes ride in the same transaction; range requests after them report what the
  // garbage collector must look at, as of this very revision.
  std::vector<std::string> added_owners;
  std::set<std::string> before = OwnerUids(previous ? &previous->object : nullptr);
  if (remove) {
    success.push_back(Del(key));
    success.push_back(Del(keys_.Uid(object.metadata.uid)));
    for (const auto& uid : before) success.push_back(Del(keys_.OwnerEntry(uid, key)));
    std::string deps = keys_.OwnersOf(object.metadata.uid);
    success.push_back(RangeOp(deps, PrefixEnd(deps), /*keys_only=*/true));
  } else {
    // The revision is etcd's to assign: the stored document carries none.
    object.metadata.resource_version = 0;
    value = api::ObjectToJsonText(object);
    if (value.size() > options_.max_object_bytes) {
      return rules::TooLarge(kind, object.metadata.name, value.size(), options_.max_object_bytes);
    }
    success.push_back(Put(key, value));
    if (!previous) success.push_back(Put(keys_.Uid(object.metadata.uid), key));
    std::set<std::string> after = OwnerUids(&object);
    for (const auto& uid : before) {
      if (!after.count(uid)) success.push_back(Del(keys_.OwnerEntry(uid, key)));
    }
    for (const auto& uid : after) {
      if (before.count(uid)) continue;
      success.push_back(Put(keys_.OwnerEntry(uid, key), ""));
      added_owners.push_back(uid);
    }
    for (const auto& uid : added_owners) success.push_back(RangeOp(keys_.Uid(uid)));
  }
  api::Json txn = {{"compare", api::Json::array({compare})},
                   {"success", std::move(success)},
                   {"failure", api::Json::array({RangeOp(key)})}};
  ASSIGN_OR_RETURN(CallResult result, Call("/v3/kv/txn", txn));
  const api::Json& body = result.body;
  Committed out;
  out.revision = Int(body.value("header", api::Json::object()), "revision");
  const api::Json responses = body.value("responses", api::Json::array());
  if (body.value("succeeded", false)) {
    out.succeeded = true;
    object.metadata.resource_version = out.revision;
    NoteCommit(out.revision);
    std::vector<std::string> gc;
    if (remove) {
      // Its dependents may now have no owner left.
      const api::Json& deps = responses.back().value("response_range", api::Json::object());
      for (const auto& kv : Kvs(deps)) {
        if (auto dep = keys_.DependentOf(FromB64(kv, "key"))) gc.push_back(std::move(*dep));
      }
    } else if (!added_owners.empty()) {
      // An owner that is already gone: let the collector decide about this dependent.
      size_t first = responses.size() - added_owners.size();
      for (size_t i = first; i < responses.size(); ++i) {
        if (Kvs(responses[i].value("response_range", api::Json::object())).empty()) {
          gc.push_back(key);
          break;
        }
      }
    }
    EnqueueGc(std::move(gc));
    return out;
  }
  const api::Json range = responses.empty()
                              ? api::Json::object()
                              : responses[0].value("response_range", api::Json::object());
  const api::Json& kvs = Kvs(range);
  if (!kvs.empty()) {
    ASSIGN_OR_RETURN(StoredObject now, DecodeKv(kvs[0]));
    out.current = std::move(now);
  }
  if (result.ambiguous) {
    // An earlier attempt reached a member that went away before answering: if what is stored
    // now is exactly what this write meant, that attempt committed it.
    bool applied = remove ? kvs.empty() : (!kvs.empty() && FromB64(kvs[0], "value") == value);
    if (!applied && !remove && !previous && out.current &&
        out.current->object.metadata.uid == object.metadata.uid) {
      // A create: the uid is this attempt's own, so the object there is the one it made, as a
      // controller may already have changed it.
      applied = true;
      object = out.current->object;
    }
    if (applied) {
      out.succeeded = true;
      out.revision = remove ? out.revision : out.current->revision;
      object.metadata.resource_version = out.revision;
      std::vector<std::string> gc;
      if (remove) {
        ASSIGN_OR_RETURN(gc, DependentKeys(object.metadata.uid));
      } else if (!added_owners.empty()) {
        gc.push_back(key);
      }
      EnqueueGc(std::move(gc));
      base::Logger("store")->info("etcd write confirmed after a lost answer key={}", key);
    }
  }
  return out;
}

Result<api::Object> EtcdStoreImpl::Create(api::Object object) {
  const api::KindInfo* kind = kinds_.ForObject(object.api_version, object.kind);
  if (kind == nullptr) return rules::UnknownKind(object);
  RETURN_IF_ERROR(rules::PrepareCreate(*kind, object));
  const bool generated = object.metadata.name.empty();
  const int attempts = generated ? rules::kGenerateNameAttempts : 1;
  for (int i = 0; i < attempts; ++i) {
    rules::Write write{rules::Action::kPut, object};
    write.object.metadata.name = rules::CandidateName(object);
    rules::StampCreated(write.object, base::NewUuid(), clock_->Now());
    ASSIGN_OR_RETURN(Committed c, Commit(*kind, nullptr, write));
    if (c.succeeded) return std::move(write.object);
  }
  return generated ? rules::NoFreeGeneratedName(*kind, object.metadata.generate_name)
                   : rules::AlreadyExists(*kind, object.metadata.name);
}

Result<api::Object> EtcdStoreImpl::ReadModifyWrite(
    const api::KindInfo& kind, std::string_view ns, std::string_view name, bool explicit_revision,
    const std::function<Result<rules::Write>(const StoredObject&)>& next) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    ASSIGN_OR_RETURN(auto old, Load(kind, ns, name));
    if (!old) return rules::NotFound(kind, name);
    ASSIGN_OR_RETURN(rules::Write write, next(*old));
    if (write.action == rules::Action::kNone) return std::move(write.object);
    ASSIGN_OR_RETURN(Committed c, Commit(kind, &*old, write));
    if (c.succeeded) return std::move(write.object);
    if (!c.current) return rules::NotFound(kind, name);
    if (explicit_revision) {
      // The caller's resourceVersion matched what was read, and another write came between.
      return rules::Conflict(
          kind, name,
          fmt::format("stale resourceVersion {}, current {}", old->revision, c.current->revision));
    }
  }
  return rules::Conflict(kind, name, "too many concurrent writers; retry");
}

Result<api::Object> EtcdStoreImpl::Update(api::Object object, Subresource subresource) {
  const api::KindInfo* kind = kinds_.ForObject(object.api_version, object.kind);
  if (kind == nullptr) return rules::UnknownKind(object);
  RETURN_IF_ERROR(rules::PrepareUpdate(*kind, object, subresource));
  const Preconditions pre = rules::UpdatePreconditions(object);
  std::string ns = object.metadata.namespace_;
  std::string name = object.metadata.name;
  return ReadModifyWrite(*kind, ns, name, pre.resource_version != 0,
                         [&](const StoredObject& old) -> Result<rules::Write> {
                           RETURN_IF_ERROR(rules::CheckPreconditions(*kind, old, pre));
                           return rules::Update(*kind, old, object, subresource);
                         });
}

Result<api::Object> EtcdStoreImpl::Patch(const api::KindInfo& kind, std::string_view ns,
                                         std::string_view name, const api::Json& merge_patch,
                                         Subresource subresource) {
  RETURN_IF_ERROR(rules::CheckPatch(kind, merge_patch, subresource));
  bool explicit_revision = false;
  if (auto meta = merge_patch.find("metadata"); meta != merge_patch.end() && meta->is_object()) {
    auto rv = meta->find("resourceVersion");
    explicit_revision = rv != meta->end() && !rv->is_null();
  }
  return ReadModifyWrite(kind, kind.namespaced ? ns : "", name, explicit_revision,
                         [&](const StoredObject& old) -> Result<rules::Write> {
                           ASSIGN_OR_RETURN(api::Object patched,
                                            rules::ApplyPatch(kind, old, merge_patch));
                           return rules::Update(kind, old, std::move(patched), subresource);
                         });
}

Status EtcdStoreImpl::OrphanDependents(std::string_view owner_uid) {
  ASSIGN_OR_RETURN(auto dependents, DependentKeys(owner_uid));
  for (const auto& key : dependents) {
    auto parsed = keys_.Parse(key);
    if (!parsed) continue;
    auto r = ReadModifyWrite(*parsed->kind, parsed->namespace_, parsed->name, false,
                             [&](const StoredObject& dep) -> Result<rules::Write> {
                               return rules::Orphan(dep, owner_uid);
                             });
    if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
  }
  return Status::Ok();
}

Result<api::Object> EtcdStoreImpl::Delete(const api::KindInfo& kind, std::string_view ns,
                                          std::string_view name, const DeleteOptions& options) {
  std::string ns_s(kind.namespaced ? ns : "");
  if (options.propagation == Propagation::kOrphan) {
    // Dependents lose the reference before the owner goes, so the collector never sees them
    // ownerless (not one transaction with the delete: a delete that then fails leaves them
    // orphaned, as an interrupted Kubernetes orphaning does).
    ASSIGN_OR_RETURN(auto old, Load(kind, ns_s, name));
    if (!old) return rules::NotFound(kind, name);
    RETURN_IF_ERROR(rules::CheckPreconditions(kind, *old, options.preconditions));
    RETURN_IF_ERROR(OrphanDependents(old->object.metadata.uid));
  }
  return ReadModifyWrite(kind, ns_s, name, options.preconditions.resource_version != 0,
                         [&](const StoredObject& old) {
                           return rules::Delete(kind, old, options.preconditions, clock_->Now());
                         });
}

}  // namespace warren::store::etcd
