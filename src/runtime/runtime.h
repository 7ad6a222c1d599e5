#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/spec.h"

namespace warren::runtime {

enum class SandboxState {
  kCreated,  // filesystem and cgroup ready, no process (after Create, or Stop)
  kRunning,
  kPaused,   // processes frozen, memory kept
  kStopped,  // pid 1 exited; Start runs it again on the same writable layer
};
std::string_view SandboxStateName(SandboxState s);  // "created", "running", ...

struct ExitStatus {
  int exit_code = -1;       // when signal == 0
  int signal = 0;           // terminating signal, 0 for a normal exit
  bool oom_killed = false;  // the memory limit was hit while it ran (a kill by the OOM killer)
  bool unknown = false;     // exited while no runtime watched it (not our child after a restart)
};

struct SandboxInfo {
  std::string id;
  SandboxState state = SandboxState::kCreated;
  int pid = 0;  // host pid of pid 1 while running or paused
  bool user_namespace = false;
  base::WallTime created_at{};
  base::WallTime started_at{};  // zero until the first Start
  std::optional<ExitStatus> last_exit;
  std::string address;  // its egress address while it runs with one, else empty
};

struct SandboxStats {
  uint64_t cpu_usage_ns = 0;
  uint64_t memory_bytes = 0;              // cgroup usage, page cache included
  uint64_t memory_working_set_bytes = 0;  // minus inactive file cache
  uint64_t memory_limit_bytes = 0;        // 0 = unlimited
  uint64_t pids = 0;
  uint64_t oom_kills = 0;
  uint64_t disk_bytes = 0;  // allocated size of the writable layer
};

// What a runtime can keep of a sandbox beyond its processes (Runtime::SupportedState).
struct StateSupport {
  bool filesystem = false;  // CaptureWritableLayer
  bool memory = false;      // CaptureMemory: processes and memory for new sandboxes (clones)
  bool hibernate = false;   // Hibernate: processes and memory to disk and back, same sandbox
};

// A sandbox's writable layer as CaptureWritableLayer lends it: the overlayfs upper directory.
// A user-namespaced sandbox's files hold host ids, in-sandbox id + id_shift for
// [0, id_count); id_count is 0 when ids are not shifted.
struct WritableLayerView {
  int fd = -1;  // O_DIRECTORY, valid during the call only
  uint32_t id_shift = 0;
  uint32_t id_count = 0;
};

// Something on disk or in cgroupfs that belongs to no sandbox the runtime could adopt: a
// cgroup without a state record, a state record that cannot be read. RemoveOrphan deletes it.
struct Orphan {
  std::string id;
  std::string path;
  std::string reason;
};

struct AdoptionReport {
  std::vector<SandboxInfo> adopted;  // running/paused ones, and stopped ones with their layer
  std::vector<Orphan> orphans;
};

// Runs sandboxes on this machine. The node agent drives it; the gateway and envd client dial
// through it. Every method blocks (fork/exec, waiting for exits, cgroup I/O): call from a
// blocking pool, never an event loop. Implementations are thread-safe; operations on one
// sandbox are serialized, different sandboxes proceed in parallel.
//
// Errors a controller can act on: InvalidArgument (bad spec, impossible limit),
// NotFound (unknown sandbox, missing image layer or bind source), AlreadyExists (id in use),
// FailedPrecondition (wrong state for the operation, command or working dir missing in the
// image, a needed kernel feature or cgroup controller unavailable), ResourceExhausted (pid or
// memory limits of the host), DeadlineExceeded (a process would not stop or freeze). Each
// message names the sandbox and the thing that was wrong.
class Runtime {
 public:
  virtual ~Runtime() = default;

  // Prepares the writable layer, cgroup and state record; no process yet.
  virtual Status Create(const SandboxSpec& spec) = 0;
  // Runs pid 1; returns once it has exec'd (FailedPrecondition when the command cannot be).
  virtual Status Start(std::string_view id) = 0;
  // Freeze / thaw every process of the sandbox. Pausing a paused sandbox is a no-op.
  virtual Status Pause(std::string_view id) = 0;
  virtual Status Resume(std::string_view id) = 0;
  // SIGTERM to pid 1, SIGKILL after `grace`; the sandbox stays (state kStopped).
  virtual Status Stop(std::string_view id, std::chrono::milliseconds grace) = 0;
  // Kills everything and removes every mount, cgroup, directory and record of the sandbox.
  // Also accepts the id of an orphan. NotFound when nothing of that id exists.
  virtual Status Destroy(std::string_view id) = 0;

  virtual Result<SandboxStats> Stats(std::string_view id) = 0;
  virtual Result<SandboxInfo> Inspect(std::string_view id) = 0;
  virtual std::vector<SandboxInfo> List() = 0;
  // Blocks until pid 1 exits (or `timeout`: DeadlineExceeded); returns its exit.
  virtual Result<ExitStatus> Wait(std::string_view id, std::chrono::milliseconds timeout) = 0;

  // What this runtime can capture of the sandbox `id` (the node agent asks before a snapshot or
  // a pause that keeps state, instead of knowing the runtime's type). Nothing for an unknown id
  // where it depends on the sandbox.
  virtual StateSupport SupportedState(std::string_view id) const {
    (void)id;
    return {};
  }
  // Calls `read` with the sandbox's writable layer while every process of the sandbox is frozen,
  // so it sees one instant of the file system; a running sandbox is thawed afterwards, a paused
  // or stopped one is left as it was. Returns what `read` returned (or the freeze's error).
  // Unimplemented when SupportedState(id).filesystem is false.
  virtual Status CaptureWritableLayer(std::string_view id,
                                      const std::function<Status(const WritableLayerView&)>& read) {
    (void)read;
    return UnimplementedError(
        fmt::format("sandbox {}: this runtime cannot capture a writable layer", id));
  }

