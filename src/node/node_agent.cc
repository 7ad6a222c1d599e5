#include "node/node_agent.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "api/inplace_update.h"
#include "api/kinds.h"
#include "api/types/labels.h"
#include "api/types/pod_template.h"
#include "base/dir_names.h"
#include "base/encoding.h"
#include "base/log.h"
#include "envd/init_channel.h"
#include "image/builtin_images.h"
#include "image/safe_fs.h"
#include "node/audit_collector.h"
#include "node/checkpoint_agent.h"
#include "node/envd_span_collector.h"
#include "node/node_registration.h"
#include "node/sandbox_files.h"
#include "node/sandbox_object.h"
#include "os/thread_priority.h"
#include "os/tmpfs.h"
#include "runtime/gvisor/gvisor_runtime.h"
#include "runtime/native/native_runtime.h"
#include "trace/span.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

auto Log() { return base::Logger("node"); }

// A user-namespaced sandbox's root (an unprivileged uid on the host) must be able to walk to
// its writable layer. The agent's own directories are made 0711; a private data directory
// (e.g. mkdtemp's 0700) gets o+x added, which lets nobody list or read it. Anything further up
// is the administrator's: it is reported, not changed.
void EnsureSearchable(const std::string& root) {
  std::filesystem::path data_dir = std::filesystem::path(root).parent_path();
  struct stat st;
  if (stat(data_dir.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0) {
    if (chmod(data_dir.c_str(), (st.st_mode & 07777) | S_IXOTH) == 0) {
      Log()->info("made the data directory searchable for user-namespaced sandboxes dir={}",
                  data_dir.string());
    }
  }
  for (auto p = data_dir.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    if (stat(p.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0) {
      Log()->error(
          "directory {} is not searchable by others (o+x): user-namespaced sandboxes "
          "under it cannot start; chmod o+x it or set WARREN_NODE_USERNS=0",
          p.string());
    }
  }
}

}  // namespace

NodeAgent::NodeAgent(store::Store& store, NodeAgentOptions options)
    : NodeAgent(store, std::move(options), nullptr, nullptr) {}

NodeAgent::NodeAgent(store::Store& store, NodeAgentOptions options, runtime::RuntimePtr runtime,
                     std::unique_ptr<image::ImageStore> images)
    : store_(store),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : base::RealClock()),
      injected_runtime_(std::move(runtime)),
      images_(std::move(images)),
      queue_(clock_) {}

NodeAgent::~NodeAgent() {
  Stop();
  // With no sandbox left, the runtime's directories and cgroup parents are empty: remove them
  // (each rmdir fails harmlessly while something is still in there).
  std::vector<std::string> cgroup_dirs;
  if (native_) cgroup_dirs = native_->cgroups().DirsFor(options_.cgroup_parent);
  const bool made_runtime = native_ != nullptr;
  runtime_.reset();
  if (made_runtime) {
    for (const auto& d : cgroup_dirs) rmdir(d.c_str());
    rmdir((options_.runtime_state_dir + "/.idmap").c_str());
    // No sandbox of this agent is left to start again from envd's copy once its dir is gone.
    if (rmdir(options_.runtime_state_dir.c_str()) == 0 && envd_stage_) UnstageEnvd(*envd_stage_);
    runtime::gvisor::GvisorRuntime::RemoveEmptyCgroups(options_.cgroup_parent + "-gvisor");
    rmdir((options_.root + "/gvisor/.runsc").c_str());
    rmdir((options_.root + "/gvisor").c_str());
  }
}

