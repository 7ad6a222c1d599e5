#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/object.h"
#include "api/types/pod_template.h"
#include "api/types/volume.h"
#include "base/result.h"
#include "node/failure.h"
#include "node/volume_agent.h"

namespace warren::node {

// One of E2B's volumeMounts (api::annotations::kVolumeMounts).
struct VolumeMountRequest {
  std::string name;  // the Volume
  std::string path;  // where in the sandbox
};
// The annotation's mounts (none when absent); InvalidArgument naming the fault otherwise.
Result<std::vector<VolumeMountRequest>> ParseVolumeMountsAnnotation(const api::Object& sandbox);
// The annotation's text for `mounts`.
std::string VolumeMountsAnnotation(const std::vector<VolumeMountRequest>& mounts);

// Adds to `pod` what a sandbox mounts beyond its template's own volumes (pure):
//   - each claim template without a pod volume of its name becomes one, persistentVolumeClaim
//     "<claim>-<sandbox name>";
//   - each E2B mount becomes a volume "e2b-volume-<i>" mounted at its path in the first
//     container.
void AddPersistentVolumes(const std::string& sandbox_name,
                          const std::vector<api::VolumeClaimTemplate>& claims,
                          const std::vector<VolumeMountRequest>& mounts, api::PodTemplateSpec& pod);

struct VolumeStepOutcome {
  std::map<std::string, std::string> dirs;  // claimName → host directory (attached)
  std::vector<std::string> keys;            // "namespace/name" of each attached Volume
  std::optional<Failure> failure;           // not terminal when the volume may still come
};

// Creates the sandbox's claim-template Volumes, then attaches every persistentVolumeClaim
// volume of `pod` (after AddPersistentVolumes) to sandbox `id`. On a failure nothing stays
// attached.
VolumeStepOutcome AttachSandboxVolumes(VolumeAgent& volumes, const api::Object& sandbox,
                                       const std::string& id,
                                       const std::vector<api::VolumeClaimTemplate>& claims,
                                       const api::PodTemplateSpec& pod);

}  // namespace warren::node
