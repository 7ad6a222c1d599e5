#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "api/inplace_update.h"
#include "api/object.h"
#include "api/types/sandbox.h"
#include "audit/journal.h"
#include "base/clock.h"
#include "base/line_index.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "image/image_store.h"
#include "node/envd_client.h"
#include "node/envd_stage.h"
#include "node/event_recorder.h"
#include "node/failure.h"
#include "node/image_puller.h"
#include "node/kind_watch.h"
#include "node/lifecycle_metrics.h"
#include "node/local_table.h"
#include "node/node_secret.h"
#include "node/options.h"
#include "node/prober.h"
#include "node/sandbox_paths.h"
#include "node/sandbox_plan.h"
#include "node/sandbox_storage.h"
#include "node/stats_ring.h"
#include "node/template_resolver.h"
#include "node/volume_agent.h"
#include "node/watched_sandboxes.h"
#include "node/work_queue.h"
#include "os/inotify_hub.h"
#include "runtime/runtime.h"
#include "runtime/runtime_router.h"
#include "store/store.h"

namespace warren::runtime::native {
class NativeRuntime;
}

namespace warren::node {

class CheckpointAgent;

// A sandbox this agent runs, as other modules see it.
struct SandboxRef {
  std::string sandbox_id;  // label agents.kruise.io/sandbox-id = the runtime's id
  std::string namespace_;
  std::string name;
  std::string uid;
  runtime::SandboxState state = runtime::SandboxState::kCreated;
  bool ready = false;  // envd answered since the last (re)start or resume
};

// The node agent (README.md): watches Sandbox objects in the store and makes those of this node
// real with a Runtime (native by default), the image store and warren-envd as pid 1: status and
// conditions through the status subresource, Events for failures a human can act on,
// spec.paused → freeze/thaw, deletion through the agents.kruise.io/sandbox finalizer, adoption
// of running sandboxes after a restart, stats sampling, and dialing for the gateway and the
// control plane.
//
// Threads: a watch thread feeds a WorkQueue of object keys; `workers` threads reconcile (one
// key at a time each, so one sandbox is never reconciled twice at once); a sampler thread takes
// stats and collects unused image layers; a startup thread imports the built-in images; the
// runtime's reaper thread reports exits (which only enqueue). Nothing runs on an event loop.
//
// Ownership: borrows the store (must outlive the agent); owns the runtime and the image store
// (or takes injected ones, for tests). Stopping the agent leaves sandboxes running: the next
// agent on the same root adopts them.
//
// Thread-safety: the public methods are thread-safe once Start has returned; Start and Stop are
// called from one thread.
class NodeAgent {
 public:
  NodeAgent(store::Store& store, NodeAgentOptions options);
  // With a given runtime and image store (FakeRuntime in unit tests); either may be null, in
  // which case Start makes the real one.
  NodeAgent(store::Store& store, NodeAgentOptions options, runtime::RuntimePtr runtime,
            std::unique_ptr<image::ImageStore> images);
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // Opens the runtime and the image store, adopts what still runs (orphans are destroyed), and
  // starts the threads. Fails when the runtime cannot be used here (not root, no cgroups).
  Status Start();
  void Stop();
  // Collects what envd records in each sandbox into `journal` (audit_collector.h) every sample
  // and at teardown, and sweeps old journals with the image GC. Before Start; null = never.
  void SetAuditJournal(audit::Journal* journal) { audit_ = journal; }
  // Before Start (`warren node`): where this node's relay listens (relay_routes.h), published
  // as the Node's status.address so servers and gateways reach its sandboxes. None inside
  // `warren server`, which reaches them in process.
  void SetAdvertiseAddress(std::string address) { advertise_address_ = std::move(address); }
  // Writes the Node object (made again when it is gone). Blocking; logs a failure.
  void PublishNodeObject();
  // One collection of what envd recorded in one sandbox now (also before its files go): its
  // audit entries into the journal, its spans to the exporter when tracing is on
  // (envd_span_collector.h).
  void CollectFromEnvd(const std::string& namespace_, const std::string& sandbox_id);
  // Started (sandboxes that need a built-in image wait for its import).
  bool Ready() const;
  // What this node cannot enforce, one sentence each, for /readyz and the log (e.g.
  // "ephemeral-storage is not enforced: ..."); empty when everything is.
  std::vector<std::string> Degraded() const;

