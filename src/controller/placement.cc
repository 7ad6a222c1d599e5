#include "controller/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "api/resources.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/node.h"

namespace warren::controller {
namespace {

constexpr const char* kNotTheCheckpointsNode = "node(s) did not hold the checkpoint it starts from";
constexpr const char* kNotReady = "node(s) were not ready";
constexpr const char* kUnschedulable = "node(s) were unschedulable";
constexpr const char* kInsufficientCpu = "Insufficient cpu";
constexpr const char* kInsufficientMemory = "Insufficient memory";
constexpr const char* kTooManySandboxes = "Too many sandboxes";

const api::Quantity* Stated(const api::NodeStatus& status, const std::string& name) {
  if (auto it = status.allocatable.find(name); it != status.allocatable.end()) return &it->second;
  if (auto it = status.capacity.find(name); it != status.capacity.end()) return &it->second;
  return nullptr;
}

bool HoldsImage(const NodeFacts& node, const std::string& image) {
  if (image.empty()) return false;
  if (node.images.contains(image)) return true;
  // "python" is "python:latest" to a registry; a reference with a digest or tag is exact.
  const auto slash = image.rfind('/');
  const bool tagged = image.find('@') != std::string::npos ||
                      image.find(':', slash == std::string::npos ? 0 : slash) != std::string::npos;
  return !tagged && node.images.contains(image + ":latest");
}

struct Used {
  int64_t cpu_millicores = 0;
  int64_t memory_bytes = 0;
  int64_t sandboxes = 0;
  int64_t pool_members = 0;
};

// Parts per million of what is stated, after placing, averaged; 0 when the node states nothing.
// The sandbox count is one of the parts: sandboxes that reserve nothing (no requests) still
// spread, as Kubernetes scores a BestEffort pod with a non-zero default.
int64_t AllocatedPerMillion(const NodeFacts& node, const Used& used, const SandboxDemand& d) {
  int64_t sum = 0, n = 0;
  if (node.cpu_millicores && *node.cpu_millicores > 0) {
    sum += (used.cpu_millicores + d.cpu_millicores) * 1'000'000 / *node.cpu_millicores;
    ++n;
  }
  if (node.memory_bytes && *node.memory_bytes > 0) {
    // In KiB so that the product stays far from overflowing.
    sum +=
        ((used.memory_bytes + d.memory_bytes) / 1024) * 1'000'000 / (*node.memory_bytes / 1024 + 1);
    ++n;
  }
  if (node.sandboxes && *node.sandboxes > 0) {
    sum += (used.sandboxes + 1) * 1'000'000 / *node.sandboxes;
    ++n;
  }
  return n == 0 ? 0 : sum / n;
}

}  // namespace

SandboxDemand DemandOf(const api::Object& sandbox, const api::PodTemplateSpec* pod) {
  SandboxDemand d;
  api::SandboxFootprint footprint =
      pod ? api::RequestsOf(*pod) : api::SandboxFootprint{.cpu_millicores = 0, .memory_bytes = 0};
  d.cpu_millicores = footprint.cpu_millicores;
  d.memory_bytes = footprint.memory_bytes;
  if (pod) {
    d.runtime_class = pod->spec.runtime_class_name;
    if (!pod->spec.containers.empty()) d.image = pod->spec.containers.front().image;
  }
  std::string pool;
  if (auto it = sandbox.metadata.labels.find(api::labels::kSandboxPool);
      it != sandbox.metadata.labels.end()) {
    pool = it->second;
  } else if (const api::OwnerReference* ref = sandbox.ControllerRef();
             ref != nullptr && ref->kind == "SandboxSet") {
    pool = ref->name;
  }
  if (!pool.empty()) d.pool = sandbox.metadata.namespace_ + "/" + pool;
  return d;
}

NodeFacts NodeFactsOf(const api::Object& node) {
  NodeFacts f;
  f.name = node.metadata.name;
  auto spec = api::DecodeSpec<api::NodeSpec>(node);
  f.unschedulable = spec.ok() && spec->unschedulable;
  auto status = api::DecodeStatus<api::NodeStatus>(node);
  if (!status.ok()) return f;  // not ready: nothing can be read of it
  f.ready = api::IsConditionTrue(status->conditions, "Ready");
  if (const api::Quantity* q = Stated(*status, "cpu")) f.cpu_millicores = q->MilliValue();
  if (const api::Quantity* q = Stated(*status, "memory")) f.memory_bytes = q->Value();
  if (const api::Quantity* q = Stated(*status, "sandboxes")) {
    f.sandboxes = q->Value();
  } else if (const api::Quantity* p = Stated(*status, "pods")) {
    f.sandboxes = p->Value();
  }
  f.runtime_classes = status->runtime_classes;
  for (const auto& image : status->images) f.images.insert(image.names.begin(), image.names.end());
  return f;
}

PlacementDecision Place(const SandboxDemand& sandbox, const std::vector<NodeFacts>& nodes,
                        const std::vector<PlacedSandbox>& placed) {
  std::map<std::string, Used> used;
  for (const auto& p : placed) {
    Used& u = used[p.node];
    u.cpu_millicores += p.demand.cpu_millicores;
    u.memory_bytes += p.demand.memory_bytes;
    ++u.sandboxes;
    if (!sandbox.pool.empty() && p.demand.pool == sandbox.pool) ++u.pool_members;
  }
  const std::string class_reason =
      fmt::format("node(s) did not offer runtime class \"{}\"", sandbox.runtime_class);

  std::map<std::string, int> refused;  // reason → nodes
  // Lower is better: (no image, pool members, allocated per mille, name).
  using Score = std::tuple<bool, int64_t, int64_t, std::string>;
  std::optional<Score> best;
  for (const NodeFacts& node : nodes) {
    if (!sandbox.node.empty() && node.name != sandbox.node) {
      ++refused[kNotTheCheckpointsNode];
      continue;
    }
    if (!node.ready) {
      ++refused[kNotReady];
      continue;
    }
    if (node.unschedulable) {
      ++refused[kUnschedulable];
      continue;
    }
    if (!sandbox.runtime_class.empty()) {
      const bool offered = node.runtime_classes.empty()
                               ? sandbox.runtime_class == api::kRuntimeNative
                               : std::find(node.runtime_classes.begin(), node.runtime_classes.end(),
                                           sandbox.runtime_class) != node.runtime_classes.end();
      if (!offered) {
        ++refused[class_reason];
        continue;
      }
    }
    const Used u = used.contains(node.name) ? used.at(node.name) : Used{};
    bool fits = true;
    if (node.cpu_millicores && u.cpu_millicores + sandbox.cpu_millicores > *node.cpu_millicores) {
      ++refused[kInsufficientCpu];
      fits = false;
    }
    if (node.memory_bytes && u.memory_bytes + sandbox.memory_bytes > *node.memory_bytes) {
      ++refused[kInsufficientMemory];
      fits = false;
    }
    if (node.sandboxes && u.sandboxes + 1 > *node.sandboxes) {
      ++refused[kTooManySandboxes];
      fits = false;
    }
    if (!fits) continue;
    Score score{!HoldsImage(node, sandbox.image), u.pool_members,
                AllocatedPerMillion(node, u, sandbox), node.name};
    if (!best || score < *best) best = std::move(score);
  }
  if (best) return {.node = std::get<3>(*best), .message = {}};

  std::vector<std::pair<int, std::string>> reasons;
  for (const auto& [reason, count] : refused) reasons.emplace_back(count, reason);
  std::sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string message = fmt::format("0/{} nodes are available", nodes.size());
  if (nodes.empty()) return {.node = {}, .message = message + ": no Node is registered."};
  for (size_t i = 0; i < reasons.size(); ++i) {
    message += fmt::format("{}{} {}", i == 0 ? ": " : ", ", reasons[i].first, reasons[i].second);
  }
  return {.node = {}, .message = message + "."};
}

}  // namespace warren::controller
