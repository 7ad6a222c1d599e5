#include "controller/claim/claim_metadata.h"

#include <fmt/format.h>

#include <set>

#include "api/inplace_update.h"
#include "api/json.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "base/ids.h"
#include "base/time_format.h"
#include "controller/sandboxset_member.h"

namespace warren::controller::claim {
namespace {

namespace labels = api::labels;
namespace annotations = api::annotations;

bool IsProtectedLabel(const std::string& key) {
  static const std::set<std::string> kProtected = {labels::kSandboxPool, labels::kTemplateHash,
                                                   labels::kSandboxId, labels::kSandboxClaimed};
  return kProtected.contains(key);
}

bool IsProtectedAnnotation(const std::string& key) {
  static const std::set<std::string> kProtected = {annotations::kLock,
                                                   annotations::kOwner,
                                                   annotations::kClaimTimestamp,
                                                   annotations::kSandboxId,
                                                   annotations::kInitRuntimeRequest,
                                                   annotations::kRuntimeAccessToken,
                                                   annotations::kUpdatedMetadataInClaim,
                                                   pool_annotations::kClaimPending,
                                                   pool_annotations::kRecycling,
                                                   pool_annotations::kPoolPauseStrategy};
  return kProtected.contains(key) || key.starts_with(annotations::kSecretPrefix);
}

// Annotations a claim sets that a recycle removes (the reference's AnnotationsClearedOnRecycle
// plus ours).
const char* const kClaimAnnotations[] = {
    annotations::kLock,
    annotations::kOwner,
    annotations::kClaimTimestamp,
    annotations::kInitRuntimeRequest,
    annotations::kRuntimeAccessToken,
    annotations::kSealedInitRequest,
    annotations::kSealedAccessToken,
    annotations::kSealedTrafficToken,
    annotations::kRuntimeUrl,
    annotations::kUpdatedMetadataInClaim,
    annotations::kCleanup,
    annotations::kReservePausedSandboxDuration,
    annotations::kTraceContext,
    pool_annotations::kClaimPending,
    pool_annotations::kRecycling,
};

}  // namespace

std::string NewClaimLock(std::string_view replica) {
  std::string lock = base::NewUuid();
  if (!replica.empty()) {
    lock += '@';
    lock += replica;
  }
  return lock;
}

std::string_view ReplicaOfLock(std::string_view lock) {
  auto at = lock.find('@');
  return at == std::string_view::npos ? std::string_view() : lock.substr(at + 1);
}

std::string InitBody(const ClaimRequest& request) {
  api::Json body = api::Json::object();
  if (!request.env_vars.empty()) body["envVars"] = request.env_vars;
  if (!request.access_token.empty()) body["accessToken"] = request.access_token;
  if (!request.default_user.empty()) body["defaultUser"] = request.default_user;
  if (!request.default_workdir.empty()) body["defaultWorkdir"] = request.default_workdir;
  return api::DumpJson(body);
}

void ApplyClaim(api::Object& sandbox, const ClaimRequest& request, const std::string& lock,
                base::WallTime now, base::WallTime pending_deadline,
                const api::SandboxSecrets& secrets) {
  auto& meta = sandbox.metadata;
  meta.owner_references = request.owner_references;
  api::Json added = {{"labels", api::Json::array()}, {"annotations", api::Json::array()}};
  for (const auto& [k, v] : request.labels) {
    if (IsProtectedLabel(k)) continue;
    if (!meta.labels.contains(k)) added["labels"].push_back(k);
    meta.labels[k] = v;
  }
  for (const auto& [k, v] : request.annotations) {
    if (IsProtectedAnnotation(k)) continue;
    if (!meta.annotations.contains(k)) added["annotations"].push_back(k);
    meta.annotations[k] = v;
  }
  meta.labels[labels::kSandboxClaimed] = "true";
  meta.annotations[annotations::kLock] = lock;
  meta.annotations[annotations::kClaimTimestamp] = base::FormatRfc3339Millis(now);
  meta.annotations[pool_annotations::kClaimPending] = base::FormatRfc3339Millis(pending_deadline);
  if (!request.owner.empty()) meta.annotations[annotations::kOwner] = request.owner;
  if (!request.access_token.empty()) secrets.SetAccessToken(sandbox, request.access_token);
  if (!request.traffic_token.empty()) secrets.SetTrafficToken(sandbox, request.traffic_token);
  if (!request.skip_init) secrets.SetInitRequest(sandbox, InitBody(request));
  meta.annotations[annotations::kUpdatedMetadataInClaim] = api::DumpJson(added);
  api::Json& spec = sandbox.spec();
  if (request.shutdown_time) spec["shutdownTime"] = base::FormatRfc3339(*request.shutdown_time);
  if (request.pause_time) spec["pauseTime"] = base::FormatRfc3339(*request.pause_time);
  if (request.pause_files_only) {
    const api::Json own = spec.value("pauseStrategy", api::Json());
    meta.annotations[pool_annotations::kPoolPauseStrategy] = api::DumpJson(own);
    if (!spec["pauseStrategy"].is_object()) spec["pauseStrategy"] = api::Json::object();
    spec["pauseStrategy"]["type"] = "Stop";
  }
}

void SetPoolToken(api::Object& sandbox, const std::string& token,
                  const api::SandboxSecrets& secrets) {
  secrets.SetAccessToken(sandbox, token);
  secrets.SetInitRequest(sandbox, api::DumpJson({{"accessToken", token}}));
}

void ResetForPool(api::Object& sandbox, const api::Object& set, const std::string& pool_token,
                  const api::SandboxSecrets& secrets) {
  auto& meta = sandbox.metadata;
  auto recorded = meta.annotations.find(annotations::kUpdatedMetadataInClaim);
  if (recorded != meta.annotations.end()) {
    auto added = api::ParseJson(recorded->second);
    if (added.ok() && added->is_object()) {
      for (const char* field : {"labels", "annotations"}) {
        if (!added->contains(field) || !(*added)[field].is_array()) continue;
        for (const auto& k : (*added)[field]) {
          if (!k.is_string()) continue;
          std::string key = k.get<std::string>();
          if (std::string_view(field) == "labels") {
            if (!IsProtectedLabel(key)) meta.labels.erase(key);
          } else if (!IsProtectedAnnotation(key)) {
            meta.annotations.erase(key);
          }
        }
      }
    }
  }
  for (const char* key : kClaimAnnotations) meta.annotations.erase(key);
  meta.labels.erase(labels::kClaimName);
  meta.labels[labels::kSandboxClaimed] = "false";
  meta.owner_references = {set.MakeControllerRef()};
  api::Json& spec = sandbox.spec();
  spec.erase("shutdownTime");
  spec.erase("pauseTime");
  if (auto own = meta.annotations.find(pool_annotations::kPoolPauseStrategy);
      own != meta.annotations.end()) {
    auto parsed = api::ParseJson(own->second);
    if (parsed.ok() && parsed->is_object()) {
      spec["pauseStrategy"] = *parsed;
    } else {
      spec.erase("pauseStrategy");
    }
    meta.annotations.erase(own);
  }
  if (spec.contains("paused")) spec["paused"] = false;
  if (!pool_token.empty()) SetPoolToken(sandbox, pool_token, secrets);
}

Result<std::string> ApplyInplaceUpdate(api::Object& sandbox, const api::Json& pod_template,
                                       const api::InplaceUpdateSpec& update) {
  auto decoded = api::DecodeTyped<api::PodTemplateSpec>(pod_template, "template");
  if (!decoded.ok()) {
    return InvalidArgumentError(fmt::format("sandbox {}/{}: its template cannot be read: {}",
                                            sandbox.metadata.namespace_, sandbox.metadata.name,
                                            decoded.status().message()));
  }
  if (decoded->spec.containers.empty()) {
    return InvalidArgumentError(fmt::format("sandbox {}/{}: its template has no container",
                                            sandbox.metadata.namespace_, sandbox.metadata.name));
  }
  api::Container& main = decoded->spec.containers.front();
  if (!update.image.empty()) main.image = update.image;
  for (const auto& [name, q] : update.resources.requests) main.resources.requests[name] = q;
  for (const auto& [name, q] : update.resources.limits) main.resources.limits[name] = q;
  // Fields of the document the typed template does not model (restartPolicy, ...) stay.
  api::Json written = pod_template;
  api::EncodeTyped(*decoded, written);
  api::Json& spec = sandbox.spec();
  spec["template"] = std::move(written);
  spec.erase("templateRef");
  return api::PodTemplateHash(*decoded);
}

}  // namespace warren::controller::claim
