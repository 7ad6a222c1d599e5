#pragma once

#include <string_view>

#include "api/types/pod_template.h"
#include "api/types/volume.h"
#include "api/validation.h"

namespace warren::api {

// Fills Kubernetes defaults a template relies on: container port protocol TCP, resource
// requests equal to limits where only limits are given.
void DefaultPodTemplate(PodTemplateSpec& tmpl);

// Validates the template subset Warren runs (see api/types/pod_template.h). `path` is where the
// template sits ("spec.template"); `claim_names` are the volumeClaimTemplates beside it, which
// volumeMounts may name as they name the template's own volumes.
void ValidatePodTemplate(const PodTemplateSpec& tmpl, std::string_view path, FieldErrors& errors,
                         const std::vector<VolumeClaimTemplate>& claims = {});

}  // namespace warren::api