// The runtime makes a directory, a mount point and a state record for every sandbox and removes
// them with it. /run is a tmpfs on most hosts; where it is on a disk, ext4 without a journal
// skips, one by one, every inode freed in the last one to five minutes before it hands out a new
// one (fs/ext4/ialloc.c, recently_deleted): ~8 % of the machine's CPU while a pool churns
// (bench/claim/README.md). No record outlives a reboot, so they go on a tmpfs of their own.
void NodeAgent::KeepRuntimeStateInMemory() {
  const std::string& dir = options_.runtime_state_tmpfs;
  if (dir.empty() || !options_.runtime_state_dir.starts_with(dir + "/")) return;
  auto made = os::EnsureMemoryBackedDir(dir, 0711, "mode=0711,size=256m");
  if (!made.ok()) {
    Log()->warn("runtime state stays where it is dir={} error=\"{}\"", dir,
                made.status().ToString());
    return;
  }
  switch (made->action) {
    case os::MemoryBackedDir::Action::kAlready:
      return;
    case os::MemoryBackedDir::Action::kMounted:
      Log()->info(
          "runtime state on a tmpfs mounted at {} (it was on {}); it stays mounted, as a tmpfs "
          "/run would be (WARREN_NODE_STATE_TMPFS=off: leave it on disk)",
          dir, made->fs);
      return;
    case os::MemoryBackedDir::Action::kLeftOnDisk:
      Log()->warn("runtime state stays on {} fs={} why=\"{}\"", dir, made->fs, made->why);
      return;
  }
}

void NodeAgent::StageEnvdBinary() {
  if (!options_.stage_envd) return;
  EnvdStage stage;
  stage.name = base::Sha256Hex(options_.runtime_state_dir).substr(0, 12);
  auto staged = StageEnvd(options_.envd_path, stage);
  if (!staged.ok()) {
    Log()->warn("envd is bound from {} as it is, not from a huge-page copy: {}", options_.envd_path,
                staged.status().ToString());
    return;
  }
  Log()->info(
      "envd copied to {} (a tmpfs with huge=within_size) from {}; sandboxes bind the copy "
      "(WARREN_NODE_ENVD_STAGE=off: bind the original)",
      *staged, options_.envd_path);
  envd_path_ = *staged;
  envd_stage_ = std::move(stage);
}

std::string NodeAgent::LeaseId(const std::string& uid) const {
  // Leases of one image store may come from several agents (one per data dir); each agent only
  // ever releases its own, so they carry the agent's root.
  return fmt::format("sandbox:{}:{}", base::Sha256Hex(options_.root).substr(0, 12), uid);
}

