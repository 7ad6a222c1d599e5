#include "server/e2b/audit_api.h"

#include <fmt/format.h>

#include <tuple>

#include "api/json.h"
#include "api/kinds.h"
#include "api/status_object.h"
#include "api/types/labels.h"
#include "base/strings.h"
#include "server/auth/route_guard.h"
#include "server/e2b/audited.h"
#include "server/e2b/authed_route.h"
#include "server/e2b/errors.h"

namespace warren::server::e2b {
namespace {

constexpr size_t kMaxEntries = 1000;

Result<size_t> LimitOf(const net::Request& req) {
  auto v = req.Query("limit");
  if (!v) return kMaxEntries;
  auto n = base::ParseInt64(*v);
  if (!n || *n < 1 || static_cast<size_t>(*n) > kMaxEntries) {
    return InvalidArgumentError(fmt::format("limit must be 1..{}, got \"{}\"", kMaxEntries, *v));
  }
  return static_cast<size_t>(*n);
}

std::string Items(const std::vector<nlohmann::json>& entries) {
  return api::DumpJson(nlohmann::json{{"items", entries}});
}

// The journal of E2B sandbox `id` as `who` may read it.
Result<std::vector<nlohmann::json>> ReadById(SandboxService& service, audit::Journal& journal,
                                             const auth::Principal& who, std::string_view id,
                                             size_t limit) {
  // A live sandbox: its own journal, as the caller sees it. A gone one: the caller's team's
  // journal of that id (an admin's: wherever it is).
  std::string ns = who.team;
  std::string canonical(id);
  if (auto o = service.Lookup(who, id); o.ok()) {
    if (auto key = JournalKeyOf(*o)) std::tie(ns, canonical) = *key;
  } else if (who.admin) {
    if (auto found = journal.NamespaceOf(id)) ns = *found;
  }
  auto entries = journal.Read(ns, canonical, limit);
  if (!entries.ok() && entries.status().code() == StatusCode::kInvalidArgument) {
    return NotFoundError(fmt::format("sandbox \"{}\" not found", id));
  }
  return entries;
}

void SendStatus(net::Responder& r, const Status& s, const std::string& name) {
  api::HttpError e = api::ToHttpError(s, api::StatusDetails{name, api::kAgentsGroup, "sandboxes"});
  r.Send(net::Response::Json(e.code, api::DumpJson(e.status)));
}

}  // namespace

void RegisterAuditRoutes(net::Router& router, std::shared_ptr<SandboxService> service,
                         std::shared_ptr<audit::Journal> journal) {
  AddAuthedRoute(router, "GET", "/sandboxes/{id}/audit", "audit", service->options().max_body_bytes,
                 [service, journal](const auth::Principal& who, const net::Request& req) {
                   auto limit = LimitOf(req);
                   if (!limit.ok()) return ErrorResponse(limit.status());
                   auto entries = ReadById(*service, *journal, who, req.PathParam("id"), *limit);
                   if (!entries.ok()) return ErrorResponse(entries.status());
                   return net::Response::Json(200, Items(*entries));
                 });
  net::RouteOptions route;
  route.blocking = true;
  router.Add(
      "GET", "/apis/agents.kruise.io/v1alpha1/namespaces/{ns}/sandboxes/{name}/audit",
      [service, journal](net::Request&& req, net::Responder r) {
        const std::string ns(req.PathParam("ns"));
        const std::string name(req.PathParam("name"));
        const auth::Principal& who = auth::CallerOf(req);
        if (!who.Sees(ns)) {
          return SendStatus(
              r,
              NotFoundError(fmt::format("sandboxes.{} \"{}\" not found", api::kAgentsGroup, name)),
              name);
        }
        auto limit = LimitOf(req);
        if (!limit.ok()) return SendStatus(r, limit.status(), name);
        auto obj = service->store().Get(api::SandboxKind(), ns, name);
        if (!obj.ok()) return SendStatus(r, obj.status(), name);
        auto key = JournalKeyOf(*obj);
        if (!key) {
          return SendStatus(
              r, NotFoundError(fmt::format("sandbox \"{}\" has no audit journal yet", name)), name);
        }
        auto entries = journal->Read(key->first, key->second, *limit);
        if (!entries.ok()) return SendStatus(r, entries.status(), name);
        r.Send(net::Response::Json(200, Items(*entries)));
      },
      route);
}

}  // namespace warren::server::e2b
