#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"
#include "api/types/image_pull_job.h"
#include "api/types/pod_template.h"

namespace warren::api {

// AdvancedCronJob (apps.kruise.io/v1alpha1, acj): runs a template on a cron schedule
// (openkruise-core.md §3). Warren's templates are the two a sandbox platform prewarms with: an
// ImagePullJob, and a SandboxSet's replicas (a pool sized for the hours it is busy).
struct ImagePullJobTemplate {
  WARREN_API_STRUCT;
  TemplateMeta metadata;
  ImagePullJobSpec spec;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("metadata", s.metadata);
    v("spec", s.spec);
  }
};

// At each firing, the SandboxSet `name` of the job's namespace is scaled to `replicas`.
struct SandboxSetReplicasTemplate {
  WARREN_API_STRUCT;
  std::string name;
  std::optional<int32_t> replicas;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
    v("replicas", s.replicas);
  }
};

struct CronJobTemplate {
  WARREN_API_STRUCT;
  std::optional<ImagePullJobTemplate> image_pull_job_template;
  std::optional<SandboxSetReplicasTemplate> sandbox_set_replicas_template;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("imagePullJobTemplate", s.image_pull_job_template);
    v("sandboxSetReplicasTemplate", s.sandbox_set_replicas_template);
  }
};

struct AdvancedCronJobSpec {
  WARREN_API_STRUCT;
  std::string schedule;  // 5-field cron, @descriptors, optional TZ= prefix (base/cron_schedule.h)
  std::optional<std::string> time_zone;  // IANA name; default UTC
  std::optional<int64_t> starting_deadline_seconds;
  std::string concurrency_policy;  // Allow | Forbid | Replace
  bool paused = false;
  std::optional<int32_t> successful_jobs_history_limit;  // default 3
  std::optional<int32_t> failed_jobs_history_limit;      // default 1
  CronJobTemplate template_;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("schedule", s.schedule);
    v("timeZone", s.time_zone);
    v("startingDeadlineSeconds", s.starting_deadline_seconds);
    v("concurrencyPolicy", s.concurrency_policy);
    v("paused", s.paused);
    v("successfulJobsHistoryLimit", s.successful_jobs_history_limit);
    v("failedJobsHistoryLimit", s.failed_jobs_history_limit);
    v("template", s.template_);
  }
};

struct AdvancedCronJobStatus {
  WARREN_API_STRUCT;
  std::string type;                 // ImagePullJob | SandboxSetReplicas
  std::vector<std::string> active;  // unfinished children, by name
  // The last firing acted on, kept here rather than rebuilt from surviving children, so a child
  // deleted by a history limit never makes its slot fire again (Kruise's #862, #2213).
  std::optional<base::WallTime> last_schedule_time;
  std::string message;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("type", s.type);
    v("active", s.active);
    v("lastScheduleTime", s.last_schedule_time);
    v("message", s.message);
  }
};

}  // namespace warren::api