Status NodeAgent::Start() {
  auto log = Log();
  if (options_.secrets == nullptr) {
    return FailedPreconditionError(
        "node agent: no SandboxSecrets given (NodeAgentOptions::secrets)");
  }
  if (Status s = MakeDirs(SandboxPaths::SandboxesDir(options_.root)); !s.ok()) {
    return s.WithPrefix("node agent root");
  }
  if (options_.user_namespace) EnsureSearchable(options_.root);
  envd_path_ = options_.envd_path;
  if (auto hub = os::InotifyHub::Create(); hub.ok()) {
    log_writes_ = std::move(hub).value();
  } else {
    log->warn("envd's readiness will be polled: {}", hub.status().ToString());
  }
  storage_ = SandboxStorage::Open(options_.root, options_.storage);
  ASSIGN_OR_RETURN(NodeSecret secret, NodeSecret::LoadOrCreate(options_.root + "/node.secret"));
  secret_ = std::move(secret);
  if (!images_) {
    ASSIGN_OR_RETURN(images_,
                     image::ImageStore::Open({.root = options_.image_root,
                                              .allowed_registries = options_.allowed_registries}));
  }
  if (options_.network) {
    sbnet::NetworkOptions net = *options_.network;
    if (net.resolv_conf_path.empty()) net.resolv_conf_path = options_.root + "/resolv.conf";
    ASSIGN_OR_RETURN(network_, sbnet::SandboxNetwork::Create(std::move(net)));
  }
  if (!injected_runtime_) {
    runtime::native::NativeRuntimeOptions ro;
    ro.network = network_.get();
    ro.state_dir = options_.runtime_state_dir;
    ro.cgroup_parent = options_.cgroup_parent;
    ro.userns_host_id = options_.userns_host_id;
    ro.clock = options_.clock;
    KeepRuntimeStateInMemory();
    if (Status s = MakeDirs(options_.runtime_state_dir); !s.ok()) return s;
    StageEnvdBinary();
    ASSIGN_OR_RETURN(auto native, runtime::native::NativeRuntime::Create(ro));
    native_ = native.get();
    injected_runtime_ = std::move(native);
  }
  std::map<std::string, runtime::RuntimePtr, std::less<>> classes;
  if (native_ != nullptr && options_.gvisor &&
      access(options_.envd_gvisor_path.c_str(), X_OK) != 0) {
    log->info("runtime class gvisor not offered: warren-envd-gvisor not found at {}",
              options_.envd_gvisor_path);
  } else if (native_ != nullptr && options_.gvisor) {
    // Offered when this machine can run it; a node without runsc is still a node.
    auto gvisor =
        runtime::gvisor::GvisorRuntime::Create({.state_dir = options_.root + "/gvisor",
                                                .cgroup_parent = options_.cgroup_parent + "-gvisor",
                                                .runsc_path = options_.runsc_path,
                                                .init_path = options_.gvisor_init_path,
                                                .clock = options_.clock});
    if (gvisor.ok()) {
      classes.emplace(api::kRuntimeGvisor, std::move(gvisor).value());
    } else {
      log->info("runtime class gvisor not offered: {}", gvisor.status().ToString());
    }
  }
  classes.emplace(api::kRuntimeNative, std::move(injected_runtime_));
  runtime_ = std::make_unique<runtime::RuntimeRouter>(std::move(classes), api::kRuntimeNative);
  capacity_ = ReadNodeCapacity();
  capacity_.ephemeral_storage_bytes = storage_->capacity_bytes();
  events_ = std::make_unique<EventRecorder>(store_, clock_, "warren-node", options_.node_name);
  runtime_->SetExitCallback(
      [this](const std::string& id, const runtime::ExitStatus&) { OnExit(id); });
  volumes_ = std::make_unique<VolumeAgent>(
      store_, *storage_, clock_,
      VolumeAgentOptions{options_.node_name, SandboxPaths::VolumesDir(options_.root),
                         options_.user_namespace ? options_.userns_host_id : 0});
  RETURN_IF_ERROR(Adopt());
  // After adoption: what the adopted sandboxes mount is recorded before any deletion is looked at.
  RETURN_IF_ERROR(volumes_->Start());
  // The sandboxes' policies, adopted with them, go in with the table.
  if (network_) RETURN_IF_ERROR(network_->Install());
  // Every Sandbox, and after each list the keys of sandboxes this node holds whose objects
  // may have gone while nobody watched (CleanupGoneKey).
  watch_ = std::make_unique<KindWatch>(
      store_, api::SandboxKind(), [this](const std::string& key) { queue_.Add(key); },
      [this] { locals_.ForEach([&](const Local& l) { queue_.Add(l.key); }); });
  watch_->HandObjects(
      {.on_list = [this](const std::vector<api::Object>& items) { watched_.Listed(items); },
       .on_event =
           [this](const store::WatchEvent& e) {
             if (e.type == store::EventType::kDeleted) {
               watched_.Deleted(e.object->Key());
             } else {
               watched_.Saw(e.object->Key(), e.object);
             }
           }});
  watch_->Start();
  prober_ = std::make_unique<Prober>(
      clock_, std::max(1, options_.probe_threads),
      [this](const std::string& id) {
        runtime::Runtime* rt = runtime_.get();
        return ProbeTarget{EnvdFor(id), [rt, id](uint16_t port, std::chrono::milliseconds t) {
                             return rt->Dial(id, port, t);
                           }};
      },
      [this](const std::string& key) { queue_.Add(key); });
  prober_->Start();
  started_ = true;
  import_thread_ = std::thread([this] { ImportLoop(); });
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
  sampler_thread_ = std::thread([this] { SamplerLoop(); });
  checkpoints_ = std::make_unique<CheckpointAgent>(store_, *this, clock_);
  checkpoints_->Start();
  PublishNodeObject();
  puller_ = std::make_unique<ImagePuller>(
      store_, *images_, *events_, clock_,
      ImagePullerOptions{.node_name = options_.node_name,
                         .on_images_changed = [this] { PublishNodeObject(); }});
  puller_->Start();
  log->info(
      "node agent started node={} root={} runtime_state={} cgroup_parent={} envd={} "
      "userns={}",
      options_.node_name, options_.root, options_.runtime_state_dir, options_.cgroup_parent,
      envd_path_, options_.user_namespace);
  return Status::Ok();
}

