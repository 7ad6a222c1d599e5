#include "server/e2b/volumes_api.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "api/json.h"
#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/volume.h"
#include "api/validation.h"
#include "server/e2b/authed_route.h"
#include "server/e2b/errors.h"

namespace warren::server::e2b {
namespace {

using api::Json;

Json Info(const api::Object& v, bool with_token) {
  Json j = {{"volumeID", v.metadata.uid}, {"name", v.metadata.name}};
  if (with_token) j["token"] = "";
  return j;
}

// The caller's team's volume by uid (the SDK's volumeID) or name.
Result<api::Object> Find(store::Store& store, const auth::Principal& who, std::string_view id) {
  const std::string ns = who.team;
  if (api::CheckDns1123Subdomain(std::string(id)) == std::nullopt) {
    auto byName = store.Get(api::VolumeKind(), ns, id);
    if (byName.ok() || byName.status().code() != StatusCode::kNotFound) return byName;
  }
  store::ListOptions lo;
  lo.namespace_ = ns;
  ASSIGN_OR_RETURN(store::ObjectList list, store.List(api::VolumeKind(), lo));
  for (api::Object& v : list.items) {
    if (v.metadata.uid == id) return std::move(v);
  }
  return NotFoundError(fmt::format("volume \"{}\" not found", id));
}

net::Response Create(store::Store& store, const auth::Principal& who, const net::Request& req) {
  auto body = api::ParseJson(req.body);
  if (!body.ok() || !body->is_object()) {
    return ErrorResponse(400, "the body must be a JSON object {\"name\": string}");
  }
  auto name = body->find("name");
  if (name == body->end() || !name->is_string() || name->get<std::string>().empty()) {
    return ErrorResponse(400, "name is required (a string)");
  }
  const std::string n = name->get<std::string>();
  if (auto err = api::CheckDns1123Label(n)) {
    return ErrorResponse(400, fmt::format("name \"{}\" is not valid: {}", n, *err));
  }
  api::Object v;
  v.api_version = api::VolumeKind().ApiVersion();
  v.kind = "Volume";
  v.metadata.namespace_ = who.team;
  v.metadata.name = n;
  v.spec() = Json::object();
  auto created = store.Create(std::move(v));
  if (!created.ok()) {
    if (created.status().code() == StatusCode::kAlreadyExists) {
      return ErrorResponse(409, fmt::format("volume \"{}\" already exists", n));
    }
    return ErrorResponse(created.status());
  }
  return net::Response::Json(201, api::DumpJson(Info(*created, true)));
}

net::Response Delete(store::Store& store, NodeAccess* node, const auth::Principal& who,
                     std::string_view id) {
  auto v = Find(store, who, id);
  if (!v.ok()) return ErrorResponse(v.status());
  std::set<std::string> users;
  if (node != nullptr) {
    for (std::string& s : node->VolumeMountedBy(v->metadata.namespace_, v->metadata.name)) {
      users.insert(std::move(s));
    }
  }
  if (auto st = api::DecodeStatus<api::VolumeStatus>(*v); st.ok()) {
    users.insert(st->mounted_by.begin(), st->mounted_by.end());
  }
  if (!users.empty()) {
    return ErrorResponse(
        409, fmt::format("volume \"{}\" is mounted by sandbox {}; kill {} first", v->metadata.name,
                         fmt::join(users, ", "), users.size() == 1 ? "it" : "them"));
  }
  store::DeleteOptions options;
  options.preconditions.uid = v->metadata.uid;
  auto deleted = store.Delete(api::VolumeKind(), v->metadata.namespace_, v->metadata.name, options);
  if (!deleted.ok() && deleted.status().code() != StatusCode::kNotFound) {
    return ErrorResponse(deleted.status());
  }
  return net::Response::Empty(204);
}

}  // namespace

void RegisterVolumeRoutes(net::Router& router, store::Store& store, NodeAccess* node,
                          size_t max_body_bytes) {
  store::Store* s = &store;
  AddAuthedRoute(
      router, "POST", "/volumes", "create_volume", max_body_bytes,
      [s](const auth::Principal& who, const net::Request& req) { return Create(*s, who, req); });
  AddAuthedRoute(router, "GET", "/volumes", "list_volumes", max_body_bytes,
                 [s](const auth::Principal& who, const net::Request&) {
                   store::ListOptions lo;
                   lo.namespace_ = who.team;
                   auto list = s->List(api::VolumeKind(), lo);
                   if (!list.ok()) return ErrorResponse(list.status());
                   Json out = Json::array();
                   for (const api::Object& v : list->items) {
                     if (!v.metadata.deletion_timestamp) out.push_back(Info(v, false));
                   }
                   return net::Response::Json(200, api::DumpJson(out));
                 });
  AddAuthedRoute(router, "GET", "/volumes/{volumeID}", "get_volume", max_body_bytes,
                 [s](const auth::Principal& who, const net::Request& req) {
                   auto v = Find(*s, who, req.PathParam("volumeID"));
                   if (!v.ok()) return ErrorResponse(v.status());
                   return net::Response::Json(200, api::DumpJson(Info(*v, true)));
                 });
  AddAuthedRoute(router, "DELETE", "/volumes/{volumeID}", "delete_volume", max_body_bytes,
                 [s, node](const auth::Principal& who, const net::Request& req) {
                   return Delete(*s, node, who, req.PathParam("volumeID"));
                 });
}

}  // namespace warren::server::e2b