  // Writes the processes and memory of a running sandbox to `image_dir` (made here; it must
  // not exist, its parent must): an image any number of new sandboxes start from
  // (SandboxSpec::restore_image), each going on where the source was. `read` is called with
  // the source's writable layer while its processes are stopped, so files and memory are one
  // instant; the source then runs on where it was (it is down meanwhile: gVisor's checkpoint
  // ends the container, which is restored from the same image). A failed capture leaves no
  // image_dir; one that fails after the stop may end the source, reported through the exit
  // callback (as Hibernate). `read` runs under the sandbox's lock: it must not call the
  // runtime for this sandbox. Unimplemented when SupportedState(id).memory is false.
  virtual Status CaptureMemory(std::string_view id, const std::string& image_dir,
                               const std::function<Status(const WritableLayerView&)>& read) {
    (void)image_dir;
    (void)read;
    return UnimplementedError(fmt::format("sandbox {}: this runtime cannot capture memory", id));
  }

  // Writes a running or paused sandbox's processes and memory to disk and frees them (the
  // sandbox reads as paused); Resume brings them back where they were. Unimplemented where the
  // runtime cannot (native: no working checkpoint on this kernel); SupportedState says which.
  // A checkpoint that fails may end the sandbox (gVisor's does): the exit is then reported
  // through the exit callback like any other.
  virtual Status Hibernate(std::string_view id) {
    return UnimplementedError(fmt::format("sandbox {}: this runtime cannot hibernate", id));
  }

  // Replaces the egress policy of a sandbox made with `egress`: in force for its next packet
  // when it runs, and kept for its next Start. FailedPrecondition for one made without.
  virtual Status UpdateEgress(std::string_view id, const sbnet::EgressPolicy& policy) {
    (void)policy;
    return UnimplementedError(
        fmt::format("sandbox {}: this runtime cannot change a network policy", id));
  }
  // An in-place update (node/inplace_update.cc): gives a sandbox that has no process (created
  // or stopped) the image and pid 1 of `spec` — its layers, command, env, working directory,
  // user, rlimits and resources — keeping what makes it the same sandbox: its id, cgroup,
  // writable directory, mounts, log and network (the address it gets at its next Start is the
  // one it had). `discard_writable` empties the writable layer first, so the new image shows
  // through unchanged; otherwise what the sandbox wrote stays on top of the new layers.
  // FailedPrecondition when it runs or is paused; InvalidArgument when `spec` changes anything
  // it must keep; NotFound for an unknown id or a missing layer.
  virtual Status Rebase(const SandboxSpec& spec, bool discard_writable) {
    (void)discard_writable;
    return UnimplementedError(
        fmt::format("sandbox {}: this runtime cannot change a sandbox's image", spec.id));
  }
  // New cgroup limits for a sandbox, running or not (an in-place resize: no restart); kept for
  // its next Start. InvalidArgument for a limit the sandbox cannot run with (as Create).
  virtual Status UpdateResources(std::string_view id, const Resources& resources) {
    (void)resources;
    return UnimplementedError(fmt::format("sandbox {}: this runtime cannot resize", id));
  }
  // The sandbox's share of contended CPU against the node's other sandboxes (SandboxSpec::
  // cpu_weight's scale), while it runs. A preference: OK where the node has no cpu controller.
  virtual Status SetCpuWeight(std::string_view id, int weight) {
    (void)weight;
    return UnimplementedError(fmt::format("sandbox {}: this runtime cannot weigh CPU", id));
  }
  // After a restart: takes over every sandbox recorded in the state dir whose process still
  // runs (and those that stopped, with their writable layer), and reports the orphans.
  virtual Result<AdoptionReport> Adopt() = 0;
  virtual Status RemoveOrphan(const Orphan& orphan) = 0;

  // A TCP connection to 127.0.0.1:port inside the sandbox's network namespace (non-blocking
  // socket). Unavailable when nothing listens there yet.
  virtual Result<base::UniqueFd> Dial(std::string_view id, uint16_t port,
                                      std::chrono::milliseconds timeout) = 0;
  // Dial for an event loop thread, which must never wait: the socket only when it can be had
  // at once (the sandbox is not held by a lifecycle operation, and the loopback connect was
  // answered during the call); nullopt when it would have to wait, and the caller then calls
  // Dial on a thread that may block. Errors as Dial's. Runtimes that cannot do this keep the
  // default.
  virtual std::optional<Result<base::UniqueFd>> DialNow(std::string_view id, uint16_t port) {
    (void)id;
    (void)port;
    return std::nullopt;
  }

  // Called once per exit of a sandbox's pid 1, on a runtime thread, with no runtime lock held
  // (it may call back into the runtime). Set it before Adopt or Start.
  using ExitCallback = std::function<void(const std::string& id, const ExitStatus& exit)>;
  virtual void SetExitCallback(ExitCallback callback) = 0;
};

using RuntimePtr = std::unique_ptr<Runtime>;

}  // namespace warren::runtime