void NodeAgent::Stop() {
  if (stopping_.exchange(true)) return;
  if (puller_) puller_->Stop();
  if (checkpoints_) checkpoints_->Stop();  // its captures wait on this agent's reconciles
  if (prober_) prober_->Stop();            // its notifications feed the queue
  if (watch_) watch_->Stop();
  stop_cv_.notify_all();
  queue_.Shutdown();
  for (auto& w : workers_) w.join();
  workers_.clear();
  if (sampler_thread_.joinable()) sampler_thread_.join();
  if (import_thread_.joinable()) import_thread_.join();
  if (volumes_) volumes_->Stop();
  if (!started_) {
    // Adoption may not have run: sandboxes of an earlier agent may still use the storage.
    if (storage_) storage_->Close(/*sandboxes_remain=*/true);
    return;
  }
  if (!options_.destroy_on_stop) {
    storage_->Close(/*sandboxes_remain=*/!runtime_->List().empty());
    Log()->info("node agent stopped; sandboxes keep running");
    return;
  }
  // The objects stay (with their finalizer): a later agent on this data dir finds them lost.
  std::vector<std::pair<std::string, std::string>> all;
  locals_.ForEach([&](const Local& l) { all.emplace_back(l.id, l.uid); });
  for (const auto& [id, uid] : all) {
    if (Status s = DestroyLocal(id, uid, /*keep_files=*/false); !s.ok()) {
      Log()->error("destroy on stop failed id={} error=\"{}\"", id, s.ToString());
    }
  }
  storage_->Close(/*sandboxes_remain=*/!runtime_->List().empty());
  Log()->info("node agent stopped; destroyed sandboxes={}", all.size());
}

bool NodeAgent::Ready() const { return started_ && !stopping_; }

Result<std::pair<std::string, uint32_t>> NodeAgent::VolumeDir(const std::string& namespace_,
                                                              const std::string& name) const {
  if (!volumes_) return UnavailableError("the node agent has not started");
  ASSIGN_OR_RETURN(std::string dir, volumes_->Dir(namespace_, name));
  return std::make_pair(std::move(dir), volumes_->sandbox_root_uid());
}

std::vector<std::string> NodeAgent::VolumeMountedBy(const std::string& namespace_,
                                                    const std::string& name) const {
  return volumes_ ? volumes_->MountedBy(namespace_, name) : std::vector<std::string>{};
}

std::vector<std::string> NodeAgent::Degraded() const {
  std::vector<std::string> out;
  if (started_ && storage_ && !storage_->enforced()) {
    out.push_back(fmt::format(
        "ephemeral-storage is not enforced ({}): sandboxes have no storage limit and templates "
        "that name one are refused",
        storage_->reason()));
  }
  return out;
}

void NodeAgent::ImportLoop() {
  auto result = image::ImportBuiltinImages(*images_, options_.image_cache_dir);
  if (!result.ok()) {
    Log()->error("built-in images could not be imported cache={} error=\"{}\"",
                 options_.image_cache_dir, result.status().ToString());
  } else {
    for (const auto& r : *result) {
      Log()->info("built-in image name={} action={}", r.name, r.action);
    }
  }
  std::vector<std::string> waiting;
  {
    std::lock_guard lock(mu_);
    images_ready_ = true;
    waiting.swap(waiting_for_images_);
  }
  for (const std::string& key : waiting) queue_.Add(key);
  PublishNodeObject();
}

