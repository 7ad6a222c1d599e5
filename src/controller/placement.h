#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/object.h"
#include "api/types/pod_template.h"

namespace warren::controller {

// Where a Sandbox goes in a cluster: the scheduler's decision as values (no store, no clock),
// like node/sandbox_plan.h's PlanSandbox. SchedulerController (scheduler_controller.h) feeds it
// from its caches and writes the answer.

// Strings of the scheduler's status and Events (Kubernetes' for a pod).
namespace scheduling {
inline constexpr const char* kConditionPodScheduled = "PodScheduled";
inline constexpr const char* kReasonScheduled = "Scheduled";                // condition True; Event
inline constexpr const char* kReasonUnschedulable = "Unschedulable";        // condition False
inline constexpr const char* kReasonFailedScheduling = "FailedScheduling";  // Event
}  // namespace scheduling

// What one Sandbox asks of a node.
struct SandboxDemand {
  // What the main container reserves (api::RequestsOf: requests, else limits, else nothing,
  // as Kubernetes schedules; the node's `sandboxes` capacity bounds the rest).
  int64_t cpu_millicores = 0;
  int64_t memory_bytes = 0;
  std::string runtime_class;  // template runtimeClassName; "" = whatever the node's default is
  std::string image;          // the main container's image
  std::string pool;           // "<namespace>/<pool>" of a warm pool's sandbox; "" = none
  // The only node it may run on: a sandbox started from a checkpoint runs where the
  // checkpoint's images are (api::kCheckpointNodeAnnotation); "" = any.
  std::string node;
};

// The demand of `sandbox` running `pod` (its resolved template; null when it cannot be
// resolved: the defaults, no class, no image). The pool is the agents.kruise.io/sandbox-pool
// label, else the name of the SandboxSet that controls it.
SandboxDemand DemandOf(const api::Object& sandbox, const api::PodTemplateSpec* pod);

// What placement reads of a Node object.
struct NodeFacts {
  std::string name;
  bool ready = false;          // condition Ready is True
  bool unschedulable = false;  // spec.unschedulable (cordoned)
  // status.allocatable, else status.capacity; nullopt = not stated (not checked).
  std::optional<int64_t> cpu_millicores;
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> sandboxes;          // "sandboxes" (or Kubernetes' "pods")
  std::vector<std::string> runtime_classes;  // empty = native only
  std::set<std::string> images;              // every name of every image it holds
};
NodeFacts NodeFactsOf(const api::Object& node);

// A Sandbox that holds a node's resources: placed there and not Succeeded or Failed.
struct PlacedSandbox {
  std::string node;
  SandboxDemand demand;
};

// Either the chosen node or, when none fits, why: Kubernetes' aggregate message
// ("0/3 nodes are available: 2 Insufficient memory, 1 node(s) were unschedulable.").
struct PlacementDecision {
  std::string node;     // empty when nothing fits
  std::string message;  // when nothing fits
};

// Places one sandbox.
// Filter (a node failing one step is counted under that step's reasons only, in this order):
//   not the sandbox's `node`         "node(s) did not hold the checkpoint it starts from"
//   not Ready                        "node(s) were not ready"
//   spec.unschedulable               "node(s) were unschedulable"
//   runtime class not offered        "node(s) did not offer runtime class \"<class>\""
//   cpu / memory / sandbox count     "Insufficient cpu", "Insufficient memory",
//                                    "Too many sandboxes" (each that applies)
// where what is free is what the node states less what `placed` sandboxes on it take.
// Score, in order: the node holds the sandbox's image; fewest sandboxes of the same pool on it
// (spreading a pool); least allocated after placing (mean of the cpu and memory fractions);
// then the name, so the answer is deterministic.
// The message lists reasons by count, most first, then by text.
PlacementDecision Place(const SandboxDemand& sandbox, const std::vector<NodeFacts>& nodes,
                        const std::vector<PlacedSandbox>& placed);

}  // namespace warren::controller