  // Puts the Sandbox's kNetwork annotation (as given, e.g. just written) in force for its
  // next packet, without waiting for its reconcile. InvalidArgument for a bad annotation,
  // FailedPrecondition without a sandbox network, NotFound for a sandbox not on this node.
  Status ApplyEgressPolicy(const api::Object& sandbox);
  // A TCP connection to 127.0.0.1:port inside a running sandbox, by E2B sandbox id. NotFound
  // when this node runs no such sandbox, FailedPrecondition when it is paused or stopped,
  // Unavailable when nothing listens on the port.
  Result<base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                              std::chrono::milliseconds timeout);
  // Dial for an event loop: never waits (runtime::Runtime::DialNow); nullopt when it would.
  std::optional<Result<base::UniqueFd>> DialNow(std::string_view sandbox_id, uint16_t port);
  // A client of the sandbox's envd (/init, /reset, /logs, /health, or any request), carrying
  // its node secret. Shared: one keep-alive pool per sandbox. NotFound as Dial.
  Result<std::shared_ptr<EnvdClient>> Envd(std::string_view sandbox_id);
  // An /init body for the sandbox's envd (claims, recycling, the agent's own replay): written to
  // its init channel when it has one (envd holds it at its next request, or its next start), else
  // POST /init. Errors: NotFound as Envd, FailedPrecondition when it is not running, and the
  // write's or the request's.
  Status DeliverInit(std::string_view sandbox_id, const std::string& body,
                     std::chrono::milliseconds timeout);
  // Stats samples of a sandbox between start and end (zero = open), oldest first; empty when
  // the sandbox is unknown.
  std::vector<StatsSample> Metrics(std::string_view sandbox_id, base::WallTime start = {},
                                   base::WallTime end = {}) const;
  // Recycling a warm-pool member (reset.cc; controller::SandboxResetter): every process of a
  // running sandbox is stopped, its writable layer and emptyDir volumes are emptied (the
  // filesystem is the image again), envd starts afresh and the stored /init body is replayed;
  // phase Recycling meanwhile. It runs as the sandbox's reconcile, never beside another one.
  // Blocks until done or `timeout` (DeadlineExceeded). NotFound when this node runs no such
  // sandbox, FailedPrecondition when it is not running.
  Status Reset(std::string_view sandbox_id, std::chrono::milliseconds timeout);
  // A snapshot of a sandbox's file system (capture.cc): its writable layer, copied while the
  // sandbox is frozen, on top of the image layers it runs on, becomes the image `image_name` in
  // this node's image store (image::ImageStore::CommitImage). It runs as the sandbox's
  // reconcile, never beside a start, reset or teardown; the sandbox keeps running (or stays
  // paused or stopped, as it was). NotFound when this node runs no such sandbox (or it is
  // destroyed meanwhile), Unimplemented when its runtime cannot capture, AlreadyExists when the
  // image name is taken, DeadlineExceeded after `timeout`.
  // With `memory` (a runtime with StateSupport::memory), its processes and memory are kept
  // too, at MemoryImagePaths::For(root, image_name), from the same instant as the files; the
  // sandbox is down meanwhile (Runtime::CaptureMemory). A capture cut short by a crash is
  // made again whole: what it left (the staging directory, the image) goes first.
  Result<image::ImageRecord> CaptureFilesystem(std::string_view sandbox_id,
                                               std::string_view image_name,
                                               std::chrono::milliseconds timeout,
                                               bool memory = false);

  // The host directory of an Available Volume on this node and the host uid of a sandbox's
  // root (what its ids are relative to); NotFound when it is not here.
  Result<std::pair<std::string, uint32_t>> VolumeDir(const std::string& namespace_,
                                                     const std::string& name) const;
  // The ids of the sandboxes on this node that mount Volume `namespace_`/`name` now.
  std::vector<std::string> VolumeMountedBy(const std::string& namespace_,
                                           const std::string& name) const;

  // The sandboxes this agent runs (created, running, paused, or stopped awaiting a restart).
  std::vector<SandboxRef> List() const;
  Result<SandboxRef> Find(std::string_view sandbox_id) const;
  // Opens the template command's log of a sandbox (kept until the object is deleted) for
  // reading, safely: the sandbox writes that directory, so neither a symlink nor anything but
  // a regular file is accepted. NotFound when there is none (yet).
  Result<base::UniqueFd> OpenCommandLog(std::string_view sandbox_id) const;
  // The lines of that log `query` selects, each with when it arrived and from which stream
  // (envd's line index; a log without one is stamped with its modification time).
  Result<std::vector<base::LogLine>> ReadCommandLog(std::string_view sandbox_id,
                                                    const base::LogLineQuery& query) const;