void NodeAgent::PublishNodeObject() {
  Status s = PublishNode(store_,
                         {.name = options_.node_name,
                          .capacity = capacity_,
                          .runtime_classes = runtime_->Classes(),
                          .max_sandboxes = options_.max_sandboxes,
                          .address = advertise_address_},
                         *images_, clock_);
  if (!s.ok())
    Log()->warn("node object not written node={} error=\"{}\"", options_.node_name, s.ToString());
}

// Adoption after a restart: what still runs and still has its object is kept as it is; what
// runs for an object that is gone is destroyed; leftovers of sandboxes that never fully existed
// are removed. Objects whose sandbox vanished are left to Reconcile (→ Failed, SandboxLost).
Status NodeAgent::Adopt() {
  auto log = Log();
  ASSIGN_OR_RETURN(runtime::AdoptionReport report, runtime_->Adopt());
  for (const runtime::Orphan& o : report.orphans) {
    log->warn("removing runtime orphan id={} path={} reason=\"{}\"", o.id, o.path, o.reason);
    if (Status s = runtime_->RemoveOrphan(o); !s.ok()) {
      log->error("orphan not removed id={} error=\"{}\"", o.id, s.ToString());
    }
  }
  ASSIGN_OR_RETURN(store::ObjectList list, store_.List(api::SandboxKind(), {}));
  std::map<std::string, const api::Object*> by_id;
  std::set<std::string> uids;
  for (const api::Object& obj : list.items) {
    uids.insert(obj.metadata.uid);
    std::string id = SandboxIdOf(obj);
    if (!id.empty()) by_id[id] = &obj;
  }
  std::set<std::string> kept;
  for (const runtime::SandboxInfo& info : report.adopted) {
    SandboxPaths paths = PathsFor(info.id);
    auto owner = ReadOwner(paths.owner);
    auto it = by_id.find(info.id);
    if (owner.ok() && it != by_id.end() && it->second->metadata.uid == owner->uid) {
      const api::Object& obj = *it->second;
      Local l;
      l.id = info.id;
      l.key = obj.Key();
      l.namespace_ = obj.metadata.namespace_;
      l.name = obj.metadata.name;
      l.uid = obj.metadata.uid;
      l.restart_policy = owner->restart_policy;
      l.has_command = owner->has_command;
      // Its envd was started following the channel iff the agent made one for it.
      l.init_channel =
          access((paths.init_dir + "/" + envd::kInitChannelGeneration).c_str(), F_OK) == 0;
      l.cpu_millicores = owner->cpu_millicores;
      l.disk_limit_bytes = owner->disk_bytes;
      if (!owner->template_json.empty()) {
        if (auto pod = ParseTemplateJson(owner->template_json); pod.ok()) {
          l.running_template = *pod;
          l.revision = api::PodTemplateHash(*pod);
        }
      }
      volumes_->Restore(info.id, owner->volumes, owner->volume_dirs);
      l.state = info.state;
      if (info.state == runtime::SandboxState::kPaused && !SpecPaused(obj)) {
        // Frozen while its object says it runs: a capture cut short by a crash. Thawed before
        // the gateway serves it, not at its first reconcile, so no request meets it frozen.
        if (Status r = runtime_->Resume(info.id); r.ok()) {
          l.state = runtime::SandboxState::kRunning;
          log->info("thawed a sandbox left frozen by an interrupted capture id={}", info.id);
        } else {
          log->warn("thaw after adoption failed id={} error=\"{}\"", info.id, r.ToString());
        }
      }
      l.stats = StatsRing(options_.stats_samples);
      locals_.Put(std::move(l));
      kept.insert(info.id);
      log->info("adopted sandbox id={} object={} state={} pid={}", info.id, obj.Key(),
                runtime::SandboxStateName(info.state), info.pid);
      continue;
    }
    log->warn("destroying orphan sandbox id={} reason=\"{}\"", info.id,
              !owner.ok() ? "no owner record" : "its Sandbox object is gone");
    if (Status s = runtime_->Destroy(info.id); !s.ok() && s.code() != StatusCode::kNotFound) {
      log->error("orphan not destroyed id={} error=\"{}\"", info.id, s.ToString());
      kept.insert(info.id);  // keep its files: the runtime still has it
      if (owner.ok()) volumes_->Restore(info.id, owner->volumes, owner->volume_dirs);
      continue;
    }
    if (owner.ok()) (void)images_->ReleaseLease(LeaseId(owner->uid));
    (void)storage_->RemoveSandboxDir(paths.dir);
  }
  // Directories of sandboxes that have neither a runtime sandbox nor an object.
  for (const std::string& id : base::DirNames(SandboxPaths::SandboxesDir(options_.root))) {
    if (kept.count(id) || by_id.count(id) || id == kVolumesDirName) continue;
    SandboxPaths paths = PathsFor(id);
    if (auto owner = ReadOwner(paths.owner); owner.ok()) {
      (void)images_->ReleaseLease(LeaseId(owner->uid));
    }
    log->info("removing files of a gone sandbox id={}", id);
    (void)storage_->RemoveSandboxDir(paths.dir);
  }
  // Leases this agent took for objects that are gone.
  const std::string prefix = LeaseId("");
  for (const image::Lease& lease : images_->ListLeases()) {
    if (lease.id.rfind(prefix, 0) != 0) continue;
    if (uids.count(lease.id.substr(prefix.size()))) continue;
    log->info("releasing the image lease of a gone sandbox lease={}", lease.id);
    (void)images_->ReleaseLease(lease.id);
  }
  return Status::Ok();
}

