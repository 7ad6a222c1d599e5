#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "api/resources.h"
#include "api/sandbox_secrets.h"
#include "base/clock.h"
#include "base/result.h"
#include "image/registry_allowlist.h"
#include "sbnet/sandbox_network.h"

namespace warren::node {

// Limits a sandbox gets when its template names none (neither limits nor requests). 0 means
// unlimited.
struct DefaultResources {
  int64_t cpu_millicores = api::kDefaultCpuMillicores;
  int64_t memory_bytes = api::kDefaultMemoryBytes;
  int64_t pids = api::kDefaultPids;  // always applied: templates cannot name a pids limit
  // ephemeral-storage: the writable layer, logs and emptyDir volumes together
  // (WARREN_NODE_EPHEMERAL_STORAGE, a quantity).
  int64_t ephemeral_storage_bytes = int64_t{10} << 30;
};

// Where sandboxes' files live and how their ephemeral-storage is enforced (sandbox_storage.h,
// README "Ephemeral storage").
struct StorageOptions {
  // False (WARREN_NODE_STORAGE=off): no btrfs image; sandboxes' files go on the data dir's own
  // file system, ephemeral-storage is not enforced, and templates that name it are refused.
  bool enforce = true;
  // Size of the btrfs image made under the agent's root (sparse: it takes host space only as
  // sandboxes write). 0: the free space of the data dir's file system less the host reserve,
  // when the image is first made (WARREN_NODE_STORAGE_SIZE, a quantity).
  int64_t image_bytes = 0;
  // Kept free on the data dir's file system for the host: the larger of this share of its
  // size and min_reserve_bytes. The image is never made larger than the free space beyond it,
  // and no sandbox is created while the free space is below it (DiskPressure).
  int reserve_percent = 10;
  int64_t min_reserve_bytes = int64_t{1} << 30;
};

// Everything the node agent is configured with. Value type. `ForDataDir` derives the defaults
// of one `warren server` data directory; every path of one agent is distinct from every other
// agent's, so several servers (tests) on one machine never see each other's sandboxes.
struct NodeAgentOptions {
  // False: `warren server` runs no node agent (WARREN_NODE_AGENT=off), e.g. for tests of the
  // control plane alone that must not start real sandboxes.
  bool enabled = true;
  // Destroy every sandbox when the agent stops (WARREN_NODE_DESTROY_ON_STOP=1). Off by default:
  // sandboxes outlive a server restart and are adopted. Test harnesses that kill their server
  // and delete its data directory turn it on, or they leak running sandboxes.
  bool destroy_on_stop = false;
  // status.nodeName of the sandboxes this agent runs (default: the host name).
  std::string node_name;
  // True: the agent also takes every Sandbox whose status.nodeName is empty (one process that
  // is the whole system, the embedded default). False (`warren node` in a cluster): such a
  // Sandbox is the scheduler's (controller/scheduler_controller.h) and the agent waits until
  // it names this node.
  bool take_unplaced = true;
  // The agent's own files: one directory per sandbox (writable layer, logs, volumes), the node
  // secret. Must be searchable (o+x) all the way down when user namespaces are on.
  std::string root;
  // The runtime's state directory and cgroup parent (runtime/native/native_runtime.h).
  std::string runtime_state_dir;
  // A directory above runtime_state_dir that gets a tmpfs when it is on a disk
  // (NodeAgent::KeepRuntimeStateInMemory). Empty, or WARREN_NODE_STATE_TMPFS=off: left as is.
  std::string runtime_state_tmpfs;
  std::string cgroup_parent;
  // The image store's root and where the built-in images are cached (image/builtin_images.h).
  std::string image_root;
  std::string image_cache_dir;
  // The registries sandboxes' images may be pulled from (`warren server
  // --allowed-registries`); empty: none, only imported and built-in images run.
  image::RegistryAllowlist allowed_registries;
  // The warren-envd binary (static) bind-mounted read-only into every sandbox as pid 1.
  std::string envd_path;
  // Bind a copy of it on a huge-page tmpfs instead (envd_stage.h), when the agent makes the
  // native runtime itself. WARREN_NODE_ENVD_STAGE=off: bind `envd_path` as it is.
  bool stage_envd = true;
  // Its select-loop build for gVisor sandboxes, which runsc can checkpoint (hibernate); the
  // gvisor class is offered only when it is there.
  std::string envd_gvisor_path;
  // Offer runtime class "gvisor" (runtime/gvisor/README.md) when runsc is at `runsc_path` and
  // warren-gvisor-init at `gvisor_init_path`; without them the node offers native alone and
  // says why in its log (WARREN_NODE_GVISOR=0: never; WARREN_RUNSC_PATH,
  // WARREN_GVISOR_INIT_PATH). Its sandboxes live under <root>/gvisor, in cgroups under
  // <cgroup_parent>-gvisor.
  bool gvisor = true;
  std::string runsc_path = "/usr/bin/runsc";
  std::string gvisor_init_path;
  // Run sandboxes in a user namespace (root inside is an unprivileged uid outside).
  bool user_namespace = true;
  uint32_t userns_host_id = 1'000'000'000;  // must match the runtime's (its default)
  DefaultResources defaults;
  StorageOptions storage;

