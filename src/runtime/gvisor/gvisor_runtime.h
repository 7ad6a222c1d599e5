#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/clock.h"
#include "os/cgroup.h"
#include "os/pidfd.h"
#include "runtime/native/reaper.h"
#include "runtime/native/state_record.h"
#include "runtime/runtime.h"

namespace warren::runtime::gvisor {

struct GvisorRuntimeOptions {
  // One directory per sandbox (its OCI bundle: config.json, the rootfs mount point, state.json,
  // the channel's socket and logs) and .runsc/, runsc's own --root.
  std::string state_dir;
  // Sandbox cgroups are <cgroup_parent>/<id>, made by runsc. Not the native runtime's parent:
  // its adoption takes every group there without a native record for an orphan.
  std::string cgroup_parent = "warren-gvisor";
  std::string runsc_path = "/usr/bin/runsc";
  // The static warren-gvisor-init binary: pid 1 inside and the shim outside.
  std::string init_path;
  std::optional<os::CgroupVersion> cgroup_version;
  std::chrono::milliseconds start_timeout{60000};  // runsc create + start + the command's exec
  std::chrono::milliseconds kill_timeout{20000};
  base::Clock* clock = nullptr;  // borrowed; the real clock when null
};

// Runs sandboxes under gVisor (runsc 20221219, ptrace platform, --network=none): one OCI bundle
// per sandbox whose root is a host overlay of the same image layers and writable layer the
// native runtime uses, pid 1 warren-gvisor-init running the spec's command, and a shim
// process per sandbox that holds the container's stdio and serves Dial through it
// (runtime/gvisor/README.md). Thread-safe (see Runtime). Sandboxes and their shims outlive the
// runtime, to be adopted by the next one.
//
// Not (yet) there: egress (refused with FailedPrecondition), user namespaces (gVisor is the
// boundary; the flag is ignored), capture of the writable layer alone, Rebase,
// UpdateResources, UpdateEgress, DialNow.
class GvisorRuntime final : public Runtime {
 public:
  // FailedPrecondition when not root or runsc / warren-gvisor-init is missing.
  static Result<std::unique_ptr<GvisorRuntime>> Create(GvisorRuntimeOptions options);
  // For Create only (the key cannot be made elsewhere): lets it use std::make_unique.
  class Key {
    friend class GvisorRuntime;
    Key() = default;
  };
  GvisorRuntime(Key, GvisorRuntimeOptions options, os::CgroupHierarchies hierarchies);
  ~GvisorRuntime() override;

  Status Create(const SandboxSpec& spec) override;
  Status Start(std::string_view id) override;
  Status Pause(std::string_view id) override;
  // A paused or hibernated sandbox runs again; a hibernated one is restored from its
  // checkpoint (`runsc restore` under a new shim, whose pipes the init's stdio becomes).
  Status Resume(std::string_view id) override;
  // `runsc checkpoint` to <dir>/checkpoint (memory and process state; the files stay in the
  // writable layer), then the container is deleted and its memory freed. The sandbox reads as
  // paused (pid 0) until Resume, also after a restart (Adopt). runsc 20221219 cannot save a
  // TCP socket registered with epoll (hence warren-envd-gvisor, built on select): such a
  // checkpoint fails and ends the sandbox, which is reported through the exit callback with
  // an unknown exit (README "Hibernate").
  Status Hibernate(std::string_view id) override;
  // A hibernate (HibernateLocked) whose image is linked into `image_dir`, the writable layer
  // read while the container is gone, then a restore of the source from the same image (runsc
  // 20221219's --leave-running hangs, runtime-spikes.md §3.3). A spec's restore_image is
  // restored by its first Start under the sandbox's own id, bundle and shim.
  Status CaptureMemory(std::string_view id, const std::string& image_dir,
                       const std::function<Status(const WritableLayerView&)>& read) override;
  StateSupport SupportedState(std::string_view) const override {
    return {.memory = true, .hibernate = true};
  }
  Status Stop(std::string_view id, std::chrono::milliseconds grace) override;
  Status Destroy(std::string_view id) override;
  Result<SandboxStats> Stats(std::string_view id) override;
  Result<SandboxInfo> Inspect(std::string_view id) override;
  std::vector<SandboxInfo> List() override;
  Result<ExitStatus> Wait(std::string_view id, std::chrono::milliseconds timeout) override;
  Result<AdoptionReport> Adopt() override;
  Status RemoveOrphan(const Orphan& orphan) override;
  Result<base::UniqueFd> Dial(std::string_view id, uint16_t port,
                              std::chrono::milliseconds timeout) override;
  void SetExitCallback(ExitCallback callback) override;

  // runsc makes a sandbox's group in every hierarchy mounted (blkio, cpuset, name=systemd too),
  // not only those of os::CgroupHierarchies: removes `relative` (empty groups only) from each.
  // For the cgroup parent once no sandbox is left (the node's teardown, tests).
  static void RemoveEmptyCgroups(const std::string& relative);

  // The host pid of the sandbox's shim while it runs (tests).
  Result<int> ShimPid(std::string_view id);
  const GvisorRuntimeOptions& options() const { return options_; }

