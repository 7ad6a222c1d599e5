#pragma once

#include <memory>
#include <mutex>
#include <set>

#include "api/kinds.h"
#include "api/sandbox_secrets.h"
#include "audit/journal.h"
#include "controller/quota_gate.h"
#include "net/router.h"
#include "store/store.h"

namespace warren::server {

// The Kubernetes-style resource REST API over the store:
//   /apis                                              API groups (discovery)
//   /apis/{group}/{version}                            resources of a group version
//   /apis/{group}/{version}/{plural}                   list/watch across namespaces; POST for
//                                                      cluster-scoped kinds
//   /apis/{group}/{version}/{plural}/{name}[/status|/scale]            cluster-scoped objects
//   /apis/{group}/{version}/namespaces/{ns}/{plural}                   list/watch, POST
//   /apis/{group}/{version}/namespaces/{ns}/{plural}/{name}[/status|/scale]
// GET (?labelSelector, ?fieldSelector, ?limit, ?continue, ?watch=1, ?resourceVersion), POST,
// PUT, PATCH (merge patch), DELETE (?propagationPolicy or a DeleteOptions body). Bodies are
// JSON, or YAML with Content-Type application/yaml. Errors are Status objects
// (api/status_object.h). Watches stream one JSON event per line: {"type":"ADDED","object":{}}.
// Thread-safe; handlers run on the HTTP server's blocking pool, watch streams on the store's
// dispatch thread.
class ResourceApi {
 public:
  // `quota` (may be null: none) judges every Sandbox created here.
  ResourceApi(store::Store& store, const api::KindRegistry& kinds,
              const api::SandboxSecrets& secrets, controller::QuotaGate* quota,
              size_t max_body_bytes);
  ~ResourceApi();

  void Register(net::Router& router);
  // Writes to Sandboxes (create, update, patch, delete) are recorded in their audit journals
  // (source "api", action "resource.<verb>"). Before Register; null: nowhere.
  void SetAuditJournal(std::shared_ptr<audit::Journal> journal) { audit_ = std::move(journal); }
  // Ends open watches (their streams finish).
  void Shutdown();

  struct WatchSession;

 private:
  void HandleDiscovery(net::Request&& req, net::Responder responder);
  void HandleCollection(net::Request&& req, net::Responder responder);
  void HandleObject(net::Request&& req, net::Responder responder);
  void HandleStatus(net::Request&& req, net::Responder responder);
  void HandleScale(net::Request&& req, net::Responder responder);
  void StartWatch(const api::KindInfo& kind, const std::string& ns, net::Request& req,
                  net::Responder& responder);

  // A Sandbox created here gets an envd access token (sealed) when it has none, so it is closed
  // from birth like every other; its owner reads the token with E2B's connect. Its sandbox id,
  // when the caller chose one, must not be another object's.
  Status PrepareSandbox(api::Object& sandbox);
  // After a ResourceQuota was written: answers only once quota admission enforces it.
  void AwaitQuotaInForce(const api::KindInfo& kind, const api::Object& written);
  // Records a successful write to a Sandbox in its journal (one with a sandbox id only).
  void Audit(const base::Principal& who, const api::KindInfo& kind, const api::Object& obj,
             std::string_view verb, int status);

  store::Store& store_;
  const api::KindRegistry& kinds_;
  const api::SandboxSecrets& secrets_;
  controller::QuotaGate* const quota_;
  std::shared_ptr<audit::Journal> audit_;
  size_t max_body_bytes_;
  std::mutex mu_;
  std::set<std::shared_ptr<WatchSession>> watches_;  // guarded by mu_
};

}  // namespace warren::server
