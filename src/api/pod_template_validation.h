#pragma once

#include <string_view>

#include "api/types/pod_template.h"
#include "api/validation.h"

namespace warren::api {

// Fills Kubernetes defaults a template relies on: container port protocol TCP, resource
// requests equal to limits where only limits are given.
void DefaultPodTemplate(PodTemplateSpec& tmpl);

// Validates the template subset Warren runs (see api/types/pod_template.h). `path` is where the
// template sits ("spec.template").
void ValidatePodTemplate(const PodTemplateSpec& tmpl, std::string_view path, FieldErrors& errors);

}  // namespace warren::api
