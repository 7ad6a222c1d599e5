#include "node/volume_step.h"

#include <fmt/format.h>

#include "node/reasons.h"

namespace warren::node {

void AddPersistentVolumes(const std::string& sandbox_name,
                          const std::vector<api::VolumeClaimTemplate>& claims,
                          const std::vector<VolumeMountRequest>& mounts,
                          api::PodTemplateSpec& pod) {
  auto has_volume = [&](const std::string& name) {
    for (const api::Volume& v : pod.spec.volumes) {
      if (v.name == name) return true;
    }
    return false;
  };
  for (const api::VolumeClaimTemplate& c : claims) {
    if (has_volume(c.metadata.name)) continue;
    api::Volume v;
    v.name = c.metadata.name;
    v.persistent_volume_claim = api::PersistentVolumeClaimVolumeSource{
        api::ClaimVolumeName(c.metadata.name, sandbox_name), false};
    pod.spec.volumes.push_back(std::move(v));
  }
  if (pod.spec.containers.empty()) return;
  for (size_t i = 0; i < mounts.size(); ++i) {
    api::Volume v;
    v.name = fmt::format("e2b.volume.{}", i);
    v.persistent_volume_claim = api::PersistentVolumeClaimVolumeSource{mounts[i].name, false};
    api::VolumeMount m;
    m.name = v.name;
    m.mount_path = mounts[i].path;
    pod.spec.volumes.push_back(std::move(v));
    pod.spec.containers.front().volume_mounts.push_back(std::move(m));
  }
}

VolumeStepOutcome AttachSandboxVolumes(VolumeAgent& volumes, const api::Object& sandbox,
                                       const std::string& id,
                                       const std::vector<api::VolumeClaimTemplate>& claims,
                                       const api::PodTemplateSpec& pod) {
  VolumeStepOutcome out;
  // What an earlier pass of this create attached (a changed template or annotation may name
  // other volumes now); no running sandbox holds this id yet.
  volumes.Detach(id);
  if (!claims.empty()) {
    if (Status s = volumes.EnsureClaimVolumes(sandbox, claims); !s.ok()) {
      out.failure = Failure{reasons::kInvalidVolume, s.message(), /*terminal=*/
                            s.code() == StatusCode::kInvalidArgument};
      return out;
    }
  }
  for (const api::Volume& v : pod.spec.volumes) {
    if (!v.persistent_volume_claim) continue;
    const std::string& claim = v.persistent_volume_claim->claim_name;
    if (out.dirs.count(claim)) continue;
    auto dir = volumes.Attach(sandbox.metadata.namespace_, claim, id);
    if (!dir.ok()) {
      volumes.Detach(id);
      out.dirs.clear();
      out.keys.clear();
      // It may yet be made, or finish deleting and be made again: the sandbox waits (Pending,
      // with an Event), as a pod waits for its claim.
      out.failure = Failure{dir.status().code() == StatusCode::kNotFound ? reasons::kVolumeNotFound
                                                                         : reasons::kVolumeNotReady,
                            fmt::format("volume \"{}\": {}", v.name, dir.status().message()),
                            /*terminal=*/false};
      return out;
    }
    out.dirs[claim] = *dir;
    out.keys.push_back(sandbox.metadata.namespace_ + "/" + claim);
  }
  return out;
}

}  // namespace warren::node
