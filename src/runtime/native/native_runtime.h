#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/clock.h"
#include "os/cgroup.h"
#include "os/pidfd.h"
#include "runtime/native/child.h"
#include "runtime/native/idmap_cache.h"
#include "runtime/native/reaper.h"
#include "runtime/native/state_record.h"
#include "runtime/runtime.h"
#include "sbnet/sandbox_network.h"

namespace warren::runtime::native {

struct NativeRuntimeOptions {
  // One directory per sandbox (state.json, the rootfs mount point) plus .idmap/ for the
  // idmapped layer cache. Must be searchable (o+x) by the user-namespace uids.
  std::string state_dir = "/run/warren/sandboxes";
  // Sandbox cgroups are <cgroup_parent>/<id> in every hierarchy.
  std::string cgroup_parent = "warren";
  // v1 or v2; detected from the mount table when unset (v1 on hybrid hosts).
  std::optional<os::CgroupVersion> cgroup_version;
  // User-namespaced sandboxes map ids 0..userns_size-1 to userns_host_id.. on the host.
  uint32_t userns_host_id = 1'000'000'000;
  uint32_t userns_size = 65536;
  std::chrono::milliseconds freeze_timeout{5000};
  std::chrono::milliseconds kill_timeout{10000};
  base::Clock* clock = nullptr;  // borrowed; the real clock when null
  // Record per-phase timestamps of every Start (LaunchTraceOf): for benches; costs a page map.
  bool trace_launches = false;
  // Links out for sandboxes whose spec asks for egress; borrowed, outlives the runtime. Null:
  // such specs are refused.
  sbnet::SandboxNetwork* network = nullptr;
};

// The native runtime: our own namespaces, overlayfs, cgroups, capabilities and seccomp, no
// OCI runtime in between (runtime/README.md). Thread-safe (see Runtime). Owns the records of
// its sandboxes but not their processes: destroying the runtime leaves sandboxes running, to
// be adopted by the next one.
class NativeRuntime final : public Runtime {
 public:
  static Result<std::unique_ptr<NativeRuntime>> Create(NativeRuntimeOptions options);
  ~NativeRuntime() override;

  Status Create(const SandboxSpec& spec) override;
  Status Start(std::string_view id) override;
  Status Pause(std::string_view id) override;
  Status Resume(std::string_view id) override;
  Status Stop(std::string_view id, std::chrono::milliseconds grace) override;
  Status UpdateEgress(std::string_view id, const sbnet::EgressPolicy& policy) override;
  Status Rebase(const SandboxSpec& spec, bool discard_writable) override;
  Status UpdateResources(std::string_view id, const Resources& resources) override;
  Status SetCpuWeight(std::string_view id, int weight) override;
  Status Destroy(std::string_view id) override;
  Result<SandboxStats> Stats(std::string_view id) override;
  Result<SandboxInfo> Inspect(std::string_view id) override;
  std::vector<SandboxInfo> List() override;
  Result<ExitStatus> Wait(std::string_view id, std::chrono::milliseconds timeout) override;
  Result<AdoptionReport> Adopt() override;
  Status RemoveOrphan(const Orphan& orphan) override;
  Result<base::UniqueFd> Dial(std::string_view id, uint16_t port,
                              std::chrono::milliseconds timeout) override;
  std::optional<Result<base::UniqueFd>> DialNow(std::string_view id, uint16_t port) override;
  void SetExitCallback(ExitCallback callback) override;
  StateSupport SupportedState(std::string_view) const override {
    return {.filesystem = true, .memory = false};
  }
  Status CaptureWritableLayer(std::string_view id,
                              const std::function<Status(const WritableLayerView&)>& read) override;

  const os::CgroupHierarchies& cgroups() const { return hierarchies_; }
  // The host pid of a running sandbox's pid 1 (tests, the gateway's netns dialer).
  Result<int> Pid(std::string_view id);
  // The phases of the sandbox's last Start (with trace_launches).
  Result<LaunchTrace> LaunchTraceOf(std::string_view id);

