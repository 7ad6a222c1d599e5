#include "node/volume_agent.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "base/dir_names.h"
#include "base/log.h"
#include "node/sandbox_files.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

constexpr const char* kFinalizer = "warren.dev/volume";
auto Log() { return base::Logger("volume"); }

std::string KeyOf(const std::string& namespace_, const std::string& name) {
  return namespace_ + "/" + name;
}

}  // namespace

VolumeAgent::VolumeAgent(store::Store& store, const SandboxStorage& storage, base::Clock& clock,
                         VolumeAgentOptions options)
    : store_(store),
      storage_(storage),
      clock_(clock),
      options_(std::move(options)),
      queue_(clock),
      watch_(store, api::VolumeKind(), [this](const std::string& key) { queue_.Add(key); }) {}

VolumeAgent::~VolumeAgent() { Stop(); }

Status VolumeAgent::Start() {
  RETURN_IF_ERROR(MakeDirs(options_.dir));
  // Only root walks it (the runtime clones a volume for its bind mount from here): host users
  // have no business listing or writing teams' volumes.
  if (chmod(options_.dir.c_str(), 0700) != 0) {
    return InternalError(fmt::format("chmod {}: {}", options_.dir, strerror(errno)));
  }
  SweepOrphans();
  watch_.Start();
  worker_ = std::thread([this] { WorkerLoop(); });
  started_ = true;
  return Status::Ok();
}

void VolumeAgent::Stop() {
  if (!started_) return;
  started_ = false;
  watch_.Stop();
  queue_.Shutdown();
  if (worker_.joinable()) worker_.join();
}

void VolumeAgent::SweepOrphans() {
  auto list = store_.List(api::VolumeKind(), {});
  if (!list.ok()) return;  // keep everything when unsure
  std::set<std::string> uids;
  for (const api::Object& v : list->items) uids.insert(v.metadata.uid);
  std::set<std::string> kept;
  {
    std::lock_guard m(mu_);
    kept = restored_dirs_;
  }
  for (const std::string& name : base::DirNames(options_.dir)) {
    if (uids.count(name) || kept.count(options_.dir + "/" + name)) continue;
    Log()->info("removing the data of a gone volume uid={}", name);
    if (Status s = storage_.RemoveSandboxDir(options_.dir + "/" + name); !s.ok()) {
      Log()->warn("removing volume data failed uid={} error=\"{}\"", name, s.ToString());
    }
  }
}

void VolumeAgent::WorkerLoop() {
  while (auto key = queue_.Get()) {
    std::chrono::milliseconds again;
    {
      std::lock_guard lock(reconcile_mu_);
      again = ReconcileLocked(*key);
    }
    queue_.Done(*key);
    if (again.count() > 0) queue_.AddAfter(*key, again);
  }
}

std::chrono::milliseconds VolumeAgent::ReconcileLocked(const std::string& key) {
  auto [ns, name] = api::SplitKey(key);
  auto obj = store_.Get(api::VolumeKind(), ns, name);
  if (!obj.ok() && obj.status().code() == StatusCode::kNotFound) {
    // Gone without our finalizer (someone removed it): its data goes too, once unmounted.
    auto made = provisioned_.find(key);
    if (made != provisioned_.end() && MountedBy(ns, name).empty()) {
      (void)storage_.RemoveSandboxDir(options_.dir + "/" + made->second);
      provisioned_.erase(made);
    }
    return 0ms;
  }
  if (!obj.ok()) return 1000ms;
  auto status = api::DecodeStatus<api::VolumeStatus>(*obj);
  if (!status.ok()) status = api::VolumeStatus{};
  if (!status->node_name.empty() && status->node_name != options_.node_name) return 0ms;
  if (obj->metadata.deletion_timestamp) return Remove(*obj);
  if (!obj->HasFinalizer(kFinalizer)) {
    obj->AddFinalizer(kFinalizer);
    auto updated = store_.Update(*obj);
    if (!updated.ok()) return 200ms;
    obj = std::move(updated);
  }
  api::VolumeStatus want;
  want.node_name = options_.node_name;
  want.mounted_by = MountedBy(ns, name);
  auto spec = api::DecodeSpec<api::VolumeSpec>(*obj);
  std::chrono::milliseconds again = 0ms;
  struct stat st;
  if (!spec.ok() || !spec->size) {
    want.phase = api::volume_phase::kFailed;
    want.message = spec.ok() ? "spec.size is missing" : spec.status().message();
  } else if ((status->phase == api::volume_phase::kAvailable ||
              status->phase == api::volume_phase::kFailed) &&
             status->node_name == options_.node_name && status->capacity_bytes > 0 &&
             lstat(DirOf(*obj).c_str(), &st) != 0) {
    // It had data here and the data is gone: never hand out an empty directory in its place
    // (the sandbox storage not mounted after a reboot would look just like this).
    want.phase = api::volume_phase::kFailed;
    want.message = fmt::format(
        "its data is missing from {} (is the sandbox storage mounted?); delete the volume to "
        "start afresh",
        DirOf(*obj));
    want.capacity_bytes = status->capacity_bytes;  // so it stays recognisable as once made
    again = 30000ms;
  } else if (Status p = Provision(*obj, *spec); !p.ok()) {
    want.phase = api::volume_phase::kFailed;
    want.message = p.ToString();
    again = 5000ms;
  } else {
    provisioned_[key] = obj->metadata.uid;
    want.phase = api::volume_phase::kAvailable;
    want.capacity_bytes = spec->size->Value();
    want.size_enforced = storage_.enforced();
    if (!want.size_enforced) {
      want.message = "the size is not enforced on this node: " + storage_.reason();
    }
  }
  if (Status w = WriteStatus(*obj, want); !w.ok()) return 200ms;
  return again;
}

