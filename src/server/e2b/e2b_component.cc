#include "server/e2b/e2b_component.h"

#include "base/log.h"
#include "envd/version.h"
#include "server/e2b/api_keys_api.h"
#include "server/e2b/e2b_api.h"
#include "server/e2b/templates.h"

namespace warren::server::e2b {

E2bComponent::E2bComponent(store::Store& store, std::shared_ptr<SandboxService> service,
                           std::shared_ptr<auth::KeyStore> keys)
    : store_(store), service_(std::move(service)), keys_(std::move(keys)) {}

Result<E2bComponent*> E2bComponent::Install(Server& server, E2bParts parts) {
  std::string key_dir = parts.key_dir.empty() ? server.options().data_dir + "/auth" : parts.key_dir;
  ASSIGN_OR_RETURN(std::unique_ptr<auth::KeyStore> opened, auth::KeyStore::Open(key_dir));
  std::shared_ptr<auth::KeyStore> keys = std::move(opened);
  if (parts.options.response.envd_version.empty()) {
    // warren-envd implements exactly this version (envd/version.h is a constant, no link
    // dependency); the SDKs switch features on it.
    parts.options.response.envd_version = std::string(envd::kEnvdVersion);
  }
  base::Clock& clock = parts.clock ? *parts.clock : base::RealClock();
  auto service = std::make_shared<SandboxService>(server.store(), parts.node, parts.routes, clock,
                                                  std::move(parts.options));
  service->SetClaimer(parts.claimer);
  RegisterE2bRoutes(server.router(), service, keys);
  RegisterApiKeyRoutes(server.router(), keys);
  std::unique_ptr<E2bComponent> component(
      new E2bComponent(server.store(), std::move(service), std::move(keys)));
  E2bComponent* raw = component.get();
  server.AddComponent(std::move(component));
  return raw;
}

Status E2bComponent::Start() {
  const E2bOptions& o = service_->options();
  RETURN_IF_ERROR(
      EnsureTemplate(store_, o.shared_namespace, o.base_template, o.base_image, o.base_workdir));
  auto has_admin = keys_->HasAdminKey();
  if (has_admin.ok() && !*has_admin) {
    base::Logger("e2b")->warn(
        "no admin API key yet: create one with `warren apikey bootstrap --data-dir <dir>` "
        "(run.sh does it on first run)");
  }
  return Status::Ok();
}

void E2bComponent::Stop() {}

}  // namespace warren::server::e2b
