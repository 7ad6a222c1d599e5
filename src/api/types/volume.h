#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"
#include "api/types/pod_template.h"

namespace warren::api {

// Volume (warren.dev/v1alpha1, vol; namespaced): storage that outlives the sandboxes that mount
// it, as Kubernetes' PersistentVolumeClaim and E2B's team volumes are. The node agent makes it
// a directory of its own with a size limit the kernel enforces (a btrfs subvolume with a quota
// group, node/volume_agent.h) and keeps it across sandbox kills, recycles and restarts of the
// server and the host. A sandbox of the same namespace mounts it by name: a pod-template volume
// `persistentVolumeClaim: {claimName: NAME}`, a `volumeClaimTemplates` entry (one volume per
// sandbox), or E2B's `volumeMounts`. Deleting one that is mounted waits (finalizer) until no
// sandbox mounts it; E2B's DELETE refuses it instead.
struct VolumeSpec {
  WARREN_API_STRUCT;
  std::optional<Quantity> size;  // default kDefaultVolumeSize; immutable

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("size", s.size);
  }
};

struct VolumeStatus {
  WARREN_API_STRUCT;
  std::string phase;  // Pending, Available, Failed, Terminating
  std::string message;
  std::string node_name;  // the node whose disk holds it
  int64_t capacity_bytes = 0;
  // False when the node cannot enforce the size (its sandbox storage is not btrfs with quotas;
  // the message says why): the volume works, unbounded.
  bool size_enforced = false;
  std::vector<std::string> mounted_by;  // the sandbox ids that mount it now

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("phase", s.phase);
    v("message", s.message);
    v("nodeName", s.node_name);
    v("capacityBytes", s.capacity_bytes);
    v("sizeEnforced", s.size_enforced);
    v("mountedBy", s.mounted_by);
  }
};

inline constexpr const char* kDefaultVolumeSize = "1Gi";
inline constexpr int64_t kMinVolumeBytes = int64_t{1} << 20;  // 1Mi
inline constexpr int64_t kMaxVolumeBytes = int64_t{1} << 40;  // 1Ti

// A volumeClaimTemplates entry of a Sandbox, SandboxSet or SandboxTemplate (a Kubernetes
// PersistentVolumeClaim): each sandbox gets its own Volume "<name>-<sandbox name>", sized by
// resources.requests.storage, mounted where a container's volumeMount names <name>. Other PVC
// fields (accessModes, storageClassName) stay in the document.
struct ClaimTemplateMeta {
  WARREN_API_STRUCT;
  std::string name;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
  }
};

struct ClaimTemplateSpec {
  WARREN_API_STRUCT;
  ResourceRequirements resources;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("resources", s.resources);
  }
};

struct VolumeClaimTemplate {
  WARREN_API_STRUCT;
  ClaimTemplateMeta metadata;
  ClaimTemplateSpec spec;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("metadata", s.metadata);
    v("spec", s.spec);
  }
};

// The name of the Volume a claim template gives a sandbox (Kubernetes' StatefulSet rule).
inline std::string ClaimVolumeName(const std::string& claim, const std::string& sandbox_name) {
  return claim + "-" + sandbox_name;
}

namespace volume_phase {
inline constexpr const char* kPending = "Pending";
inline constexpr const char* kAvailable = "Available";
inline constexpr const char* kFailed = "Failed";
inline constexpr const char* kTerminating = "Terminating";
}  // namespace volume_phase

}  // namespace warren::api