Status VolumeAgent::Provision(const api::Object& volume, const api::VolumeSpec& spec) {
  const std::string dir = DirOf(volume);
  struct stat st;
  if (lstat(dir.c_str(), &st) == 0) return Status::Ok();  // its root is the sandboxes' now
  // Made whole under a temporary name, then renamed: a crash in between leaves no volume
  // without its owner or mode (the sweep removes the leftover).
  const std::string staging = options_.dir + "/." + volume.metadata.uid + ".new";
  (void)storage_.RemoveSandboxDir(staging);
  RETURN_IF_ERROR(storage_.MakeSandboxDir(staging, spec.size->Value()));
  // A new volume's root is the sandbox root's, writable by every user inside (an emptyDir's
  // mode): agents run as unprivileged users.
  if (chown(staging.c_str(), options_.sandbox_root_uid, options_.sandbox_root_uid) != 0 ||
      chmod(staging.c_str(), 0777) != 0 || rename(staging.c_str(), dir.c_str()) != 0) {
    return InternalError(fmt::format("preparing volume directory {}: {}", dir, strerror(errno)));
  }
  Log()->info("volume provisioned volume={} uid={} size={} enforced={}", volume.Key(),
              volume.metadata.uid, spec.size->ToString(), storage_.enforced());
  return Status::Ok();
}

std::chrono::milliseconds VolumeAgent::Remove(api::Object& volume) {
  if (!volume.HasFinalizer(kFinalizer)) return 0ms;
  std::vector<std::string> users = MountedBy(volume.metadata.namespace_, volume.metadata.name);
  if (!users.empty()) {
    api::VolumeStatus st = api::DecodeStatus<api::VolumeStatus>(volume).value_or({});
    st.phase = api::volume_phase::kTerminating;
    st.mounted_by = users;
    st.message = fmt::format("mounted by sandbox {}; deleted once no sandbox mounts it",
                             fmt::join(users, ", "));
    (void)WriteStatus(volume, st);
    return 0ms;  // Detach enqueues it again
  }
  if (Status s = storage_.RemoveSandboxDir(DirOf(volume)); !s.ok()) {
    Log()->warn("removing volume data failed volume={} error=\"{}\"", volume.Key(), s.ToString());
    return 5000ms;
  }
  volume.RemoveFinalizer(kFinalizer);
  auto updated = store_.Update(volume);
  if (!updated.ok() && updated.status().code() != StatusCode::kNotFound) return 200ms;
  Log()->info("volume deleted volume={} uid={}", volume.Key(), volume.metadata.uid);
  return 0ms;
}

Status VolumeAgent::WriteStatus(api::Object& volume, const api::VolumeStatus& status) {
  const api::Json before = volume.status();
  api::EncodeStatus(status, volume);
  if (volume.status() == before) return Status::Ok();
  auto written = store_.UpdateStatus(volume);
  if (!written.ok()) return written.status();
  volume = std::move(*written);
  return Status::Ok();
}

