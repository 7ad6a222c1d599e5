#pragma once

#include "obs/operation_metrics.h"
#include "obs/sandbox_metric_help.h"

namespace warren::node {

// The reference's controller-side Sandbox histograms and counters (openkruise-agents.md §5.1,
// source="k8s"), recorded by the node agent: in Warren it is the controller that makes a
// Sandbox's phase true, so it times the work where it happens.
//   sandbox_creation_duration_seconds / sandbox_creation_total   creationTimestamp → Running+Ready
//   sandbox_pause_duration_seconds    / sandbox_pause_total      the freeze (or stop) + status
//   sandbox_resume_duration_seconds   / sandbox_resume_total     the thaw (or boot) → Ready
//   sandbox_inplace_update_duration_seconds / _total             a template change → Ready on it
//   sandbox_deletion_duration_seconds                            the teardown → finalizer removed
// Thread-safe.
struct LifecycleMetrics {
  obs::OperationMetrics creation{{
      .duration = "sandbox_creation_duration_seconds",
      .duration_help = "Time from a Sandbox's creation to Running and Ready.",
      .total = "sandbox_creation_total",
      .total_help = "Sandboxes made (success) or failed for good while being made (failure).",
      .const_labels = {{"source", "k8s"}},
  }};
  obs::OperationMetrics pause{{
      .duration = "sandbox_pause_duration_seconds",
      .duration_help = obs::help::kPauseDuration,
      .total = "sandbox_pause_total",
      .total_help = "Pauses done by the node, by result.",
      .const_labels = {{"source", "k8s"}},
  }};
  obs::OperationMetrics resume{{
      .duration = "sandbox_resume_duration_seconds",
      .duration_help = obs::help::kResumeDuration,
      .total = "sandbox_resume_total",
      .total_help = "Resumes done by the node, by result.",
      .const_labels = {{"source", "k8s"}},
  }};
  obs::OperationMetrics inplace_update{{
      .duration = "sandbox_inplace_update_duration_seconds",
      .duration_help =
          "Time the node takes to update a running sandbox in place, hooks included, until it is "
          "Ready on its new template.",
      .total = "sandbox_inplace_update_total",
      .total_help = "In-place updates the node finished (success) or gave up (failure).",
      .const_labels = {{"source", "k8s"}},
  }};
  obs::OperationMetrics deletion{{
      .duration = "sandbox_deletion_duration_seconds",
      .duration_help = "Time the node takes to tear a deleted sandbox down.",
      .const_labels = {{"source", "k8s"}},
  }};
};

}  // namespace warren::node