 private:
  struct Sandbox {
    std::mutex mu;
    native::SandboxRecord record;   // guarded by mu; pid/start_time are the shim's
    std::optional<os::Pidfd> shim;  // guarded by mu; set while the container runs
    bool killed = false;            // guarded by mu; we sent SIGKILL (its exit says so)
    bool gone = false;              // guarded by mu
  };
  using SandboxPtr = std::shared_ptr<Sandbox>;

  Result<SandboxPtr> Find(std::string_view id);
  std::string SandboxDir(std::string_view id) const;
  std::string CgroupPath(std::string_view id) const;
  // runsc with the global flags every call needs (the same for each: runsc reads its
  // configuration from the flags of every command).
  std::vector<std::string> RunscArgv(std::string_view id) const;
  // Runs runsc `args` for sandbox `id` to its end: its output, or the error naming the command
  // and what runsc logged. With `then_rename` {from, to}, a shell around runsc renames `from`
  // to `to` when runsc succeeded, even if this process is gone by then.
  Result<std::string> Runsc(
      std::string_view id, const std::vector<std::string>& args, std::chrono::milliseconds timeout,
      const std::optional<std::pair<std::string, std::string>>& then_rename = std::nullopt);
  // Adoption of a sandbox whose record says running while a checkpoint image (or its
  // .partial) is there: a hibernate the last server did not see to its end (or a restore whose
  // spent image it did not remove). Once a checkpoint still under way has ended (AdoptOne
  // waits for it), makes it hibernated (the image is whole), running as it was, or stopped (the
  // checkpoint failed and took it).
  void AdoptInterruptedHibernateLocked(Sandbox& sb);
  Status Persist(const Sandbox& sb);
  SandboxInfo InfoLocked(const Sandbox& sb) const;
  Status MountRootfs(const SandboxSpec& spec);
  void UnmountRootfs(std::string_view id);
  // Spawns the shim, which runs runsc `command` (create, or restore) for the sandbox's bundle;
  // returns it once that has returned.
  Result<os::Pidfd> SpawnShim(const SandboxSpec& spec, const std::vector<std::string>& command);
  // Adoption of a sandbox recorded created, stopped or hibernated: a start or restore the last
  // server did not see through (its shim and runsc found by the sandbox directory in their
  // arguments, or its root still mounted) is ended with what runsc made; the sandbox is as it
  // was before, to be started or resumed again.
  void UndoUnfinishedRunLocked(Sandbox& sb);
  std::string CheckpointDir(std::string_view id) const { return SandboxDir(id) + "/checkpoint"; }
  // Paused with its processes on disk rather than in memory.
  bool HibernatedLocked(const Sandbox& sb) const;
  // The bundle (root mount, config.json) for a run of the container; unmounted on failure.
  Status PrepareBundleLocked(const Sandbox& sb);
  // `runsc restore` of `image` into the sandbox under a new shim. A hibernated sandbox's own
  // image is spent once restored (removed); a restore_image is shared by every clone (kept).
  Status RestoreLocked(Sandbox& sb, const std::string& image, bool spent);
  Status CaptureMemoryLocked(Sandbox& sb, const std::string& image_dir,
                             const std::function<Status(const WritableLayerView&)>& read,
                             std::optional<ExitStatus>& ended);
  // Hibernate under the sandbox's lock; `ended` is set when a failed checkpoint took the
  // container with it (an exit to report once the lock is released).
  Status HibernateLocked(Sandbox& sb, std::optional<ExitStatus>& ended);
  // Records a run of the container under `shim`, and watches it.
  void NoteRunningLocked(Sandbox& sb, os::Pidfd shim);
  // Asks the shim whether the command was exec'd (FailedPrecondition naming why not).
  Status WaitCommandReady(std::string_view id, std::chrono::milliseconds timeout);
  // After the shim has exited (the container is gone): reaps it, reads the exit, deletes the
  // runsc container, unmounts the root and records the sandbox stopped. Nothing when the shim
  // still runs.
  std::optional<ExitStatus> CollectExitLocked(Sandbox& sb);
  // Kills what runs of the container: SIGKILL through runsc, then the cgroup.
  void KillLocked(Sandbox& sb);
  // Removes the runsc container, mount and cgroup of `id`, whatever state they are in.
  void RemoveContainer(std::string_view id);
  void OnProcessExit(const std::string& id);
  void NotifyExit(const std::string& id, const std::optional<ExitStatus>& exit);
  Result<SandboxPtr> AdoptOne(const std::string& id, native::SandboxRecord record);

  const GvisorRuntimeOptions options_;
  const os::CgroupHierarchies hierarchies_;
  base::Clock& clock_;
  uint32_t nofile_hard_ = 1 << 20;
  std::unique_ptr<native::Reaper> reaper_;

  std::mutex table_mu_;
  std::map<std::string, SandboxPtr, std::less<>> table_;  // guarded by table_mu_

  std::mutex callback_mu_;
  ExitCallback on_exit_;  // guarded by callback_mu_
};

}  // namespace warren::runtime::gvisor
