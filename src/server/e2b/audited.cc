#include "server/e2b/audited.h"

#include "api/json.h"
#include "base/log.h"

namespace warren::server::e2b {

AuthedHandler Audited(std::shared_ptr<audit::Journal> journal,
                      std::shared_ptr<SandboxService> service, std::string operation,
                      AuthedHandler handler) {
  if (journal == nullptr) return handler;
  return [journal = std::move(journal), service = std::move(service), op = std::move(operation),
          handler = std::move(handler)](const auth::Principal& who, const net::Request& req) {
    std::string id(req.PathParam("id"));
    std::string ns = who.team;
    if (who.admin && !id.empty()) {
      // Before the call: a kill leaves nothing to look up after it.
      if (auto o = service->Lookup(who, id); o.ok()) ns = o->metadata.namespace_;
    }
    net::Response resp = handler(who, req);
    if (id.empty() && resp.status == 201) {
      auto body = api::ParseJson(resp.body);
      if (body.ok() && body->is_object() && (*body)["sandboxID"].is_string()) {
        id = (*body)["sandboxID"];
      }
    }
    // 404: no such sandbox for this caller, so nothing happened to one (another team's id, a
    // typo): no journal is made for it.
    if (id.empty() || resp.status == 404) return resp;
    nlohmann::json entry{{"source", "api"},  {"actor", who.key_name}, {"keyId", who.key_id},
                         {"team", who.team}, {"action", op},          {"status", resp.status}};
    if (resp.status >= 400) {
      auto body = api::ParseJson(resp.body);
      if (body.ok() && body->is_object() && (*body)["message"].is_string()) {
        entry["message"] = (*body)["message"];
      }
    }
    if (Status s = journal->Append(ns, id, std::move(entry)); !s.ok()) {
      base::Logger("e2b")->warn("audit journal of sandbox {}: {}", id, s.ToString());
    }
    return resp;
  };
}

}  // namespace warren::server::e2b
