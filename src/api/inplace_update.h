#pragma once

// When a change to a sandbox's pod template can be made to the running sandbox (OpenKruise's
// in-place update rules, ../shared/reference/openkruise-core.md §1.2, agents §2.13), shared by
// the node agent (which makes the change) and the controllers that ask for it (SandboxUpdateOps,
// claims with inplaceUpdate): both must agree on what qualifies and on the revision hash.

#include <cstdint>
#include <string>
#include <string_view>

#include "api/types/pod_template.h"

namespace warren::api {

// FNV-32a, as the reference hashes templates (SandboxSet revisions, updateRevision).
uint32_t Fnv32a(std::string_view data);

// A Sandbox's status.updateRevision: the template it runs, as 8 hex digits (FNV-32a of its
// canonical JSON). Equal templates hash equal whatever the order they were written in.
std::string PodTemplateHash(const PodTemplateSpec& pod_template);

// What differs between the template a sandbox runs (`from`) and the one it should (`to`).
struct TemplateChange {
  bool image = false;      // some container's image (the sandbox restarts on the new one)
  bool resources = false;  // some container's cpu or memory request or limit (live, no restart)
  bool metadata = false;   // template labels or annotations (recorded only)
  // Empty when every difference qualifies for an in-place update; otherwise the first one that
  // does not, as a path and why ("spec.containers[0].command changed"): the sandbox is recreated.
  std::string not_in_place;

  bool in_place() const { return not_in_place.empty(); }
  bool any() const { return image || resources || metadata || !not_in_place.empty(); }
};
TemplateChange ClassifyTemplateChange(const PodTemplateSpec& from, const PodTemplateSpec& to);

}  // namespace warren::api