Result<std::string> VolumeAgent::Attach(const std::string& namespace_, const std::string& name,
                                        const std::string& sandbox_id) {
  const std::string key = KeyOf(namespace_, name);
  std::lock_guard lock(reconcile_mu_);
  (void)ReconcileLocked(key);
  auto obj = store_.Get(api::VolumeKind(), namespace_, name);
  if (!obj.ok()) {
    if (obj.status().code() == StatusCode::kNotFound) {
      return NotFoundError(
          fmt::format("volume \"{}\" not found in namespace \"{}\"", name, namespace_));
    }
    return obj.status();
  }
  if (obj->metadata.deletion_timestamp) {
    return FailedPreconditionError(fmt::format("volume \"{}\" is being deleted", name));
  }
  auto status = api::DecodeStatus<api::VolumeStatus>(*obj);
  if (!status.ok() || status->phase != api::volume_phase::kAvailable) {
    return FailedPreconditionError(
        fmt::format("volume \"{}\" is not available: {}", name,
                    status.ok() ? (status->message.empty() ? status->phase : status->message)
                                : status.status().message()));
  }
  if (status->node_name != options_.node_name) {
    return FailedPreconditionError(
        fmt::format("volume \"{}\" lives on node {}", name, status->node_name));
  }
  {
    std::lock_guard m(mu_);
    mounts_[key].insert(sandbox_id);
  }
  queue_.Add(key);  // mountedBy
  return DirOf(*obj);
}

Result<std::string> VolumeAgent::Dir(const std::string& namespace_, const std::string& name) {
  // As Attach does: a volume just created may not have been made yet.
  std::lock_guard lock(reconcile_mu_);
  (void)ReconcileLocked(KeyOf(namespace_, name));
  ASSIGN_OR_RETURN(api::Object obj, store_.Get(api::VolumeKind(), namespace_, name));
  auto status = api::DecodeStatus<api::VolumeStatus>(obj);
  if (!status.ok() || status->phase != api::volume_phase::kAvailable ||
      status->node_name != options_.node_name) {
    return NotFoundError(fmt::format("volume \"{}\" is not available on this node", name));
  }
  return DirOf(obj);
}

void VolumeAgent::Restore(const std::string& sandbox_id, const std::vector<std::string>& keys,
                          const std::vector<std::string>& dirs) {
  std::lock_guard m(mu_);
  for (const std::string& key : keys) mounts_[key].insert(sandbox_id);
  restored_dirs_.insert(dirs.begin(), dirs.end());
}

void VolumeAgent::Detach(const std::string& sandbox_id) {
  std::vector<std::string> changed;
  {
    std::lock_guard m(mu_);
    for (auto it = mounts_.begin(); it != mounts_.end();) {
      if (it->second.erase(sandbox_id)) changed.push_back(it->first);
      it = it->second.empty() ? mounts_.erase(it) : std::next(it);
    }
  }
  for (const std::string& key : changed) queue_.Add(key);
}

std::vector<std::string> VolumeAgent::MountedBy(const std::string& namespace_,
                                                const std::string& name) const {
  std::lock_guard m(mu_);
  auto it = mounts_.find(KeyOf(namespace_, name));
  if (it == mounts_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

Status VolumeAgent::EnsureClaimVolumes(const api::Object& sandbox,
                                       const std::vector<api::VolumeClaimTemplate>& claims) {
  for (const api::VolumeClaimTemplate& c : claims) {
    api::Object v;
    v.api_version = api::VolumeKind().ApiVersion();
    v.kind = "Volume";
    v.metadata.namespace_ = sandbox.metadata.namespace_;
    v.metadata.name = api::ClaimVolumeName(c.metadata.name, sandbox.metadata.name);
    v.metadata.owner_references.push_back(api::OwnerReference{
        sandbox.api_version, sandbox.kind, sandbox.metadata.name, sandbox.metadata.uid,
        /*controller=*/false, /*block_owner_deletion=*/false});
    auto storage = c.spec.resources.requests.find("storage");
    if (storage != c.spec.resources.requests.end()) v.spec()["size"] = storage->second.ToString();
    const std::string name = v.metadata.name;
    auto created = store_.Create(std::move(v));
    if (created.ok()) continue;
    if (created.status().code() != StatusCode::kAlreadyExists) {
      return created.status().WithPrefix(
          fmt::format("volumeClaimTemplates \"{}\"", c.metadata.name));
    }
    // Only this Sandbox object's own: another's (a name collision, or an older object of the
    // same name whose volume the garbage collector is about to take) is never mounted.
    ASSIGN_OR_RETURN(api::Object existing,
                     store_.Get(api::VolumeKind(), sandbox.metadata.namespace_, name));
    bool ours = false;
    for (const api::OwnerReference& ref : existing.metadata.owner_references) {
      if (ref.uid == sandbox.metadata.uid) ours = true;
    }
    if (!ours) {
      return FailedPreconditionError(fmt::format(
          "volumeClaimTemplates \"{}\": Volume \"{}\" exists and is not this sandbox's (it "
          "belongs to {}); waiting for it to go",
          c.metadata.name, name,
          existing.metadata.owner_references.empty()
              ? std::string("no sandbox")
              : "Sandbox uid " + existing.metadata.owner_references.front().uid));
    }
  }
  return Status::Ok();
}

}  // namespace warren::node
