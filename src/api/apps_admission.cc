// Defaulting and validation of the OpenKruise core kinds Warren serves (apps.kruise.io/v1alpha1):
// ImagePullJob and AdvancedCronJob. The rules are Kruise's webhook's (openkruise-core.md §2.1) with
// two choices of our own: pulls are anonymous, so pullSecrets is refused; and what decides the pull
// (image, selectors, policies) is immutable, since an edit could not reach nodes that already
// pulled (Kruise's #2221).

#include <fmt/format.h>

#include <set>

#include "api/admission.h"
#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/advanced_cron_job.h"
#include "api/types/image_pull_job.h"
#include "api/validation.h"
#include "base/cron_schedule.h"
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

namespace {

constexpr int64_t kMaxCronPullDeadline = 86400;

// The ImagePullJob a template makes, admitted by the job's own rules; errors under `path`.
void CheckImagePullJobTemplate(ImagePullJobTemplate& tpl, const std::string& path,
                               FieldErrors& errors) {
  if (!tpl.spec.completion_policy.type.empty() && tpl.spec.completion_policy.type != "Always") {
    errors.Add(path + ".spec.completionPolicy.type",
               "Invalid value: a scheduled job must complete (Always)");
  }
  if (tpl.spec.completion_policy.ttl_seconds_after_finished) {
    errors.Add(path + ".spec.completionPolicy.ttlSecondsAfterFinished",
               "Forbidden: the history limits remove finished jobs");
  }
  if (tpl.spec.completion_policy.active_deadline_seconds &&
      *tpl.spec.completion_policy.active_deadline_seconds > kMaxCronPullDeadline) {
    errors.Add(path + ".spec.completionPolicy.activeDeadlineSeconds", "must be <= 86400");
  }
  Object job;
  job.api_version = kAppsApiVersion;
  job.kind = "ImagePullJob";
  EncodeSpec(tpl.spec, job);
  Status s = AdmitImagePullJob(job);
  if (!s.ok()) {
    // "spec.image: Required value; spec.x: ..." → under the template's path.
    std::string message(s.message());
    for (size_t at = 0; (at = message.find("spec.", at)) != std::string::npos;
         at += path.size() + 6) {
      if (at == 0 || message[at - 1] == ' ') message.insert(at, path + ".");
    }
    errors.Add(path, message);
    return;
  }
  auto defaulted = DecodeSpec<ImagePullJobSpec>(job);
  if (defaulted.ok()) tpl.spec = std::move(defaulted).value();
}

}  // namespace

Status AdmitAdvancedCronJob(Object& object) {
  ASSIGN_OR_RETURN(AdvancedCronJobSpec spec, DecodeSpec<AdvancedCronJobSpec>(object));
  FieldErrors errors;
  if (object.metadata.name.size() > 52) {
    // Children are named <name>-<unix seconds>: room for the suffix within 63.
    errors.Add("metadata.name", "must be no more than 52 characters");
  }
  if (spec.schedule.empty()) {
    errors.Required("spec.schedule");
  } else if (spec.time_zone && (spec.time_zone->empty() || *spec.time_zone == "Local")) {
    errors.Add("spec.timeZone",
               fmt::format("Invalid value: \"{}\": name an IANA time zone", *spec.time_zone));
  } else if (auto parsed = base::CronSchedule::Parse(spec.schedule, spec.time_zone.value_or(""));
             !parsed.ok()) {
    errors.Add(spec.time_zone && parsed.status().message().find("zone") != std::string::npos
                   ? "spec.timeZone"
                   : "spec.schedule",
               std::string(parsed.status().message()));
  }
  if (spec.starting_deadline_seconds && *spec.starting_deadline_seconds < 0) {
    errors.Add("spec.startingDeadlineSeconds", "must be >= 0");
  }
  if (!spec.successful_jobs_history_limit) spec.successful_jobs_history_limit = 3;
  if (!spec.failed_jobs_history_limit) spec.failed_jobs_history_limit = 1;
  if (*spec.successful_jobs_history_limit < 0) {
    errors.Add("spec.successfulJobsHistoryLimit", "must be >= 0");
  }
  if (*spec.failed_jobs_history_limit < 0)
    errors.Add("spec.failedJobsHistoryLimit", "must be >= 0");
  auto& tpl = spec.template_;
  const int templates =
      (tpl.image_pull_job_template ? 1 : 0) + (tpl.sandbox_set_replicas_template ? 1 : 0);
  if (templates != 1) {
    errors.Add("spec.template",
               "Invalid value: exactly one of imagePullJobTemplate and "
               "sandboxSetReplicasTemplate must be set");
  }
  if (spec.concurrency_policy.empty()) {
    spec.concurrency_policy = tpl.image_pull_job_template ? "Replace" : "Allow";
  }
  if (spec.concurrency_policy != "Allow" && spec.concurrency_policy != "Forbid" &&
      spec.concurrency_policy != "Replace") {
    errors.Unsupported("spec.concurrencyPolicy", spec.concurrency_policy,
                       {"Allow", "Forbid", "Replace"});
  } else if (tpl.image_pull_job_template && spec.concurrency_policy == "Allow") {
    errors.Add("spec.concurrencyPolicy",
               "Invalid value: \"Allow\": an image pull template takes Forbid or Replace");
  }
  if (tpl.image_pull_job_template) {
    CheckImagePullJobTemplate(*tpl.image_pull_job_template, "spec.template.imagePullJobTemplate",
                              errors);
  }
  if (tpl.sandbox_set_replicas_template) {
    const auto& r = *tpl.sandbox_set_replicas_template;
    if (r.name.empty()) errors.Required("spec.template.sandboxSetReplicasTemplate.name");
    if (!r.replicas) {
      errors.Required("spec.template.sandboxSetReplicasTemplate.replicas");
    } else if (*r.replicas < 0) {
      errors.Add("spec.template.sandboxSetReplicasTemplate.replicas", "must be >= 0");
    }
  }
  RETURN_IF_ERROR(errors.ToStatus());
  EncodeSpec(spec, object);
  return Status::Ok();
}

Status AdmitAdvancedCronJobStatus(Object& object) {
  return DecodeStatus<AdvancedCronJobStatus>(object).status();
}

}  // namespace warren::api