 private:
  // One sandbox. Shared (shared_ptr) between the table and operations in flight, so an
  // operation keeps it alive while it waits on its mutex.
  struct Sandbox {
    std::mutex mu;
    SandboxRecord record;              // guarded by mu
    os::Cgroup cgroup;                 // guarded by mu
    std::optional<os::Pidfd> process;  // guarded by mu; set while pid 1 runs
    // A duplicate of process's pidfd that dials share, so a dial into the netns holds mu only
    // to copy it: made by the first dial, cleared with process (a pidfd keeps no namespace).
    std::shared_ptr<const base::UniqueFd> dial_pidfd;  // guarded by mu
    bool gone = false;  // guarded by mu; destroyed, no longer in the table
    LaunchTrace trace;  // guarded by mu
    // The egress address of its last run: its next Start asks for it again, so a restart,
    // reset or in-place update keeps the address others know it by.
    std::optional<os::Ipv4> last_address;  // guarded by mu
    // The last full Stats and when it was read: while the group's CPU time stands still nothing
    // in it moved (processes, memory, files all take CPU to change), so Stats reads one file
    // instead of six and a walk of the upper directory. Cleared when a limit changes.
    std::optional<SandboxStats> last_stats;               // guarded by mu
    std::chrono::steady_clock::time_point last_stats_at;  // guarded by mu
  };
  using SandboxPtr = std::shared_ptr<Sandbox>;

  NativeRuntime(NativeRuntimeOptions options, os::CgroupHierarchies hierarchies, int last_cap,
                uint32_t nofile_hard);

  Result<SandboxPtr> Find(std::string_view id);
  // The pidfd dials enter the sandbox's netns by (Sandbox::dial_pidfd); FailedPrecondition
  // when pid 1 is not running. Caller holds sb.mu.
  Result<std::shared_ptr<const base::UniqueFd>> DialPidfdLocked(Sandbox& sb);
  std::string SandboxDir(std::string_view id) const;
  std::string CgroupPath(std::string_view id) const;
  Status Persist(const Sandbox& sb);
  static std::optional<sbnet::Attachment> EgressOf(const SandboxRecord& r);
  // The address on eth0 inside the network namespace of `pid`, if any.
  static std::optional<os::Ipv4> EgressAddressInside(int pid);
  // The sandbox's pid 1 is gone (or was never seen again): its link out is undone.
  void DetachEgressLocked(Sandbox& sb);
  SandboxInfo InfoLocked(const Sandbox& sb) const;
  // If pid 1 has exited: reaps it, records the exit, and returns it (the caller reports it
  // through the exit callback once it released the lock).
  std::optional<ExitStatus> CollectExitLocked(Sandbox& sb);
  void NotifyExit(const std::string& id, const std::optional<ExitStatus>& exit);
  void OnProcessExit(const std::string& id);
  Status KillLocked(Sandbox& sb);
  // InvalidArgument when `spec`'s user is outside the user namespace's ids.
  Status CheckUserInRange(const SandboxSpec& spec) const;
  // A fresh, empty upper and work directory in `writable_dir` (owned by the sandbox's root).
  Status MakeWritableLayer(const std::string& id, const std::string& writable_dir,
                           bool user_namespace);
  Status RemoveSandboxFiles(const SandboxRecord& record);
  Result<SandboxPtr> AdoptOne(const std::string& id, SandboxRecord record);

  const NativeRuntimeOptions options_;
  const os::CgroupHierarchies hierarchies_;
  const int last_cap_;
  const uint32_t nofile_hard_;
  base::Clock& clock_;
  std::unique_ptr<IdmapCache> idmaps_;
  std::unique_ptr<Reaper> reaper_;

  std::mutex table_mu_;
  std::map<std::string, SandboxPtr, std::less<>> table_;  // guarded by table_mu_

  std::mutex callback_mu_;
  ExitCallback on_exit_;  // guarded by callback_mu_
};

}  // namespace warren::runtime::native
