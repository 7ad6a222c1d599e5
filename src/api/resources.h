#pragma once

#include <cstdint>
#include <string>

#include "api/types/pod_template.h"

namespace warren::api {

// Limits a sandbox gets when its template names none (neither limits nor requests): what the
// node applies and what a quota counts, so both agree. 0 would mean unlimited.
inline constexpr int64_t kDefaultCpuMillicores = 2000;
inline constexpr int64_t kDefaultMemoryBytes = int64_t{512} << 20;
inline constexpr int64_t kDefaultPids = 2048;

// The effective value of one resource of a container: the limit, else the request; null when
// neither names it.
const Quantity* EffectiveResource(const ResourceRequirements& r, const std::string& name);

// What one sandbox holds of what a quota limits: its main (first) container's cpu and memory,
// as the node will apply them (limits, else requests, else the defaults above).
struct SandboxFootprint {
  int64_t cpu_millicores = kDefaultCpuMillicores;
  int64_t memory_bytes = kDefaultMemoryBytes;
};
SandboxFootprint FootprintOf(const PodTemplateSpec& pod);

// What one sandbox reserves of a node when it is placed (Kubernetes' scheduling rule): its main
// container's requests, else its limits (requests default to limits), else nothing — a template
// that names no resources runs under the default limits above but reserves no CPU or memory,
// as a BestEffort pod, and a node bounds how many it takes by its `sandboxes` capacity.
SandboxFootprint RequestsOf(const PodTemplateSpec& pod);

}  // namespace warren::api