  // Probe runs done so far, all sandboxes together (prober.h; for benches and tests).
  uint64_t ProbeRuns() const { return prober_ ? prober_->runs() : 0; }
  const NodeAgentOptions& options() const { return options_; }
  runtime::Runtime& runtime() { return *runtime_; }
  image::ImageStore& images() { return *images_; }
  bool stopping() const { return stopping_.load(); }

 private:
  // Dial's precondition on an entry of the table: NotFound when this node runs no such
  // sandbox (null), FailedPrecondition when it is not running.
  static Status RunningHere(std::string_view sandbox_id, const LocalSandbox* local);
  using Local = LocalSandbox;

  // How one reconcile pass ended.
  enum class Next { kDone, kRetry, kRetryNow };
  // How a pass ends when writing the object failed: a conflict (Aborted) means the object moved
  // on, so the pass starts over at once; any other error backs off.
  static Next AfterWriteError(const Status& s) {
    return s.code() == StatusCode::kAborted ? Next::kRetryNow : Next::kRetry;
  }

  void WorkerLoop();
  void SamplerLoop();
  void ImportLoop();
  // Writes this node's Node object (node_registration.h); a failure is logged.
  void OnExit(const std::string& sandbox_id);
  Status Adopt();

  // Reconciliation (reconcile.cc).
  void ReconcileKey(const std::string& key);
  Next Reconcile(api::Object& obj);
  Next Create(api::Object& obj, const std::string& id);
  // egress.cc: the kNetwork annotation's policy, put in force when it changed.
  void SyncEgressPolicy(api::Object& obj, const std::string& id);
  Next StartAndWait(api::Object& obj, const std::string& id);
  Next HandleExit(api::Object& obj, const std::string& id, const runtime::SandboxInfo& info);
  // The freeze of a running sandbox whose spec says paused, and its Paused status; where the
  // runtime can, its processes and memory go to disk instead (Hibernate).
  Next Freeze(api::Object& obj, const std::string& id);
  Next Hibernate(api::Object& obj, const std::string& id);
  // The files-only pause a failed hibernate leaves (Local::hibernate_failed), written once.
  Next PausedAfterFailedHibernate(api::Object& obj, const std::string& id);
  // Records the outcome of an operation that began at `started` in `metrics` and returns it.
  Next Timed(obs::OperationMetrics& metrics, const api::Object& obj, base::MonoTime started,
             Next next);
  Next ReconcileRunning(api::Object& obj, const std::string& id);
  Next ReconcilePaused(api::Object& obj, const std::string& id);
  // stop_pause.cc: a pause that keeps only the file system (pauseStrategy Stop), and what
  // follows it (still paused, or booted again on the same writable layer).
  Next PauseByStopping(api::Object& obj, const std::string& id);
  Next ReconcileStoppedPause(api::Object& obj, const std::string& id);
  // A frozen sandbox resumed with pauseStrategy Stop (E2B's connect without memory): its
  // processes end and it boots again on its files.
  Next RebootFrozen(api::Object& obj, const std::string& id);
  // probe_hooks.cc: probes of the running sandbox (README "Probes"). TrackProbes resolves them
  // for this run of pid 1 (fresh state) and starts probing; EnsureProbing does it for a
  // sandbox found running untracked (adopted) and continues one that was paused.
  void TrackProbes(const api::Object& obj, const std::string& id);
  void EnsureProbing(const api::Object& obj, const std::string& id);
  // Ready as envd and the probes say, and the sandbox probes' conditions, into `st`.
  void ApplyProbeStatus(api::SandboxStatus& st, const std::string& id, base::WallTime now);
  // A kill or an auto-pause the probes asked for, done now; nullopt when there is none.
  std::optional<Next> ActOnProbes(api::Object& obj, const std::string& id);
  Next AutoPause(api::Object& obj, const std::string& id, const std::string& why);
  // A Paused status written for an auto-pause says so (reason AutoPaused, the probe's output)
  // until the sandbox runs again.
  void NoteAutoPaused(api::SandboxStatus& st, const std::string& id, base::WallTime now);
  // The probe kill behind an exit, if any (taken).
  std::optional<std::string> TakeProbeKill(const std::string& id);
  // Stops pid 1 (and so every process) and waits until the exit is recorded.
  Status StopProcesses(const std::string& id);
  Next Teardown(api::Object& obj, const std::string& id);
  Next EnsureFinished(api::Object& obj, const std::string& id);
  Next Fail(api::Object& obj, const std::string& id, const Failure& failure);
  // Sends envd the /init body the control plane stored. nullopt when there is none to send;
  // else whether envd took it. A failure is recorded here (the RuntimeInitialized condition, a
  // warning event); a success is for the caller's next status write to record.
  std::optional<Status> ReplayInit(api::Object& obj, const std::string& id);
  // Records a pause or resume the runtime did: the sandbox's state, and that envd must be
  // checked for readiness again.
  void NoteFrozenOrThawed(const std::string& id, runtime::SandboxState state);
  // reset.cc: the Reset asked for this sandbox, if any (taken), and doing it.
  std::shared_ptr<ResetRequest> TakeReset(const std::string& id);
  Next DoReset(api::Object& obj, const std::string& id, ResetRequest& request);
  // inplace_update.cc: a running sandbox whose template changed (its hash differs from
  // status.updateRevision) is updated — in place when the change qualifies (api::
  // ClassifyTemplateChange: image, cpu/memory, metadata), else made again — with its
  // lifecycle hooks around it; nullopt when there is nothing to do. A paused one only with the
  // upgrade-resume-trigger annotation (thawed, updated, frozen again). RestartIfAsked: a new
  // kRestartRequestedAt annotation restarts every process on the same files.
  std::optional<Next> UpdateTemplateIfChanged(api::Object& obj, const std::string& id);
  std::optional<Next> UpdatePausedIfAsked(api::Object& obj, const std::string& id);
  std::optional<Next> RestartIfAsked(api::Object& obj, const std::string& id);
  Next UpdateInPlace(api::Object& obj, const std::string& id, const ResolvedTemplate& tmpl,
                     const api::TemplateChange& change, const std::string& revision);
  Next RecreateForUpdate(api::Object& obj, const std::string& id, const std::string& why,
                         const std::string& revision);
  // Ends an in-place update that could not be made: InplaceUpdate False/Failed naming `why`,
  // status.failedUpdateRevision (not tried again for it), a Warning Event.
  Next FailUpdate(api::Object& obj, const std::string& id, const std::string& revision,
                  const std::string& why);
  // Runs a preUpgrade/postUpgrade hook inside the sandbox (through envd, as an exec probe).
  Status RunUpgradeHook(const std::string& id, const char* name,
                        const std::optional<api::UpgradeAction>& hook);
  // What PlanSandbox needs of sandbox `id` but the persistent volumes (which the caller
  // attaches): template, image, paths, node facts and the egress policy (a bad policy is the
  // failure returned; `network_text` is its annotations).
  std::optional<Failure> FillPlanInput(const api::Object& obj, const std::string& id,
                                       const ResolvedTemplate& tmpl,
                                       const image::ResolvedImage& leased, PlanInput& in,
                                       std::string& network_text);
  // capture.cc: the captures asked for this sandbox, done now (from its reconcile).
  void RunCaptures(const std::string& id, const std::string& uid);
  // The memory half of a capture: Runtime::CaptureMemory into MemoryImagePaths' staging, with
  // the log directory and envd's secret, `commit` (the file system) in the same instant.
  Status CaptureMemory(const std::string& id, const std::string& image_name,
                       const std::function<Status(const runtime::WritableLayerView&)>& commit);
  // A sandbox restored from another's memory image (kEnvdRekeyFile in its directory): gives its
  // envd the sandbox's own node secret and a fresh token, with the secret it still holds.
  Status RekeyRestoredEnvd(const std::string& id);
  // RekeyRestoredEnvd's failure as the sandbox's (its envd cannot be reached as its own).
  std::optional<Failure> RekeyFailure(const std::string& id);
  // A sandbox made from a checkpoint that kept memory on this node, under a runtime class that
  // restores it: the image in `spec`, the source's logs in its log directory, the secret its
  // envd will hold in kEnvdRekeyFile. Nothing for any other sandbox.
  std::optional<Failure> PrepareMemoryRestore(const std::string& image_name,
                                              const SandboxPaths& paths,
                                              runtime::SandboxSpec& spec);
  // Waits until envd answers /health, pid 1 exits, or the timeout passes.
  enum class Readiness { kReady, kExited, kTimeout, kStopping };
  Readiness WaitReady(const std::string& id, std::chrono::milliseconds timeout);
  // Destroys a sandbox's runtime resources, its files and its lease, and forgets it.
  Status DestroyLocal(const std::string& id, const std::string& uid, bool keep_files);
  // A sandbox started from a checkpoint let go of its layers: collect them at the next sample.
  void NoteLeaseOfCheckpointReleased(const api::Object& obj);
  // Everything of the sandbox whose object is gone (deleted without our finalizer).
  void CleanupGoneKey(const std::string& key);
  // Reads the status, lets `fn` change it and writes it when anything changed (the object is
  // updated in place). Sets nodeName and observedGeneration (alone, not written). A conflict
  // with a change to the object's metadata only is retried on the fresh object (twice at most).
  // With `add_finalizer`, the agent's finalizer goes in the same write when it is missing.
  Status WriteStatus(api::Object& obj,
                     const std::function<void(api::SandboxStatus&, api::Json& raw)>& fn,
                     bool add_finalizer = false);
  Status EnsureFinalizer(api::Object& obj);
  Status RemoveFinalizer(api::Object& obj);
  Failure ClassifyExit(const std::string& id, const runtime::ExitStatus& exit, bool has_command,
                       bool* success) const;
  std::string EnvdLogTail(const std::string& id) const;
  // Puts the runtime's records on a tmpfs where they would be on a disk (options.h).
  void KeepRuntimeStateInMemory();
  void StageEnvdBinary();
  std::string LeaseId(const std::string& uid) const;
  std::chrono::milliseconds RetryDelay(const std::string& key);
  SandboxPaths PathsFor(const std::string& id) const {
    return SandboxPaths::For(options_.root, id);
  }
  // The sandbox's root as the host sees it: the owner of what the agent makes for it.
  uint32_t SandboxRootUid() const { return options_.user_namespace ? options_.userns_host_id : 0; }
  std::shared_ptr<EnvdClient> EnvdFor(const std::string& id);

