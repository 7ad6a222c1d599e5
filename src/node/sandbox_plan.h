#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/types/pod_template.h"
#include "image/oci.h"
#include "node/failure.h"
#include "node/options.h"
#include "node/sandbox_paths.h"
#include "runtime/spec.h"
#include "sbnet/egress_policy.h"

namespace warren::node {

// PodSpec.restartPolicy: what happens when pid 1 (and with it the template command) ends.
enum class RestartPolicy { kAlways, kOnFailure, kNever };

// What the node offers, for checking requests (a request above capacity can never be met).
struct NodeCapacity {
  int64_t cpu_millicores = 0;  // 0 = unknown (not checked)
  int64_t memory_bytes = 0;
  int64_t ephemeral_storage_bytes = 0;  // the sandbox file system's size
};
NodeCapacity ReadNodeCapacity();  // from sysconf and /proc/meminfo

// A host path the agent must prepare (or check) before the runtime bind-mounts it.
struct HostPath {
  enum class Kind {
    kEmptyDir,           // made by the agent, owned by the sandbox's root
    kDirectoryOrCreate,  // hostPath types (Kubernetes'): made when missing
    kDirectory,
    kFileOrCreate,
    kFile,
    kExisting,  // type "": must exist, anything
  };
  std::string volume;  // the volume's name, for messages
  std::string path;
  Kind kind = Kind::kExisting;
};

// The CPU weight (runtime::SandboxSpec::cpu_weight) pool stock starts with, a tenth of a
// sandbox's: while refills start, the envd of a member just claimed (its /init is on the
// claim's path) and the sandboxes in use get the CPU first. The node gives a member the full
// weight once it is ready, before it can be claimed (reconcile.cc, StartAndWait).
inline constexpr int kPoolStockCpuWeight = 10;

struct PlanInput {
  std::string sandbox_id;
  api::PodTemplateSpec pod;         // the resolved template (inline or templateRef)
  std::string restart_policy;       // spec.restartPolicy as written ("" = Always)
  image::ImageConfig image;         // the main container's image config
  std::vector<std::string> layers;  // its lower dirs, bottom first
  SandboxPaths paths;
  std::string envd_path;
  // warren-envd-gvisor, which runs in place of envd_path in gVisor sandboxes (its select loop
  // lets runsc checkpoint them; apps/warren-envd/CMakeLists.txt). Empty: envd_path.
  std::string envd_gvisor_path;
  std::string node_secret;  // for envd's /reset and node-authenticated calls
  // envd's access token from its first instant until an /init replaces it: a random value
  // nobody outside the agent holds, so a sandbox is closed from birth (a warm-pool member
  // before its claim, any sandbox before its /init), and /reset returns it to that.
  std::string birth_token;
  bool user_namespace = true;
  // Unclaimed warm-pool stock (IsUnclaimedPoolStock): it starts at kPoolStockCpuWeight.
  bool pool_stock = false;
  // The runtime classes this node offers (runtime::RuntimeRouter::Classes); the first is what
  // an empty runtimeClassName means. Empty: native only.
  std::vector<std::string> runtime_classes;
  DefaultResources defaults;
  NodeCapacity capacity;
  // Empty when the node enforces ephemeral-storage; else why it cannot (for the refusal).
  std::string ephemeral_storage_unenforced;
  // The node's sandbox network: a link out for every sandbox, under `egress_policy`, with
  // `resolv_conf` bound read-only at /etc/resolv.conf. Empty: loopback only.
  std::string resolv_conf;
  sbnet::EgressPolicy egress_policy;
  // The host directories of the Volumes the pod's persistentVolumeClaim volumes name, by
  // claimName (attached by the VolumeAgent before planning).
  std::map<std::string, std::string> persistent_volumes;
  // Tracing is on: envd records spans of the requests that carry a sampled traceparent in its
  // log directory, for the node to forward (node/envd_span_collector.h).
  bool envd_spans = false;
};

struct SandboxPlan {
  runtime::SandboxSpec spec;
  RestartPolicy restart_policy = RestartPolicy::kAlways;
  // The template's own command (empty: envd alone, the usual agent sandbox).
  std::vector<std::string> command;
  std::vector<HostPath> host_paths;
  // The limit on the sandbox's writable layer, logs and emptyDirs together; 0 when the node
  // does not enforce ephemeral-storage.
  int64_t ephemeral_storage_bytes = 0;
  // envd takes its /init bodies from the init channel at paths.init_dir (envd/init_channel.h),
  // which the agent makes before the runtime's Create. Native sandboxes only: a gVisor sandbox
  // sees a host file through its gofer, not the page the node writes, so it gets POST /init.
  bool init_channel = false;
};

// Either a plan or the failure that makes one impossible.
struct PlanOutcome {
  std::optional<SandboxPlan> plan;
  Failure failure;
};

// Turns a Sandbox's template into what the runtime runs (pure: touches nothing). The main
// container is the first one; pid 1 is warren-envd (bind-mounted read-only from the host at
// kEnvdInSandbox) and the template's own command runs under it:
//   - container `command` (+ `args`) when given; else `args` after the image's entrypoint;
//     else the image's entrypoint + cmd when it has an entrypoint; else nothing (an image's
//     bare Cmd is an interactive shell, which has no meaning under envd);
//   - env: the image's, then the container's (envd passes them to everything it runs);
//   - workingDir: the container's, else the image's; user: the image's, else root;
//   - cpu/memory/ephemeral-storage: limits, else requests, else NodeAgentOptions::defaults;
//     pids always from defaults. Failures (reason InvalidResources): a limit below what a
//     sandbox can run with (cpu < 10m, memory < 4Mi, ephemeral-storage < 1Mi), a request above
//     the node's capacity, a resource this node does not have (anything but cpu, memory,
//     ephemeral-storage); ephemeral-storage named on a node that cannot enforce it (reason
//     EphemeralStorageNotEnforced);
//   - runtimeClassName "" (the node's default) or one of runtime_classes (else
//     RuntimeClassNotAvailable naming those it has), into SandboxSpec::runtime_class;
//     restartPolicy Always,
//     OnFailure or Never (else InvalidTemplate);
//   - volumeMounts of emptyDir (a directory under the sandbox's dir), hostPath and
//     persistentVolumeClaim volumes (persistent_volumes; a claim missing there is InvalidVolume).
PlanOutcome PlanSandbox(const PlanInput& in);

}  // namespace warren::node