// Lists every Sandbox, enqueues each (and every key we hold whose object vanished); returns the
// revision to watch from.
void NodeAgent::WorkerLoop() {
  while (auto key = queue_.Get()) {
    ReconcileKey(*key);
    queue_.Done(*key);
  }
}

void NodeAgent::OnExit(const std::string& sandbox_id) {
  std::string key;
  const bool known = locals_.With(sandbox_id, [&](Local& l) {
    l.state = runtime::SandboxState::kStopped;
    l.ready = false;
    key = l.key;
  });
  if (known) queue_.Add(key);
}

void NodeAgent::SamplerLoop() {
  // Sampling every sandbox (and image GC) is work nobody waits on: with a pool of 1,000 members a
  // pass reads thousands of cgroup and envd files, and it should not delay a claim or a create.
  os::ScopedThreadNice background(os::kBackgroundNiceIncrement);
  base::MonoTime next_gc = clock_.Monotonic() + options_.image_gc_interval;
  while (!stopping_) {
    std::vector<std::string> ids;
    std::vector<std::pair<std::string, std::string>> local;  // namespace, id
    locals_.ForEach([&](const Local& l) {
      if (l.state == runtime::SandboxState::kRunning || l.state == runtime::SandboxState::kPaused) {
        ids.push_back(l.id);
      }
      local.emplace_back(l.namespace_, l.id);
    });
    for (const auto& [ns, id] : local) CollectFromEnvd(ns, id);
    for (const std::string& id : ids) {
      auto stats = runtime_->Stats(id);
      if (!stats.ok()) continue;
      StatsSample s;
      s.time = clock_.Now();
      s.cpu_usage_ns = stats->cpu_usage_ns;
      s.memory_bytes = stats->memory_working_set_bytes;
      s.memory_limit_bytes = stats->memory_limit_bytes;
      s.disk_bytes = stats->disk_bytes;
      s.pids = stats->pids;
      s.oom_kills = stats->oom_kills;
      std::string key;
      locals_.With(id, [&](Local& l) {
        const int64_t host_cpus = std::max<int64_t>(1, capacity_.cpu_millicores / 1000);
        s.cpu_count =
            l.cpu_millicores > 0 ? std::min(host_cpus, (l.cpu_millicores + 999) / 1000) : host_cpus;
        s.disk_limit_bytes = static_cast<uint64_t>(std::max<int64_t>(0, l.disk_limit_bytes));
        l.stats.Add(s);
        if (!l.oom_kills_seen) {
          l.oom_kills_seen = s.oom_kills;
          l.oom_kills_reported = s.oom_kills;
        } else if (s.oom_kills > *l.oom_kills_seen) {
          l.oom_kills_seen = s.oom_kills;
          key = l.key;  // the reconcile reports it (one status writer per sandbox)
        }
      });
      if (!key.empty()) queue_.Add(key);
    }
    if (gc_soon_.exchange(false)) next_gc = clock_.Monotonic();
    if (clock_.Monotonic() >= next_gc && images_ready_) {
      next_gc = clock_.Monotonic() + options_.image_gc_interval;
      if (audit_ != nullptr) audit_->Sweep();
      auto gc = images_->Gc();
      if (gc.ok() && !gc->removed_layers.empty()) {
        Log()->info("image gc removed_layers={} freed_bytes={}", gc->removed_layers.size(),
                    gc->freed_bytes);
      }
    }
    std::unique_lock lock(mu_);
    stop_cv_.wait_for(lock, options_.stats_interval, [this] { return stopping_.load(); });
  }
}

