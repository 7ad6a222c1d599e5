#include "server/e2b/audited.h"

#include "api/json.h"
#include "api/types/labels.h"

namespace warren::server::e2b {
std::optional<std::pair<std::string, std::string>> JournalKeyOf(const api::Object& sandbox) {
  auto label = sandbox.metadata.labels.find(api::labels::kSandboxId);
  if (label == sandbox.metadata.labels.end()) return std::nullopt;
  return std::pair{sandbox.metadata.namespace_, label->second};
}

AuthedHandler Audited(std::shared_ptr<audit::Journal> journal,
                      std::shared_ptr<SandboxService> service, std::string operation,
                      AuthedHandler handler) {
  if (journal == nullptr) return handler;
  return [journal = std::move(journal), service = std::move(service), op = std::move(operation),
          handler = std::move(handler)](const auth::Principal& who, const net::Request& req) {
    // Which journal, decided by the sandbox the caller can see, before the call (a kill leaves
    // nothing to look up after it): never one named by whatever id a request carries.
    std::optional<std::pair<std::string, std::string>> key;
    const std::string_view named = req.PathParam("id");
    if (!named.empty()) {
      if (auto o = service->Lookup(who, named); o.ok()) key = JournalKeyOf(*o);
    }
    net::Response resp = handler(who, req);
    if (named.empty() && resp.status == 201) {
      auto body = api::ParseJson(resp.body);
      if (body.ok() && body->is_object() && (*body)["sandboxID"].is_string()) {
        std::string id = (*body)["sandboxID"].get<std::string>();
        if (auto ns = service->NamespaceOfCreated(id)) {
          key = std::pair{std::move(*ns), std::move(id)};
        } else if (auto o = service->Lookup(who, id); o.ok()) {
          key = JournalKeyOf(*o);
        }
      }
    }
    if (!key) return resp;
    nlohmann::json entry{{"source", "api"},  {"actor", who.key_name}, {"keyId", who.key_id},
                         {"team", who.team}, {"action", op},          {"status", resp.status}};
    if (resp.status >= 400) {
      auto body = api::ParseJson(resp.body);
      if (body.ok() && body->is_object() && (*body)["message"].is_string()) {
        entry["message"] = (*body)["message"];
      }
    }
    journal->Post(std::move(key->first), std::move(key->second), std::move(entry));
    return resp;
  };
}

}  // namespace warren::server::e2b
