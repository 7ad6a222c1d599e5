#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/object.h"
#include "api/types/pod_template.h"
#include "api/types/volume.h"
#include "api/volume_mounts.h"
#include "base/result.h"
#include "node/failure.h"
#include "node/volume_agent.h"

namespace warren::node {

using api::VolumeMountRequest;

// Adds to `pod` what a sandbox mounts beyond its template's own volumes (pure):
//   - each claim template without a pod volume of its name becomes one, persistentVolumeClaim
//     "<claim>-<sandbox name>";
//   - each E2B mount becomes a volume "e2b.volume.<i>" (a name no template volume can have:
//     those are DNS labels) mounted at its path in the first container.
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
