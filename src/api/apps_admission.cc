// Defaulting and validation of the OpenKruise core kinds Warren serves (apps.kruise.io/v1alpha1):
// ImagePullJob. The rules are Kruise's webhook's (openkruise-core.md §2.1) with two choices of
// our own: pulls are anonymous, so pullSecrets is refused; and what decides the pull (image,
// selectors, policies) is immutable, since an edit could not reach nodes that already pulled
// (Kruise's #2221).

#include <fmt/format.h>

#include <set>

#include "api/admission.h"
#include "api/typed_codec.h"
#include "api/types/image_pull_job.h"
#include "api/validation.h"
#include "base/strings.h"

namespace warren::api {
namespace {

constexpr size_t kMaxImageBytes = 1024;

void CheckSelector(const LabelSelectorSpec& spec, const std::string& path, FieldErrors& errors) {
  if (auto s = ToLabelSelector(spec, path); !s.ok())
    errors.Add(path, std::string(s.status().message()));
}

}  // namespace

Status AdmitImagePullJob(Object& object) {
  ASSIGN_OR_RETURN(ImagePullJobSpec spec, DecodeSpec<ImagePullJobSpec>(object));
  FieldErrors errors;
  if (spec.image.empty()) {
    errors.Required("spec.image");
  } else if (spec.image.size() > kMaxImageBytes ||
             spec.image.find_first_of(" \t\r\n\v\f") != std::string::npos) {
    errors.Add("spec.image",
               "Invalid value: must be an image reference (at most 1024 bytes, no "
               "spaces)");
  }
  if (!spec.pull_secrets.empty()) {
    errors.Add("spec.pullSecrets",
               "Forbidden: Warren pulls anonymously; registries are listed "
               "with the node's --allowed-registries");
  }
  if (spec.selector) {
    const auto& sel = *spec.selector;
    std::set<std::string> seen;
    for (const auto& n : sel.names) {
      if (!seen.insert(n).second) {
        errors.Add("spec.selector.names", fmt::format("Duplicate value: \"{}\"", n));
      }
    }
    if (!sel.names.empty() && (!sel.match_labels.empty() || !sel.match_expressions.empty())) {
      errors.Add("spec.selector",
                 "Invalid value: names may not be combined with matchLabels or "
                 "matchExpressions");
    }
    CheckSelector({sel.match_labels, sel.match_expressions}, "spec.selector", errors);
    if (spec.pod_selector) {
      errors.Add("spec.podSelector", "Invalid value: may not be combined with spec.selector");
    }
  }
  if (spec.pod_selector) CheckSelector(*spec.pod_selector, "spec.podSelector", errors);
  if (!spec.parallelism) spec.parallelism = IntOrString::Int(1);
  if (spec.parallelism->is_string) {
    auto n = base::ParseInt64(spec.parallelism->str_value);
    if (!n) {
      errors.Add("spec.parallelism", fmt::format("Invalid value: \"{}\": must be a whole number "
                                                 "of nodes (percentages are not supported)",
                                                 spec.parallelism->str_value));
    } else {
      spec.parallelism = IntOrString::Int(*n);
    }
  }
  if (!spec.parallelism->is_string && spec.parallelism->int_value < 0) {
    errors.Add("spec.parallelism", "must be >= 0 (0 pauses the job)");
  }
  auto& pull = spec.pull_policy;
  if (!pull.timeout_seconds) pull.timeout_seconds = 600;
  if (!pull.backoff_limit) pull.backoff_limit = 3;
  if (*pull.timeout_seconds < 1) errors.Add("spec.pullPolicy.timeoutSeconds", "must be >= 1");
  if (*pull.backoff_limit < 0) errors.Add("spec.pullPolicy.backoffLimit", "must be >= 0");
  auto& done = spec.completion_policy;
  if (done.type.empty()) done.type = "Always";
  if (done.type != "Always" && done.type != "Never") {
    errors.Unsupported("spec.completionPolicy.type", done.type, {"Always", "Never"});
  }
  if (done.type == "Never" && (done.active_deadline_seconds || done.ttl_seconds_after_finished)) {
    errors.Add("spec.completionPolicy",
               "Forbidden: activeDeadlineSeconds and "
               "ttlSecondsAfterFinished are only for type Always");
  }
  if (done.active_deadline_seconds && *done.active_deadline_seconds < *pull.timeout_seconds) {
    errors.Add(
        "spec.completionPolicy.activeDeadlineSeconds",
        fmt::format("must be >= spec.pullPolicy.timeoutSeconds ({})", *pull.timeout_seconds));
  }
  if (done.ttl_seconds_after_finished && *done.ttl_seconds_after_finished < 0) {
    errors.Add("spec.completionPolicy.ttlSecondsAfterFinished", "must be >= 0");
  }
  if (spec.image_pull_policy.empty()) spec.image_pull_policy = "IfNotPresent";
  if (spec.image_pull_policy != "IfNotPresent" && spec.image_pull_policy != "Always") {
    errors.Unsupported("spec.imagePullPolicy", spec.image_pull_policy, {"Always", "IfNotPresent"});
  }
  RETURN_IF_ERROR(errors.ToStatus());
  EncodeSpec(spec, object);
  return Status::Ok();
}

Status AdmitImagePullJobUpdate(const Object& old_object, const Object& new_object) {
  const Json& a = old_object.spec();
  const Json& b = new_object.spec();
  FieldErrors errors;
  auto field = [](const Json& spec, const char* name) {
    return spec.is_object() && spec.contains(name) ? spec.at(name) : Json();
  };
  for (const char* name : {"image", "selector", "podSelector", "pullPolicy", "imagePullPolicy"}) {
    if (field(a, name) != field(b, name)) {
      errors.Add(fmt::format("spec.{}", name), "Invalid value: field is immutable");
    }
  }
  if (field(field(a, "completionPolicy"), "type") != field(field(b, "completionPolicy"), "type")) {
    errors.Add("spec.completionPolicy.type", "Invalid value: field is immutable");
  }
  return errors.ToStatus();
}

Status AdmitImagePullJobStatus(Object& object) {
  return DecodeStatus<ImagePullJobStatus>(object).status();
}

}  // namespace warren::api
