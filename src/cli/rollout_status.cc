#include "cli/rollout_status.h"

#include <fmt/format.h>

#include "api/json_path.h"
#include "cli/printer.h"

namespace warren::cli {
namespace {

int64_t IntAt(const api::Json& object, const char* section, const char* field) {
  if (!object.is_object() || !object.contains(section) || !object[section].is_object()) return 0;
  const api::Json& s = object[section];
  return s.contains(field) && s[field].is_number_integer() ? s[field].get<int64_t>() : 0;
}

// The Ready condition of a Sandbox, or null.
const api::Json* ReadyCondition(const api::Json& sandbox) {
  const api::Json* status =
      sandbox.is_object() && sandbox.contains("status") ? &sandbox["status"] : nullptr;
  if (status == nullptr || !status->is_object() || !status->contains("conditions") ||
      !(*status)["conditions"].is_array()) {
    return nullptr;
  }
  for (const api::Json& c : (*status)["conditions"]) {
    if (c.is_object() && c.value("type", "") == "Ready") return &c;
  }
  return nullptr;
}

}  // namespace

std::string RolloutStatus::Line() const {
  return fmt::format("{}  {}  {}/{} updated  {}/{} available", name, done ? "Ready" : "Updating",
                     updated, desired, available, desired);
}

std::string RolloutStatus::ProgressLine() const {
  return fmt::format("{}  {}  {}  {}/{} updated  {}/{} available", name,
                     done ? "Ready" : "Updating", ProgressBar(updated, desired), updated, desired,
                     available, desired);
}

std::string ScaleStatus::ProgressLine() const {
  return fmt::format("{}  {}  {}  {}/{} available", name, done ? "Ready" : "Scaling",
                     ProgressBar(available, desired), available, desired);
}

ScaleStatus SandboxSetScale(const api::Json& sbs) {
  ScaleStatus r;
  r.name = api::JsonPathText(sbs, ".metadata.name");
  r.desired = IntAt(sbs, "spec", "replicas");
  r.available = IntAt(sbs, "status", "availableReplicas");
  const bool observed =
      IntAt(sbs, "status", "observedGeneration") >= IntAt(sbs, "metadata", "generation");
  r.done = observed && IntAt(sbs, "status", "replicas") == r.desired && r.available == r.desired;
  return r;
}

RolloutStatus SandboxSetRollout(const api::Json& sbs) {
  RolloutStatus r;
  r.name = api::JsonPathText(sbs, ".metadata.name");
  r.desired = IntAt(sbs, "spec", "replicas");
  r.updated = IntAt(sbs, "status", "updatedReplicas");
  r.available = IntAt(sbs, "status", "availableReplicas");
  const int64_t generation = IntAt(sbs, "metadata", "generation");
  const bool observed = IntAt(sbs, "status", "observedGeneration") >= generation;
  r.done = observed && r.updated >= r.desired &&
           IntAt(sbs, "status", "updatedAvailableReplicas") >= r.desired;
  return r;
}

std::string UpdateOpsStatus::Line() const {
  return fmt::format("{}  {:<9}  {}/{} updated  {} updating  {} failed", name, phase, updated,
                     replicas, updating, failed);
}

UpdateOpsStatus UpdateOpsRollout(const api::Json& suo) {
  UpdateOpsStatus r;
  r.name = api::JsonPathText(suo, ".metadata.name");
  r.phase = api::JsonPathText(suo, ".status.phase");
  if (r.phase.empty()) r.phase = "Pending";
  r.replicas = IntAt(suo, "status", "replicas");
  r.updated = IntAt(suo, "status", "updatedReplicas");
  r.updating = IntAt(suo, "status", "updatingReplicas");
  r.failed = IntAt(suo, "status", "failedReplicas");
  r.reason = api::JsonPathText(suo, ".status.conditions[?(@.type==\"Progressing\")].reason");
  r.message = api::JsonPathText(suo, ".status.conditions[?(@.type==\"Progressing\")].message");
  return r;
}

std::vector<std::string> UnreadyMembers(const api::Json& sandboxes, size_t limit) {
  std::vector<std::string> out;
  if (!sandboxes.is_array()) return out;
  for (const api::Json& s : sandboxes) {
    if (out.size() == limit) break;
    const api::Json* ready = ReadyCondition(s);
    if (ready != nullptr && ready->value("status", "") == "True") continue;
    std::string phase = api::JsonPathText(s, ".status.phase");
    std::string message = api::JsonPathText(s, ".status.message");
    if (message.empty() && ready != nullptr) {
      message = ready->value("message", ready->value("reason", ""));
    }
    std::string line = fmt::format("sandbox {}: {}", api::JsonPathText(s, ".metadata.name"),
                                   phase.empty() ? "not started" : phase);
    if (!message.empty()) line += ": " + message;
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace warren::cli
