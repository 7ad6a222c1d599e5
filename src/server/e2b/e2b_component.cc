#include "server/e2b/e2b_component.h"

#include "api/kinds.h"
#include "base/log.h"
#include "envd/version.h"
#include "server/e2b/api_keys_api.h"
#include "server/e2b/audit_api.h"
#include "server/e2b/e2b_api.h"
#include "server/e2b/observe_api.h"
#include "server/e2b/templates.h"
#include "server/e2b/volumes_api.h"

namespace warren::server::e2b {

E2bComponent::E2bComponent(store::Store& store, const api::SandboxSecrets& secrets,
                           std::shared_ptr<SandboxService> service,
                           std::shared_ptr<auth::KeyStore> keys,
                           std::shared_ptr<TeamMetrics> team_metrics)
    : store_(store),
      secrets_(secrets),
      service_(std::move(service)),
      keys_(std::move(keys)),
      team_metrics_(std::move(team_metrics)) {}

Result<E2bComponent*> E2bComponent::Install(Server& server, E2bParts parts) {
  std::shared_ptr<auth::KeyStore> keys = server.shared_keys();
  if (parts.options.response.envd_version.empty()) {
    // warren-envd implements exactly this version (envd/version.h is a constant, no link
    // dependency); the SDKs switch features on it.
    parts.options.response.envd_version = std::string(envd::kEnvdVersion);
  }
  base::Clock& clock = parts.clock ? *parts.clock : base::RealClock();
  auto service = std::make_shared<SandboxService>(server.store(), server.secrets(), parts.node,
                                                  parts.routes, clock, std::move(parts.options));
  service->SetClaimer(parts.claimer);
  service->SetQuota(&server.quota());
  auto team_metrics = std::make_shared<TeamMetrics>(server.store(), clock, TeamMetrics::Options{});
  RegisterE2bRoutes(server.router(), service, parts.audit);
  if (parts.audit != nullptr) RegisterAuditRoutes(server.router(), service, parts.audit);
  RegisterObserveRoutes(server.router(), service, parts.node, team_metrics, keys);
  RegisterApiKeyRoutes(server.router(), keys);
  RegisterVolumeRoutes(server.router(), server.store(), server.secrets(), parts.node,
                       service->options().max_body_bytes);
  std::unique_ptr<E2bComponent> component(new E2bComponent(server.store(), server.secrets(),
                                                           std::move(service), std::move(keys),
                                                           std::move(team_metrics)));
  E2bComponent* raw = component.get();
  server.AddComponent(std::move(component));
  return raw;
}

namespace {

// Sandboxes written before secrets were sealed carry envd's token and the /init body in plain
// text: seal them once, at start, before anything serves them.
Status SealPlainTextSecrets(store::Store& store, const api::SandboxSecrets& secrets) {
  ASSIGN_OR_RETURN(auto list, store.List(api::SandboxKind(), {}));
  int sealed = 0;
  for (api::Object& o : list.items) {
    if (!secrets.SealPlainText(o)) continue;
    auto updated = store.Update(std::move(o));
    // Changed meanwhile (the node's status): the next start seals it.
    if (!updated.ok() && updated.status().code() != StatusCode::kAborted) return updated.status();
    sealed += updated.ok();
  }
  if (sealed > 0)
    base::Logger("e2b")->info("sealed the plain-text secrets of {} sandboxes", sealed);
  return Status::Ok();
}

}  // namespace

Status E2bComponent::Start() {
  RETURN_IF_ERROR(SealPlainTextSecrets(store_, secrets_));
  const E2bOptions& o = service_->options();
  RETURN_IF_ERROR(
      EnsureTemplate(store_, o.shared_namespace, o.base_template, o.base_image, o.base_workdir));
  auto has_admin = keys_->HasAdminKey();
  if (has_admin.ok() && !*has_admin) {
    base::Logger("e2b")->warn(
        "no admin API key yet: create one with `warren apikey bootstrap --data-dir <dir>` "
        "(run.sh does it on first run)");
  }
  return team_metrics_->Start();
}

void E2bComponent::Stop() { team_metrics_->Stop(); }

}  // namespace warren::server::e2b
