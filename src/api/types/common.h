#pragma once

// Typed views shared by several kinds. These are plain domain structs (no JSON): api/typed_codec.h
// decodes them from an object's document and encodes them back into it, leaving fields they do
// not name untouched. Each struct lists its wire fields once, in Fields(), which drives both
// directions. Optional fields are std::optional when absence differs from the zero value.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/int_or_string.h"
#include "api/label_selector.h"
#include "api/quantity.h"
#include "base/clock.h"

namespace warren::api {

// Marks a struct as having a Fields() list (see typed_codec.h).
#define WARREN_API_STRUCT using IsApiStruct = void

// metav1.Duration: on the wire a Go duration string ("1m0s").
struct Duration {
  std::chrono::nanoseconds value{0};
  friend bool operator==(const Duration&, const Duration&) = default;
};

// A JSON value kept as its serialised text (strategic-merge patches, template deltas): the
// domain layer carries it without interpreting it.
struct RawJson {
  std::string text;  // compact JSON; empty = absent
  friend bool operator==(const RawJson&, const RawJson&) = default;
};

// metav1.Condition.
struct Condition {
  WARREN_API_STRUCT;
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::optional<base::WallTime> last_transition_time;
  int64_t observed_generation = 0;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("type", s.type);
    v("status", s.status);
    v("observedGeneration", s.observed_generation);
    v("lastTransitionTime", s.last_transition_time);
    v("reason", s.reason);
    v("message", s.message);
  }
};

// Sets `condition` in `conditions` (matched by type). lastTransitionTime changes only when the
// status changes, as Kubernetes' meta.SetStatusCondition does. Returns true when anything
// changed.
bool SetCondition(std::vector<Condition>& conditions, Condition condition, base::WallTime now);
const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type);
bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type);

// metav1.LabelSelectorRequirement and metav1.LabelSelector.
struct LabelSelectorRequirementSpec {
  WARREN_API_STRUCT;
  std::string key;
  std::string op;  // "operator": In, NotIn, Exists, DoesNotExist
  std::vector<std::string> values;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("key", s.key);
    v("operator", s.op);
    v("values", s.values);
  }
};

struct LabelSelectorSpec {
  WARREN_API_STRUCT;
  std::map<std::string, std::string> match_labels;
  std::vector<LabelSelectorRequirementSpec> match_expressions;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("matchLabels", s.match_labels);
    v("matchExpressions", s.match_expressions);
  }
};

// The selector `spec` states; InvalidArgument naming what is wrong under `path`.
Result<LabelSelector> ToLabelSelector(const LabelSelectorSpec& spec, std::string_view path);

// A reference to a SandboxTemplate (Sandbox/SandboxSet spec.templateRef).
struct TemplateRef {
  WARREN_API_STRUCT;
  std::string name;
  std::string kind;
  std::string api_version;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("name", s.name);
  }
};

struct HibernateStrategy {
  WARREN_API_STRUCT;
  std::string type;  // Snapshot

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("type", s.type);
  }
};

struct PauseStrategy {
  WARREN_API_STRUCT;
  std::string type;  // Stop | Hibernate
  std::optional<HibernateStrategy> hibernate_strategy;
  // Warren's: pause a running sandbox after this many seconds with no traffic through the
  // gateway (and none open), the pause this strategy says; the next request wakes it. 0 = never.
  int64_t idle_seconds = 0;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("type", s.type);
    v("hibernateStrategy", s.hibernate_strategy);
    v("idleSeconds", s.idle_seconds);
  }
};

// spec.runtimes[]: names of in-sandbox runtimes to provide (csi, agent-runtime, traffic-proxy).
struct RuntimeRef {
  WARREN_API_STRUCT;
  std::string name;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
  }
};

struct ExecAction {
  WARREN_API_STRUCT;
  std::vector<std::string> command;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("command", s.command);
  }
};

// A hook run inside the sandbox around an upgrade.
struct UpgradeAction {
  WARREN_API_STRUCT;
  std::optional<ExecAction> exec;
  std::optional<int32_t> timeout_seconds;  // default 60

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("exec", s.exec);
    v("timeoutSeconds", s.timeout_seconds);
  }
};

struct SandboxLifecycle {
  WARREN_API_STRUCT;
  std::optional<UpgradeAction> pre_upgrade;
  std::optional<UpgradeAction> post_upgrade;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("preUpgrade", s.pre_upgrade);
    v("postUpgrade", s.post_upgrade);
  }
};

struct UpgradePolicy {
  WARREN_API_STRUCT;
  std::string type;  // Recreate | CheckpointRestore

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("type", s.type);
  }
};

}  // namespace warren::api
