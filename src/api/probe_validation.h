#pragma once

// Validation of probes (api/types/probe.h): a container's startupProbe, readinessProbe and
// livenessProbe, and a Sandbox's spec.probes and spec.autoPausePolicy. Every error names its
// field ("spec.template.spec.containers[0].readinessProbe.periodSeconds: ...").

#include <string_view>

#include "api/object.h"
#include "api/types/pod_template.h"
#include "api/types/probe.h"
#include "api/validation.h"
#include "base/status.h"

namespace warren::api {

// The three probes of container `c`, which sits at `path`.
void ValidateContainerProbes(const Container& c, std::string_view path, FieldErrors& errors);

// spec.probes and spec.autoPausePolicy of a Sandbox being admitted. `pod` is its inline
// template when it has one (containerName and named ports are checked against it; with a
// templateRef the node checks them and reports ProbeValid).
void ValidateSandboxProbes(const SandboxProbeSpec& spec, const PodSpec* pod, FieldErrors& errors);

// Decodes and validates the probe fields of a Sandbox object: InvalidArgument naming each field.
Status AdmitSandboxProbes(const Object& object);

}  // namespace warren::api
