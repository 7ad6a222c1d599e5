#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/object.h"
#include "api/types/volume.h"
#include "base/clock.h"
#include "base/result.h"
#include "node/kind_watch.h"
#include "node/sandbox_storage.h"
#include "node/work_queue.h"
#include "store/store.h"

namespace warren::node {

struct VolumeAgentOptions {
  std::string node_name;
  // Where volumes live: <sandboxes dir>/.volumes, on the sandbox storage (its btrfs when
  // enforced), one directory per Volume object named by its uid.
  std::string dir;
  // The host uid of root inside a sandbox: owner of a new volume's root directory.
  uint32_t sandbox_root_uid = 0;
};

// Makes Volume objects (warren.dev/v1alpha1) real on this node and keeps the record of which
// sandboxes mount them:
//   - a Volume becomes <dir>/<uid>: a btrfs subvolume limited to spec.size (a write past it
//     fails with EDQUOT inside the sandbox, and in whatever else writes there) when the sandbox
//     storage is enforced, else a plain directory (status.sizeEnforced false, message why);
//     mode 0777 owned by the sandbox's root, as an emptyDir; status Available with nodeName,
//     capacityBytes and mountedBy;
//   - its data outlives every sandbox that mounts it and restarts of the agent (the storage
//     image stays); deletion goes through the finalizer warren.dev/volume: the directory is
//     removed once no sandbox mounts it (until then Terminating, saying by whom);
//   - volumeClaimTemplates: EnsureClaimVolumes makes a sandbox's own Volumes, owned by the
//     Sandbox object (deleted with it by the store's garbage collector).
// Attach and the deletion decision are serialised, so a volume whose deletion has begun is
// never attached and one that is attached is never removed.
//
// Threads: a KindWatch feeds a WorkQueue; one worker reconciles. Attach/Detach/MountedBy are
// thread-safe and called from the node agent's workers and the API. Borrows the store and the
// storage, which must outlive it.
class VolumeAgent {
 public:
  VolumeAgent(store::Store& store, const SandboxStorage& storage, base::Clock& clock,
              VolumeAgentOptions options);
  ~VolumeAgent();
  VolumeAgent(const VolumeAgent&) = delete;
  VolumeAgent& operator=(const VolumeAgent&) = delete;

  // Makes the directory, removes the directories of Volumes that no longer exist, starts.
  Status Start();
  void Stop();

  // The host directory of Volume `namespace_`/`name` for sandbox `sandbox_id`, recorded as
  // mounted by it until Detach. Provisions it first when the worker has not yet. NotFound when
  // there is no such Volume; FailedPrecondition when it is being deleted, failed, or lives on
  // another node (the message says which).
  Result<std::string> Attach(const std::string& namespace_, const std::string& name,
                             const std::string& sandbox_id);
  // Records, without checks, what an adopted sandbox mounted before a restart ("ns/name" keys
  // and their directories, which the orphan sweep then keeps whatever the store says).
  void Restore(const std::string& sandbox_id, const std::vector<std::string>& keys,
               const std::vector<std::string>& dirs);
  // The sandbox no longer mounts anything; volumes waiting for deletion may go.
  void Detach(const std::string& sandbox_id);
  // The host directory of an Available Volume of this node, made first when the worker has not
  // yet (NotFound otherwise), for the volume content API.
  Result<std::string> Dir(const std::string& namespace_, const std::string& name);
  // The host uid of root inside a sandbox (what a volume's ids are relative to).
  uint32_t sandbox_root_uid() const { return options_.sandbox_root_uid; }
  // The ids of the sandboxes mounting it now, sorted.
  std::vector<std::string> MountedBy(const std::string& namespace_, const std::string& name) const;

  // Creates the Volumes a sandbox's claim templates give it (AlreadyExists is fine), owned by
  // the Sandbox object: the store's garbage collector deletes them after it.
  Status EnsureClaimVolumes(const api::Object& sandbox,
                            const std::vector<api::VolumeClaimTemplate>& claims);

 private:
  void WorkerLoop();
  // Returns a delay before the key is looked at again (zero: never). reconcile_mu_ held.
  std::chrono::milliseconds ReconcileLocked(const std::string& key);
  std::chrono::milliseconds Remove(api::Object& volume);
  Status Provision(const api::Object& volume, const api::VolumeSpec& spec);
  Status WriteStatus(api::Object& volume, const api::VolumeStatus& status);
  std::string DirOf(const api::Object& volume) const {
    return options_.dir + "/" + volume.metadata.uid;
  }
  void SweepOrphans();

  store::Store& store_;
  const SandboxStorage& storage_;
  base::Clock& clock_;
  const VolumeAgentOptions options_;
  WorkQueue queue_;
  KindWatch watch_;
  std::thread worker_;
  bool started_ = false;

  // Serialises reconciles with Attach, so the deletion decision and an attach never interleave.
  std::mutex reconcile_mu_;
  // key → uid of the volumes this agent made or found: for data whose object vanished without
  // the finalizer. Guarded by reconcile_mu_.
  std::map<std::string, std::string> provisioned_;
  mutable std::mutex mu_;
  std::map<std::string, std::set<std::string>> mounts_;  // guarded by mu_; key → sandbox ids
  std::set<std::string> restored_dirs_;                  // guarded by mu_; kept by the sweep
};

}  // namespace warren::node
