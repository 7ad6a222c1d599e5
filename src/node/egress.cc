#include "node/egress.h"

#include <fmt/format.h>

#include "api/types/labels.h"
#include "base/log.h"
#include "node/node_agent.h"
#include "node/reasons.h"
#include "node/sandbox_object.h"

namespace warren::node {

namespace {

std::string AnnotationOf(const api::Object& sandbox, const char* key) {
  auto it = sandbox.metadata.annotations.find(key);
  return it == sandbox.metadata.annotations.end() ? "" : it->second;
}

Result<sbnet::EgressPolicy> PolicyIn(const api::Object& sandbox, const char* key) {
  const std::string text = AnnotationOf(sandbox, key);
  if (text.empty()) return sbnet::EgressPolicy{};
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError(fmt::format("annotation {}: not JSON", key));
  auto policy = sbnet::EgressPolicyFromJson(j);
  if (!policy.ok()) {
    return InvalidArgumentError(fmt::format("annotation {}: {}", key, policy.status().message()));
  }
  return policy;
}

}  // namespace

std::string EgressAnnotationsOf(const api::Object& sandbox) {
  std::string network = AnnotationOf(sandbox, api::annotations::kNetwork);
  std::string traffic = AnnotationOf(sandbox, api::annotations::kTrafficPolicy);
  return traffic.empty() ? network : network + "\n" + traffic;
}

Result<sbnet::EgressPolicy> EgressPolicyOf(const api::Object& sandbox) {
  ASSIGN_OR_RETURN(sbnet::EgressPolicy e2b, PolicyIn(sandbox, api::annotations::kNetwork));
  ASSIGN_OR_RETURN(sbnet::EgressPolicy traffic,
                   PolicyIn(sandbox, api::annotations::kTrafficPolicy));
  return sbnet::MergeEgressPolicies(e2b, traffic);
}

Status NodeAgent::ApplyEgressPolicy(const api::Object& sandbox) {
  const std::string id = SandboxIdOf(sandbox);
  if (!network_) {
    return FailedPreconditionError(
        fmt::format("sandbox {}: this node has no sandbox network (warren server "
                    "--sandbox-network)",
                    id));
  }
  const std::string text = EgressAnnotationsOf(sandbox);
  ASSIGN_OR_RETURN(sbnet::EgressPolicy policy, EgressPolicyOf(sandbox));
  std::lock_guard lock(egress_mu_);
  RETURN_IF_ERROR(runtime_->UpdateEgress(id, policy));
  locals_.With(id, [&](Local& l) { l.network = text; });
  base::Logger("node")->info("sandbox network policy set id={} policy={}", id,
                             text.empty() ? "default" : text);
  return Status::Ok();
}

// A changed annotation changes the policy of the sandbox in place, whatever its state (a
// stopped or paused one keeps it for its next run).
void NodeAgent::SyncEgressPolicy(api::Object& obj, const std::string& id) {
  if (!network_) return;
  std::string applied;
  if (!locals_.With(id, [&](const Local& l) { applied = l.network; }) ||
      applied == EgressAnnotationsOf(obj)) {
    return;
  }
  if (Status s = ApplyEgressPolicy(obj); !s.ok()) {
    events_->Warning(obj,
                     s.code() == StatusCode::kInvalidArgument ? reasons::kInvalidNetwork
                                                              : reasons::kNetworkPolicyFailed,
                     s.message());
  }
}

}  // namespace warren::node