  store::Store& store_;
  const NodeAgentOptions options_;
  std::string advertise_address_;  // fixed before Start
  base::Clock& clock_;
  // Sandboxes' link out (options_.network); outlives the runtime, which borrows it.
  std::unique_ptr<sbnet::SandboxNetwork> network_;
  std::mutex egress_mu_;  // policy updates, so two land in the order they were applied
  // Every runtime class of this node behind one Runtime (runtime/runtime_router.h): the
  // sandbox's own runtime answers each call.
  std::unique_ptr<runtime::RuntimeRouter> runtime_;
  runtime::RuntimePtr injected_runtime_;              // until Start puts it in runtime_
  runtime::native::NativeRuntime* native_ = nullptr;  // the native class, when the agent made it
  std::optional<EnvdStage> envd_stage_;  // where StageEnvdBinary put envd's copy, if it did
  // What sandboxes bind: options_.envd_path, or its copy (set by Start).
  std::string envd_path_;
  // Where WaitReady watches envd's log for its "listening" line: one inotify instance for every
  // start, since closing one costs an SRCU grace period (os/inotify_hub.h). Null: polled.
  std::unique_ptr<os::InotifyHub> log_writes_;
  std::unique_ptr<image::ImageStore> images_;
  std::unique_ptr<SandboxStorage> storage_;  // set by Start; <root>/sandboxes
  std::optional<NodeSecret> secret_;
  std::unique_ptr<EventRecorder> events_;
  LifecycleMetrics metrics_;
  std::unique_ptr<VolumeAgent> volumes_;          // set by Start; Volume objects (volume_agent.h)
  std::unique_ptr<CheckpointAgent> checkpoints_;  // Checkpoint objects (checkpoint_agent.h)
  std::unique_ptr<ImagePuller> puller_;           // ImagePullJobs (image_puller.h)
  std::unique_ptr<Prober> prober_;  // container and sandbox probes (prober.h); set by Start
  NodeCapacity capacity_;
  WorkQueue queue_;

  std::atomic<bool> started_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> images_ready_{false};
  std::atomic<bool> gc_soon_{false};
  audit::Journal* audit_ = nullptr;
  // One collection from envd at a time: the sampler and a teardown must not both read the same
  // offset.
  std::mutex audit_mu_;
  std::thread sampler_thread_;
  std::thread import_thread_;
  std::vector<std::thread> workers_;

  LocalTable locals_;  // the sandboxes this agent runs, by sandbox id (its own lock)
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;                  // sampler's sleep; with mu_
  std::map<std::string, int, std::less<>> retries_;  // guarded by mu_; by key
  // Sandboxes whose image waits for the built-in images' import: queued again when it ends,
  // not after their backoff. Guarded by mu_, as is the flip of images_ready_ to true.
  std::vector<std::string> waiting_for_images_;
  WatchedSandboxes watched_;          // what watch_ delivered, for reconciles to start from
  std::unique_ptr<KindWatch> watch_;  // set by Start: Sandbox keys → queue_
};

}  // namespace warren::node
