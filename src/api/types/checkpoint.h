#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"

namespace warren::api {

// On a Checkpoint: the node that captured it, whose stores hold its images (file system, and
// memory where kept). Only that node deletes them, and sandboxes started from it are placed
// there.
inline constexpr const char* kCheckpointNodeAnnotation = "warren.dev/checkpoint-node";

// On a Checkpoint made for one API request that waits for it (a fork): a capture that a
// restart of the node agent cut short fails, saying so, instead of being made again. In one
// process the request died with the agent; capturing again would stop and restore the
// sandbox's processes (cutting its open command streams) for a checkpoint nobody reads. Any
// value but "" counts.
inline constexpr const char* kCheckpointForRequestAnnotation = "warren.dev/checkpoint-for-request";

// Checkpoint (agents.kruise.io/v1alpha1, cp): a saved sandbox state that clones restore from.
struct CheckpointSpec {
  WARREN_API_STRUCT;
  std::string sandbox_name;
  std::string pod_name;
  std::optional<bool> keep_running;              // default true
  std::vector<std::string> persistent_contents;  // podInfo, memory, filesystem
  std::string ttl_after_finished;                // "30s", "30m", "30d"

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("sandboxName", s.sandbox_name);
    v("podName", s.pod_name);
    v("keepRunning", s.keep_running);
    v("persistentContents", s.persistent_contents);
    v("ttlAfterFinished", s.ttl_after_finished);
  }
};

struct CheckpointStatus {
  WARREN_API_STRUCT;
  int64_t observed_generation = 0;
  std::string phase;  // Pending, Creating, Succeeded, Failed, Terminating
  std::string message;
  std::string checkpoint_id;
  std::optional<base::WallTime> completion_time;
  RawJson pod_template_delta;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("observedGeneration", s.observed_generation);
    v("phase", s.phase);
    v("message", s.message);
    v("checkpointId", s.checkpoint_id);
    v("completionTime", s.completion_time);
    v("podTemplateDelta", s.pod_template_delta);
  }
};

}  // namespace warren::api
