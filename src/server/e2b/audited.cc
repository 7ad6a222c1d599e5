#include "server/e2b/audited.h"

#include "api/json.h"
#include "api/types/labels.h"

namespace warren::server::e2b {
namespace {

// The journal an entry about `sandbox` belongs to: its namespace and canonical sandbox id.
bool JournalOf(const api::Object& sandbox, std::string& ns, std::string& id) {
  auto label = sandbox.metadata.labels.find(api::labels::kSandboxId);
  if (label == sandbox.metadata.labels.end()) return false;
  ns = sandbox.metadata.namespace_;
  id = label->second;
  return true;
}

}  // namespace

AuthedHandler Audited(std::shared_ptr<audit::Journal> journal,
                      std::shared_ptr<SandboxService> service, std::string operation,
                      AuthedHandler handler) {
  if (journal == nullptr) return handler;
  return [journal = std::move(journal), service = std::move(service), op = std::move(operation),
          handler = std::move(handler)](const auth::Principal& who, const net::Request& req) {
    // Which journal, decided by the sandbox the caller can see, before the call (a kill leaves
    // nothing to look up after it): never one named by whatever id a request carries.
    std::string ns, id;
    bool found = false;
    const std::string_view named = req.PathParam("id");
    if (!named.empty()) {
      if (auto o = service->Lookup(who, named); o.ok()) found = JournalOf(*o, ns, id);
    }
    net::Response resp = handler(who, req);
    if (named.empty() && resp.status == 201) {
      auto body = api::ParseJson(resp.body);
      if (body.ok() && body->is_object() && (*body)["sandboxID"].is_string()) {
        if (auto o = service->Lookup(who, (*body)["sandboxID"].get<std::string>()); o.ok()) {
          found = JournalOf(*o, ns, id);
        }
      }
    }
    if (!found) return resp;
    nlohmann::json entry{{"source", "api"},  {"actor", who.key_name}, {"keyId", who.key_id},
                         {"team", who.team}, {"action", op},          {"status", resp.status}};
    if (resp.status >= 400) {
      auto body = api::ParseJson(resp.body);
      if (body.ok() && body->is_object() && (*body)["message"].is_string()) {
        entry["message"] = (*body)["message"];
      }
    }
    journal->Post(std::move(ns), std::move(id), std::move(entry));
    return resp;
  };
}

}  // namespace warren::server::e2b