  // Published as the Node's capacity "sandboxes": the scheduler places no more here. Templates
  // without resources reserve no CPU or memory (api::RequestsOf), so this is what bounds them.
  int64_t max_sandboxes = 1000;
  int workers = 4;                                  // reconciles in parallel (one per sandbox)
  std::chrono::milliseconds ready_timeout{30'000};  // envd must answer /health within this
  std::chrono::milliseconds stats_interval{5'000};
  size_t stats_samples = 720;  // per sandbox: one hour at 5 s
  // Retries of transient failures: base doubling up to max.
  std::chrono::milliseconds retry_base{200};
  std::chrono::milliseconds retry_max{60'000};
  // Restarts of a sandbox whose pid 1 ended (restartPolicy Always/OnFailure), like a kubelet's
  // CrashLoopBackOff: base doubling up to max.
  std::chrono::milliseconds restart_backoff_base{10'000};
  std::chrono::milliseconds restart_backoff_max{300'000};
  std::chrono::milliseconds image_gc_interval{3'600'000};
  // The threads every sandbox's probes run on (prober.h): one timer heap, never one per sandbox.
  int probe_threads = 4;
  base::Clock* clock = nullptr;  // borrowed; the real clock when null
  // Opens the secrets sealed on Sandbox objects (the /init body the agent replays). Borrowed;
  // must be set before Start (the server's, or a test's).
  const api::SandboxSecrets* secrets = nullptr;
  // Sandboxes' link out; none (loopback only) when unset. The agent makes the network at Start
  // (resolv.conf under `root` when no path is given).
  std::optional<sbnet::NetworkOptions> network;

  // The defaults for a server whose data directory is `data_dir`: root <data_dir>/node; runtime
  // state /run/warren/sandboxes and cgroup parent "warren" for /var/lib/warren, else
  // /run/warren/<hash> and "warren-<hash>" (hash: of the data dir's absolute path). The image
  // store is the machine's (/var/lib/warren/images) whatever the data dir: it is safe to share
  // between processes, and leases are named per agent root. Then the environment may
  // override: WARREN_NODE_AGENT (off/0), WARREN_NODE_DESTROY_ON_STOP (1), WARREN_ENVD_PATH,
  // WARREN_NODE_NAME, WARREN_NODE_USERNS (0/1), WARREN_NODE_STATE_TMPFS (off/0),
  // WARREN_IMAGE_ROOT, WARREN_IMAGE_CACHE,
  // WARREN_NODE_STORAGE (off), WARREN_NODE_STORAGE_SIZE and WARREN_NODE_EPHEMERAL_STORAGE
  // (quantities: "20Gi"; an unparsable one is ignored with a warning).
  static NodeAgentOptions ForDataDir(const std::string& data_dir);
};

// Where warren-envd is: $WARREN_ENVD_PATH, else beside the running binary, else the build
// tree's apps/warren-envd/ next to apps/warren/. Returns the first candidate when none exists
// (the agent reports it as missing when a sandbox needs it).
std::string FindEnvdBinary();
// The same for warren-gvisor-init ($WARREN_GVISOR_INIT_PATH first).
std::string FindGvisorInitBinary();
// warren-envd-gvisor: $WARREN_ENVD_GVISOR_PATH, else beside `envd_path` (both are built into
// apps/warren-envd/ and installed side by side).
std::string FindEnvdGvisorBinary(const std::string& envd_path);

}  // namespace warren::node
