#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"

namespace warren::api {

// ImagePullJob (apps.kruise.io/v1alpha1, ipj): pulls an image onto the selected nodes ahead of
// the sandboxes that will use it (openkruise-core.md §2). Warren has no NodeImage: each node's
// progress is kept in the job's own status (`status.nodes`), written by that node.
struct ImagePullJobSelector {
  WARREN_API_STRUCT;
  std::vector<std::string> names;  // node names; not with the label fields
  std::map<std::string, std::string> match_labels;
  std::vector<LabelSelectorRequirementSpec> match_expressions;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("names", s.names);
    v("matchLabels", s.match_labels);
    v("matchExpressions", s.match_expressions);
  }
};

struct ImagePullPolicySpec {
  WARREN_API_STRUCT;
  std::optional<int32_t> timeout_seconds;  // per attempt; default 600
  std::optional<int32_t> backoff_limit;    // retries after the first attempt; default 3

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("timeoutSeconds", s.timeout_seconds);
    v("backoffLimit", s.backoff_limit);
  }
};

struct CompletionPolicySpec {
  WARREN_API_STRUCT;
  std::string type;  // Always (default) | Never
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int32_t> ttl_seconds_after_finished;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("type", s.type);
    v("activeDeadlineSeconds", s.active_deadline_seconds);
    v("ttlSecondsAfterFinished", s.ttl_seconds_after_finished);
  }
};

struct ImagePullJobSpec {
  WARREN_API_STRUCT;
  std::string image;
  std::vector<std::string> pull_secrets;  // refused: pulls are anonymous
  std::optional<ImagePullJobSelector> selector;
  std::optional<LabelSelectorSpec> pod_selector;  // over the job namespace's Sandboxes
  std::optional<IntOrString> parallelism;         // nodes pulling at once; default 1, 0 pauses
  ImagePullPolicySpec pull_policy;
  CompletionPolicySpec completion_policy;
  std::string image_pull_policy;  // IfNotPresent (default) | Always

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("image", s.image);
    v("pullSecrets", s.pull_secrets);
    v("selector", s.selector);
    v("podSelector", s.pod_selector);
    v("parallelism", s.parallelism);
    v("pullPolicy", s.pull_policy);
    v("completionPolicy", s.completion_policy);
    v("imagePullPolicy", s.image_pull_policy);
  }
};

// One node's pull, written by that node.
struct ImagePullNodeStatus {
  WARREN_API_STRUCT;
  std::string name;
  std::string phase;     // Pulling | Succeeded | Failed
  int32_t progress = 0;  // 0–100
  int64_t bytes_done = 0;
  int64_t bytes_total = 0;
  int32_t attempts = 0;
  std::string image_id;  // the manifest digest pulled
  std::string message;
  std::optional<base::WallTime> start_time;
  std::optional<base::WallTime> completion_time;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
    v("phase", s.phase);
    v("progress", s.progress);
    v("bytesDone", s.bytes_done);
    v("bytesTotal", s.bytes_total);
    v("attempts", s.attempts);
    v("imageID", s.image_id);
    v("message", s.message);
    v("startTime", s.start_time);
    v("completionTime", s.completion_time);
  }
};

struct ImagePullJobStatus {
  WARREN_API_STRUCT;
  std::optional<base::WallTime> start_time;
  std::optional<base::WallTime> completion_time;
  int32_t desired = 0;
  int32_t active = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  std::vector<std::string> failed_nodes;
  std::string message;
  int32_t progress = 0;  // 0–100 over the target nodes (a finished node counts whole)
  std::vector<std::string> target_nodes;  // the nodes the job selected, sorted
  std::vector<ImagePullNodeStatus> nodes;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("startTime", s.start_time);
    v("completionTime", s.completion_time);
    v("desired", s.desired);
    v("active", s.active);
    v("succeeded", s.succeeded);
    v("failed", s.failed);
    v("failedNodes", s.failed_nodes);
    v("message", s.message);
    v("progress", s.progress);
    v("targetNodes", s.target_nodes);
    v("nodes", s.nodes);
  }
};

}  // namespace warren::api
