#include "server/e2b/api_keys_api.h"

#include <fmt/format.h>

#include "api/json.h"
#include "base/strings.h"
#include "base/time_format.h"
#include "server/e2b/authed_route.h"
#include "server/e2b/errors.h"

namespace warren::server::e2b {
namespace {

using api::Json;

constexpr size_t kMaxBody = 64 * 1024;

Json KeyJson(const auth::ApiKeyRecord& r) {
  return {{"id", r.id},       {"name", r.name}, {"team", r.team},
          {"admin", r.admin}, {"mask", r.mask}, {"createdAt", base::FormatRfc3339(r.created_at)}};
}

net::Response CreateKey(auth::KeyStore& keys, const auth::Principal& who, const net::Request& req) {
  Json body = Json::object();
  if (!base::TrimSpace(req.body).empty()) {
    auto parsed = api::ParseJson(req.body);
    if (!parsed.ok()) return ErrorResponse(400, "invalid JSON body: " + parsed.status().message());
    if (!parsed->is_object()) return ErrorResponse(400, "the request body must be a JSON object");
    body = std::move(*parsed);
  }
  auth::NewKeyOptions options;
  for (const char* field : {"name", "team", "teamName"}) {
    if (body.contains(field) && !body[field].is_null() && !body[field].is_string()) {
      return ErrorResponse(400, fmt::format("{} must be a string", field));
    }
  }
  if (body.contains("admin") && !body["admin"].is_null() && !body["admin"].is_boolean()) {
    return ErrorResponse(400, "admin must be a boolean");
  }
  // Checked above: each is absent, null or of the right type.
  auto str = [&](const char* field) {
    return body.contains(field) && body[field].is_string() ? body[field].get<std::string>() : "";
  };
  options.name = str("name");
  options.team = str("team");
  if (options.team.empty()) options.team = str("teamName");
  if (options.team.empty()) options.team = who.team;
  options.admin = body.contains("admin") && body["admin"].is_boolean() && body["admin"].get<bool>();
  if (!who.admin && (options.admin || options.team != who.team)) {
    return ErrorResponse(403, fmt::format("API key {} may only create keys for its own team "
                                          "\"{}\" (an admin key can create others)",
                                          who.key_name, who.team));
  }
  auto created = keys.Create(options);
  if (!created.ok()) return ErrorResponse(created.status());
  Json out = KeyJson(created->record);
  out["key"] = created->key;
  return net::Response::Json(201, api::DumpJson(out));
}

net::Response ListKeys(auth::KeyStore& keys, const auth::Principal& who) {
  auto list = keys.List();
  if (!list.ok()) return ErrorResponse(list.status());
  Json out = Json::array();
  for (const auto& r : *list) {
    if (who.admin || r.team == who.team) out.push_back(KeyJson(r));
  }
  return net::Response::Json(200, api::DumpJson(out));
}

net::Response DeleteKey(auth::KeyStore& keys, const auth::Principal& who,
                        std::string_view id_or_name) {
  auto list = keys.List();
  if (!list.ok()) return ErrorResponse(list.status());
  const auth::ApiKeyRecord* target = nullptr;
  for (const auto& r : *list) {
    if (r.id == id_or_name || r.name == id_or_name) target = &r;
  }
  if (target == nullptr || (!who.admin && target->team != who.team)) {
    return ErrorResponse(404, fmt::format("API key \"{}\" not found", id_or_name));
  }
  if (!who.admin && target->admin) {
    return ErrorResponse(403, "only an admin key may remove an admin key");
  }
  Status s = keys.Remove(target->id);
  return s.ok() ? net::Response::Empty(204) : ErrorResponse(s);
}

}  // namespace

void RegisterApiKeyRoutes(net::Router& router, std::shared_ptr<auth::KeyStore> keys) {
  AddAuthedRoute(
      router, "GET", "/api-keys", "list_api_keys", kMaxBody,
      [keys](const auth::Principal& who, const net::Request&) { return ListKeys(*keys, who); });
  AddAuthedRoute(router, "POST", "/api-keys", "create_api_key", kMaxBody,
                 [keys](const auth::Principal& who, const net::Request& req) {
                   return CreateKey(*keys, who, req);
                 });
  AddAuthedRoute(router, "DELETE", "/api-keys/{id}", "delete_api_key", kMaxBody,
                 [keys](const auth::Principal& who, const net::Request& req) {
                   return DeleteKey(*keys, who, req.PathParam("id"));
                 });
}

}  // namespace warren::server::e2b