Result<base::UniqueFd> NodeAgent::Dial(std::string_view sandbox_id, uint16_t port,
                                       std::chrono::milliseconds timeout) {
  Status here = RunningHere(sandbox_id, nullptr);
  locals_.With(sandbox_id, [&](const Local& l) { here = RunningHere(sandbox_id, &l); });
  RETURN_IF_ERROR(here);
  return runtime_->Dial(sandbox_id, port, timeout);
}

Status NodeAgent::RunningHere(std::string_view sandbox_id, const LocalSandbox* local) {
  if (local == nullptr) {
    return NotFoundError(fmt::format("sandbox {} does not run on this node", sandbox_id));
  }
  if (local->state != runtime::SandboxState::kRunning) {
    return FailedPreconditionError(
        fmt::format("sandbox {} is {}", sandbox_id, runtime::SandboxStateName(local->state)));
  }
  return Status::Ok();
}

std::optional<Result<base::UniqueFd>> NodeAgent::DialNow(std::string_view sandbox_id,
                                                         uint16_t port) {
  Status here = RunningHere(sandbox_id, nullptr);
  auto looked =
      locals_.TryWith(sandbox_id, [&](const Local& l) { here = RunningHere(sandbox_id, &l); });
  if (!looked) return std::nullopt;
  if (!here.ok()) return here;
  return runtime_->DialNow(sandbox_id, port);
}

std::shared_ptr<EnvdClient> NodeAgent::EnvdFor(const std::string& id) {
  std::shared_ptr<EnvdClient> client;
  locals_.With(id, [&](Local& l) {
    if (!l.envd) {
      runtime::Runtime* rt = runtime_.get();
      // A connection is kept after each call: a traced call that has to make one says so.
      l.envd = std::make_shared<EnvdClient>(
          [rt, id](std::chrono::milliseconds timeout) {
            trace::Span dial("node.dialEnvd");
            return rt->Dial(id, kEnvdPort, timeout);
          },
          secret_->ForSandbox(id));
    }
    client = l.envd;
  });
  return client;
}

Result<std::shared_ptr<EnvdClient>> NodeAgent::Envd(std::string_view sandbox_id) {
  if (!locals_.Contains(sandbox_id)) {
    return NotFoundError(fmt::format("sandbox {} does not run on this node", sandbox_id));
  }
  auto client = EnvdFor(std::string(sandbox_id));
  if (!client) return NotFoundError(fmt::format("sandbox {} is gone", sandbox_id));
  return client;
}

