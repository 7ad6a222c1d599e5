#pragma once

// The subset of the Kubernetes PodTemplateSpec that means something to Warren: containers
// (image, command, args, env, workingDir, resources, ports, volumeMounts), runtimeClassName
// (native | gvisor) and volumes of type emptyDir, hostPath or persistentVolumeClaim (a Volume).
// Other pod fields a manifest carries are kept in the document untouched.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"
#include "api/types/probe.h"

namespace warren::api {

struct EnvVar {
  WARREN_API_STRUCT;
  std::string name;
  std::string value;
  // valueFrom (secret/configMap/field refs) stays in the document; Warren does not resolve it.

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
    v("value", s.value);
  }
};

struct ContainerPort {
  WARREN_API_STRUCT;
  std::string name;
  int32_t container_port = 0;
  std::string protocol;  // TCP (default), UDP, SCTP

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
    v("containerPort", s.container_port);
    v("protocol", s.protocol);
  }
};

struct ResourceRequirements {
  WARREN_API_STRUCT;
  std::map<std::string, Quantity> requests;  // "cpu", "memory", "ephemeral-storage"
  std::map<std::string, Quantity> limits;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("limits", s.limits);
    v("requests", s.requests);
  }
};

struct VolumeMount {
  WARREN_API_STRUCT;
  std::string name;
  std::string mount_path;
  std::string sub_path;
  bool read_only = false;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
    v("mountPath", s.mount_path);
    v("subPath", s.sub_path);
    v("readOnly", s.read_only);
  }
};

struct Container {
  WARREN_API_STRUCT;
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  std::string working_dir;
  ResourceRequirements resources;
  std::vector<ContainerPort> ports;
  std::vector<VolumeMount> volume_mounts;
  // Probes with Kubernetes semantics, run by the node agent (src/node/README.md, "Probes").
  std::optional<Probe> startup_probe;
  std::optional<Probe> readiness_probe;
  std::optional<Probe> liveness_probe;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
    v("image", s.image);
    v("command", s.command);
    v("args", s.args);
    v("env", s.env);
    v("workingDir", s.working_dir);
    v("resources", s.resources);
    v("ports", s.ports);
    v("volumeMounts", s.volume_mounts);
    v("startupProbe", s.startup_probe);
    v("readinessProbe", s.readiness_probe);
    v("livenessProbe", s.liveness_probe);
  }
};

struct EmptyDirVolumeSource {
  WARREN_API_STRUCT;
  std::string medium;  // "" (disk) or "Memory" (tmpfs)
  std::optional<Quantity> size_limit;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("medium", s.medium);
    v("sizeLimit", s.size_limit);
  }
};

struct HostPathVolumeSource {
  WARREN_API_STRUCT;
  std::string path;
  std::string type;  // "", Directory, DirectoryOrCreate, File, FileOrCreate

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("path", s.path);
    v("type", s.type);
  }
};

// A Volume object (api/types/volume.h) of the pod's own namespace, by name.
struct PersistentVolumeClaimVolumeSource {
  WARREN_API_STRUCT;
  std::string claim_name;
  bool read_only = false;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("claimName", s.claim_name);
    v("readOnly", s.read_only);
  }
};

struct Volume {
  WARREN_API_STRUCT;
  std::string name;
  std::optional<EmptyDirVolumeSource> empty_dir;
  std::optional<HostPathVolumeSource> host_path;
  std::optional<PersistentVolumeClaimVolumeSource> persistent_volume_claim;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
    v("emptyDir", s.empty_dir);
    v("hostPath", s.host_path);
    v("persistentVolumeClaim", s.persistent_volume_claim);
  }
};

struct PodSpec {
  WARREN_API_STRUCT;
  std::vector<Container> containers;
  std::vector<Volume> volumes;
  std::string runtime_class_name;  // "" = native

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("containers", s.containers);
    v("volumes", s.volumes);
    v("runtimeClassName", s.runtime_class_name);
  }
};

struct TemplateMeta {
  WARREN_API_STRUCT;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("labels", s.labels);
    v("annotations", s.annotations);
  }
};

struct PodTemplateSpec {
  WARREN_API_STRUCT;
  TemplateMeta metadata;
  PodSpec spec;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("metadata", s.metadata);
    v("spec", s.spec);
  }
};

// Runtime classes Warren runs.
inline constexpr const char* kRuntimeNative = "native";
inline constexpr const char* kRuntimeGvisor = "gvisor";

}  // namespace warren::api