Status NodeAgent::DeliverInit(std::string_view sandbox_id, const std::string& body,
                              std::chrono::milliseconds timeout) {
  bool known = false, channel = false;
  runtime::SandboxState state = runtime::SandboxState::kCreated;
  locals_.With(sandbox_id, [&](const Local& l) {
    known = true;
    channel = l.init_channel;
    state = l.state;
  });
  if (!known) return NotFoundError(fmt::format("sandbox {} does not run on this node", sandbox_id));
  if (channel) {
    // As a request would have: a sandbox that is not running takes no /init (a claim then tries
    // another member).
    if (state != runtime::SandboxState::kRunning) {
      return FailedPreconditionError(fmt::format("sandbox {} is {}, not running", sandbox_id,
                                                 runtime::SandboxStateName(state)));
    }
    Status written =
        envd::WriteInitChannel(PathsFor(std::string(sandbox_id)).init_dir, body, SandboxRootUid());
    if (written.ok()) return written;
    // The channel lives in the sandbox's directory, under its ephemeral-storage limit: a sandbox
    // whose files fill it refuses even these few bytes (EDQUOT). envd takes the body by request
    // then, and from the channel again once there is room.
    Log()->warn("init channel not written, sending POST /init id={} error=\"{}\"", sandbox_id,
                written.ToString());
  }
  ASSIGN_OR_RETURN(auto envd, Envd(sandbox_id));
  return envd->Init(body, timeout);
}

std::vector<StatsSample> NodeAgent::Metrics(std::string_view sandbox_id, base::WallTime start,
                                            base::WallTime end) const {
  std::vector<StatsSample> out;
  locals_.With(sandbox_id, [&](const Local& l) { out = l.stats.Range(start, end); });
  return out;
}

std::vector<SandboxRef> NodeAgent::List() const {
  std::vector<SandboxRef> out;
  locals_.ForEach([&](const Local& l) {
    out.push_back(SandboxRef{l.id, l.namespace_, l.name, l.uid, l.state, l.ready});
  });
  return out;
}

Result<SandboxRef> NodeAgent::Find(std::string_view sandbox_id) const {
  std::optional<SandboxRef> ref;
  locals_.With(sandbox_id, [&](const Local& l) {
    ref = SandboxRef{l.id, l.namespace_, l.name, l.uid, l.state, l.ready};
  });
  if (!ref) return NotFoundError(fmt::format("sandbox {} does not run on this node", sandbox_id));
  return *ref;
}

Result<base::UniqueFd> NodeAgent::OpenCommandLog(std::string_view sandbox_id) const {
  if (sandbox_id.empty() || sandbox_id.find('/') != std::string_view::npos || sandbox_id == "." ||
      sandbox_id == "..") {
    return InvalidArgumentError(fmt::format("invalid sandbox id \"{}\"", sandbox_id));
  }
  SandboxPaths paths = PathsFor(std::string(sandbox_id));
  return OpenRegularFileBeneath(paths.dir, std::string("log/") + kCommandLogName);
}

Result<std::vector<base::LogLine>> NodeAgent::ReadCommandLog(
    std::string_view sandbox_id, const base::LogLineQuery& query) const {
  ASSIGN_OR_RETURN(base::UniqueFd log, OpenCommandLog(sandbox_id));
  SandboxPaths paths = PathsFor(std::string(sandbox_id));
  auto index = OpenRegularFileBeneath(
      paths.dir, std::string("log/") + kCommandLogName + base::kLineIndexSuffix);
  struct stat st {};
  int64_t mtime_ms = 0;
  if (fstat(log.get(), &st) == 0) {
    mtime_ms = int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1'000'000;
  }
  return base::ReadLogLines(log.get(), index.ok() ? index->get() : -1, query, mtime_ms);
}

void NodeAgent::CollectFromEnvd(const std::string& namespace_, const std::string& sandbox_id) {
  const std::string dir = PathsFor(sandbox_id).dir;
  std::lock_guard lock(audit_mu_);
  if (audit_ != nullptr) {
    auto added = CollectEnvdAudit(*audit_, namespace_, sandbox_id, dir);
    if (!added.ok()) {
      Log()->warn("sandbox={} collecting envd's audit log: {}", sandbox_id,
                  added.status().ToString());
    }
  }
  auto spans = CollectEnvdSpans(sandbox_id, dir);
  if (!spans.ok()) {
    Log()->warn("sandbox={} collecting envd's spans: {}", sandbox_id, spans.status().ToString());
  }
}

}  // namespace warren::node
