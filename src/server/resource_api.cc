#include "server/resource_api.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "api/label_selector.h"
#include "api/merge_patch.h"
#include "api/object_codec.h"
#include "api/status_object.h"
#include "api/types/labels.h"
#include "api/yaml_codec.h"
#include "base/ids.h"
#include "base/log.h"
#include "base/strings.h"
#include "server/auth/route_guard.h"
#include "server/auth/tenant_policy.h"
#include "trace/object_context.h"

namespace warren::server {
namespace {

using api::Json;

// What a request addresses, from the route's captures.
struct Target {
  const api::KindInfo* kind = nullptr;
  std::string ns;    // "" for cluster-scoped kinds and cluster-wide lists
  std::string name;  // "" for collections
  api::StatusDetails details;
};

void SendJson(net::Responder& r, int code, const Json& body) {
  r.Send(net::Response::Json(code, api::DumpJson(body)));
}

void SendError(net::Responder& r, const Status& status, const api::StatusDetails& details = {}) {
  api::HttpError e = api::ToHttpError(status, details);
  SendJson(r, e.code, e.status);
}

void SendStatus(net::Responder& r, int code, std::string_view reason, std::string_view message,
                const api::StatusDetails& details = {}) {
  SendJson(r, code, api::MakeStatusObject(code, reason, message, details));
}

Result<Target> ResolveTarget(const api::KindRegistry& kinds, const net::Request& req,
                             bool object_route) {
  Target t;
  std::string group(req.PathParam("group"));
  std::string version(req.PathParam("version"));
  std::string plural(req.PathParam("plural"));
  t.kind = kinds.ForResource(group, version, plural);
  t.details.group = group;
  t.details.kind = plural;
  t.details.name = std::string(req.PathParam("name"));
  if (t.kind == nullptr) {
    return NotFoundError(
        fmt::format("the server could not find the requested resource: no resource \"{}\" in {}/{}",
                    plural, group, version));
  }
  bool namespaced_route = req.path_params.count("ns") > 0;
  if (namespaced_route && !t.kind->namespaced) {
    return NotFoundError(fmt::format("{} is cluster-scoped: use /apis/{}/{}/{}", t.kind->Resource(),
                                     group, version, plural));
  }
  if (object_route && !namespaced_route && t.kind->namespaced) {
    return NotFoundError(
        fmt::format("{} is namespaced: use /apis/{}/{}/namespaces/{{namespace}}/{}",
                    t.kind->Resource(), group, version, plural));
  }
  if (namespaced_route) t.ns = std::string(req.PathParam("ns"));
  t.name = t.details.name;
  return t;
}

bool IsYaml(const net::Request& req) {
  auto ct = req.headers.Get("Content-Type");
  if (!ct) return false;
  std::string lower = base::AsciiLower(*ct);
  return lower.find("yaml") != std::string::npos;
}

Result<Json> ParseBody(const net::Request& req) {
  if (base::TrimSpace(req.body).empty()) return InvalidArgumentError("the request body is empty");
  if (IsYaml(req)) return api::ParseYaml(req.body);
  return api::ParseJson(req.body);
}

// The object in a POST/PUT body, checked against the URL.
Result<api::Object> DecodeObject(const net::Request& req, const Target& t) {
  ASSIGN_OR_RETURN(Json doc, ParseBody(req));
  ASSIGN_OR_RETURN(api::Object obj, api::ObjectFromJson(std::move(doc)));
  const api::KindInfo& kind = *t.kind;
  if (obj.api_version.empty()) obj.api_version = kind.ApiVersion();
  if (obj.kind.empty()) obj.kind = kind.kind;
  if (obj.api_version != kind.ApiVersion() || obj.kind != kind.kind) {
    return InvalidArgumentError(
        fmt::format("the object in the body is {} {}, but the request is for {} {}",
                    obj.api_version, obj.kind, kind.ApiVersion(), kind.kind));
  }
  if (kind.namespaced) {
    if (obj.metadata.namespace_.empty()) obj.metadata.namespace_ = t.ns;
    if (obj.metadata.namespace_ != t.ns) {
      return InvalidArgumentError(fmt::format(
          "the namespace of the provided object ({}) does not match the namespace sent on the "
          "request ({})",
          obj.metadata.namespace_, t.ns));
    }
  }
  if (!t.name.empty()) {
    if (obj.metadata.name.empty()) obj.metadata.name = t.name;
    if (obj.metadata.name != t.name) {
      return InvalidArgumentError(
          fmt::format("the name of the object ({}) does not match the name on the URL ({})",
                      obj.metadata.name, t.name));
    }
  }
  return obj;
}

// A merge patch body; other patch types are 415.
Result<Json> DecodePatch(const net::Request& req, bool& unsupported_type) {
  unsupported_type = false;
  std::string ct = base::AsciiLower(req.headers.Get("Content-Type").value_or("application/json"));
  if (ct.find("json-patch") != std::string::npos ||
      ct.find("strategic-merge-patch") != std::string::npos ||
      ct.find("apply-patch") != std::string::npos) {
    unsupported_type = true;
    return InvalidArgumentError(fmt::format(
        "the patch type \"{}\" is not supported; use application/merge-patch+json", ct));
  }
  ASSIGN_OR_RETURN(Json patch, ParseBody(req));
  if (!patch.is_object()) {
    return InvalidArgumentError(
        fmt::format("a merge patch must be a JSON object, got {}", api::JsonTypeName(patch)));
  }
  return patch;
}

// The merge patch of a PATCH request; when it has none, answers the request (415 for a patch
// type we do not take, else the error) and returns nullopt.
std::optional<Json> PatchOrAnswer(const net::Request& req, net::Responder& r,
                                  const api::StatusDetails& details) {
  bool unsupported = false;
  auto patch = DecodePatch(req, unsupported);
  if (unsupported) {
    SendStatus(r, 415, "UnsupportedMediaType", patch.status().message(), details);
    return std::nullopt;
  }
  if (!patch.ok()) {
    SendError(r, patch.status(), details);
    return std::nullopt;
  }
  return std::move(*patch);
}

Json ScaleOf(const api::Object& obj) {
  Json meta = {{"name", obj.metadata.name},
               {"uid", obj.metadata.uid},
               {"resourceVersion", std::to_string(obj.metadata.resource_version)}};
  if (!obj.metadata.namespace_.empty()) meta["namespace"] = obj.metadata.namespace_;
  const Json& spec = obj.spec();
  const Json& status = obj.status();
  Json scale = {{"apiVersion", "autoscaling/v1"},
                {"kind", "Scale"},
                {"metadata", meta},
                {"spec", {{"replicas", spec.is_object() ? spec.value("replicas", 0) : 0}}},
                {"status", {{"replicas", status.is_object() ? status.value("replicas", 0) : 0}}}};
  if (status.is_object() && status.contains("selector") && status["selector"].is_string()) {
    scale["status"]["selector"] = status["selector"];
  }
  return scale;
}

Result<int64_t> ParseRevision(std::string_view text, std::string_view what) {
  auto v = base::ParseInt64(text);
  if (!v || *v < 0) {
    return InvalidArgumentError(
        fmt::format("invalid {} \"{}\": must be a non-negative decimal revision", what, text));
  }
  return *v;
}

bool IsTrue(const std::optional<std::string>& v) {
  return v && (*v == "1" || *v == "true" || *v == "True");
}

Json EventLine(store::EventType type, const api::Object& obj) {
  return {{"type", store::EventTypeName(type)}, {"object", api::ObjectToJson(obj)}};
}

// A team key's patch, judged on what it makes of the stored object and written only over the
// revision judged: a write in between (a claim sealing a token, say) makes it judge again, so
// the check and the write see the same object. An admin's patch goes straight to the store.
Result<api::Object> PatchChecked(store::Store& store, const base::Principal& who,
                                 const api::KindInfo& kind, const Target& t, const Json& patch) {
  if (who.admin) return store.Patch(kind, t.ns, t.name, patch);
  const bool caller_pinned = patch.is_object() && patch.contains("metadata") &&
                             patch["metadata"].is_object() &&
                             patch["metadata"].contains("resourceVersion");
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    auto current = store.Get(kind, t.ns, t.name);
    if (!current.ok()) return current.status();
    auto judged = auth::TenantPatchResult(who, kind, *current, patch);
    if (!judged.ok()) return judged.status();
    Json pinned = patch;
    if (!caller_pinned) {
      pinned["metadata"]["resourceVersion"] = std::to_string(current->metadata.resource_version);
    }
    auto patched = store.Patch(kind, t.ns, t.name, pinned);
    if (patched.ok() || caller_pinned || attempt == kAttempts ||
        patched.status().code() != StatusCode::kAborted) {
      return patched;
    }
  }
}

// A team key's update, judged against what is stored and written only over the revision judged
// (retried as PatchChecked is when the caller named no revision). An admin's needs no read.
Result<api::Object> UpdateChecked(store::Store& store, const base::Principal& who,
                                  const api::KindInfo& kind, const Target& t, api::Object obj,
                                  store::Subresource subresource) {
  const bool status = subresource == store::Subresource::kStatus;
  if (who.admin) return store.Update(std::move(obj), subresource);
  const bool caller_pinned = obj.metadata.resource_version != 0;
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    auto current = store.Get(kind, t.ns, t.name);
    if (!current.ok()) return current.status();
    if (Status s = auth::CheckTenantWrite(who, kind, &*current, obj, status); !s.ok()) return s;
    api::Object pinned = obj;
    if (!caller_pinned) pinned.metadata.resource_version = current->metadata.resource_version;
    auto updated = store.Update(std::move(pinned), subresource);
    if (updated.ok() || caller_pinned || attempt == kAttempts ||
        updated.status().code() != StatusCode::kAborted) {
      return updated;
    }
  }
}

}  // namespace

// One open watch stream. Owned by ResourceApi::watches_ until its stream closes; the store's
// callbacks reach it through a weak pointer.
struct ResourceApi::WatchSession {
  std::mutex mu;
  std::shared_ptr<net::ResponseStream> stream;  // guarded by mu; null until the replay is done
  std::string pending;                          // guarded by mu: lines before the stream exists
  std::unique_ptr<store::Subscription> subscription;

  void WriteLine(const Json& line) {
    std::string text = api::DumpJson(line) + "\n";
    std::lock_guard lock(mu);
    if (!stream) {
      pending += text;
    } else if (!stream->Write(std::move(text)) && subscription) {
      subscription->CancelAsync();  // the client is gone
    }
  }
};

ResourceApi::ResourceApi(store::Store& store, const api::KindRegistry& kinds,
                         const api::SandboxSecrets& secrets, controller::QuotaGate* quota,
                         size_t max_body_bytes)
    : store_(store),
      kinds_(kinds),
      secrets_(secrets),
      quota_(quota),
      max_body_bytes_(max_body_bytes) {}

Status ResourceApi::PrepareSandbox(api::Object& sandbox) {
  auto id = sandbox.metadata.labels.find(api::labels::kSandboxId);
  if (id != sandbox.metadata.labels.end() && !id->second.empty()) {
    store::ListOptions options;
    ASSIGN_OR_RETURN(options.label_selector, api::LabelSelector::Parse(fmt::format(
                                                 "{}={}", api::labels::kSandboxId, id->second)));
    ASSIGN_OR_RETURN(auto holders, store_.List(api::SandboxKind(), options));
    if (!holders.items.empty()) {
      return AlreadyExistsError(
          fmt::format("sandbox id \"{}\" is taken by another Sandbox", id->second));
    }
  }
  ASSIGN_OR_RETURN(std::string token, secrets_.AccessToken(sandbox));
  if (token.empty()) {
    token = base::RandomHex(32);
    secrets_.SetAccessToken(sandbox, token);
    secrets_.SetInitRequest(sandbox, api::DumpJson({{"accessToken", token}}));
  }
  return Status::Ok();
}

ResourceApi::~ResourceApi() { Shutdown(); }

void ResourceApi::Shutdown() {
  std::set<std::shared_ptr<WatchSession>> sessions;
  {
    std::lock_guard lock(mu_);
    sessions.swap(watches_);
  }
  for (const auto& s : sessions) {
    if (s->subscription) s->subscription->Cancel();
    std::lock_guard lock(s->mu);
    if (s->stream) s->stream->Finish();
  }
}

void ResourceApi::Register(net::Router& router) {
  // Bodies up to 4x our limit reach the handler, which answers 413 with a Status object;
  // anything larger gets the HTTP server's plain 413.
  net::RouteOptions blocking{.blocking = true, .max_body_bytes = max_body_bytes_ * 4};
  auto bind = [this](void (ResourceApi::*method)(net::Request&&, net::Responder)) {
    return [this, method](net::Request&& req, net::Responder r) {
      (this->*method)(std::move(req), std::move(r));
    };
  };
  router.Add("GET", "/apis", bind(&ResourceApi::HandleDiscovery), blocking);
  router.Add("GET", "/apis/{group}/{version}", bind(&ResourceApi::HandleDiscovery), blocking);
  for (std::string prefix :
       {"/apis/{group}/{version}", "/apis/{group}/{version}/namespaces/{ns}"}) {
    std::string collection = prefix + "/{plural}";
    std::string object = collection + "/{name}";
    for (const char* m : {"GET", "POST"}) {
      router.Add(m, collection, bind(&ResourceApi::HandleCollection), blocking);
    }
    for (const char* m : {"GET", "PUT", "PATCH", "DELETE"}) {
      router.Add(m, object, bind(&ResourceApi::HandleObject), blocking);
    }
    for (const char* m : {"GET", "PUT", "PATCH"}) {
      router.Add(m, object + "/status", bind(&ResourceApi::HandleStatus), blocking);
      router.Add(m, object + "/scale", bind(&ResourceApi::HandleScale), blocking);
    }
  }
}

void ResourceApi::HandleDiscovery(net::Request&& req, net::Responder r) {
  if (req.path_params.count("group") == 0) {
    std::map<std::string, std::set<std::string>> groups;
    for (const api::KindInfo* k : kinds_.All()) groups[k->group].insert(k->version);
    Json list = Json::array();
    for (const auto& [group, versions] : groups) {
      Json vs = Json::array();
      for (const auto& v : versions) {
        vs.push_back({{"groupVersion", group + "/" + v}, {"version", v}});
      }
      list.push_back({{"name", group}, {"versions", vs}, {"preferredVersion", vs[0]}});
    }
    SendJson(r, 200, {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}});
    return;
  }
  std::string group(req.PathParam("group"));
  std::string version(req.PathParam("version"));
  Json resources = Json::array();
  for (const api::KindInfo* k : kinds_.All()) {
    if (k->group != group || k->version != version) continue;
    resources.push_back({{"name", k->plural},
                         {"singularName", k->singular},
                         {"namespaced", k->namespaced},
                         {"kind", k->kind},
                         {"verbs", {"create", "delete", "get", "list", "patch", "update", "watch"}},
                         {"shortNames", k->short_names}});
    if (k->status_subresource) {
      resources.push_back({{"name", k->plural + "/status"},
                           {"namespaced", k->namespaced},
                           {"kind", k->kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
    if (k->scale_subresource) {
      resources.push_back({{"name", k->plural + "/scale"},
                           {"namespaced", k->namespaced},
                           {"group", "autoscaling"},
                           {"version", "v1"},
                           {"kind", "Scale"},
                           {"verbs", {"get", "patch", "update"}}});
    }
  }
  if (resources.empty()) {
    SendStatus(r, 404, "NotFound",
               fmt::format("the server could not find the requested resource: no group version "
                           "{}/{}",
                           group, version));
    return;
  }
  SendJson(r, 200,
           {{"kind", "APIResourceList"},
            {"apiVersion", "v1"},
            {"groupVersion", group + "/" + version},
            {"resources", resources}});
}

void ResourceApi::HandleCollection(net::Request&& req, net::Responder r) {
  auto target = ResolveTarget(kinds_, req, /*object_route=*/false);
  if (!target.ok()) return SendError(r, target.status());
  const Target& t = *target;
  const api::KindInfo& kind = *t.kind;
  const base::Principal& who = auth::CallerOf(req);
  const auth::Verb verb = req.method == "POST" ? auth::Verb::kWrite : auth::Verb::kRead;
  if (Status s = auth::CheckTenantScope(who, kind, t.ns, "", verb); !s.ok()) {
    return SendError(r, s, t.details);
  }
  // A team key's list or watch across namespaces is its own namespace's.
  const std::string ns = t.ns.empty() && kind.namespaced && !who.admin ? who.team : t.ns;

  if (req.method == "POST") {
    if (kind.namespaced && t.ns.empty()) {
      return SendStatus(r, 405, "MethodNotAllowed",
                        fmt::format("{} is namespaced: POST to "
                                    "/apis/{}/{}/namespaces/{{namespace}}/{}",
                                    kind.Resource(), kind.group, kind.version, kind.plural),
                        t.details);
    }
    if (req.body.size() > max_body_bytes_) {
      return SendStatus(r, 413, "RequestEntityTooLarge",
                        fmt::format("request body is {} bytes; the limit is {}", req.body.size(),
                                    max_body_bytes_),
                        t.details);
    }
    auto obj = DecodeObject(req, t);
    if (!obj.ok()) return SendError(r, obj.status(), t.details);
    api::StatusDetails details = t.details;
    details.name = obj->metadata.name;
    if (Status s = auth::CheckTenantWrite(who, kind, nullptr, *obj, false); !s.ok()) {
      return SendError(r, s, details);
    }
    if (kind.group == api::kAgentsGroup && kind.kind == "Sandbox") {
      // The sealed token is bound to the name: pick it now when the store would have.
      if (obj->metadata.name.empty() && !obj->metadata.generate_name.empty()) {
        obj->metadata.name = obj->metadata.generate_name + base::GenerateNameSuffix();
        details.name = obj->metadata.name;
      }
      if (Status s = PrepareSandbox(*obj); !s.ok()) return SendError(r, s, details);
      // The node agent's work for it is traced under this request (node/README.md).
      trace::CarryContext(*obj);
      auto reservation = controller::QuotaReservation::Take(quota_, *obj);
      if (!reservation.ok()) {
        // Kubernetes' words and code for a create over quota.
        return SendError(
            r,
            PermissionDeniedError(fmt::format("{} \"{}\" is forbidden: {}", kind.Resource(),
                                              obj->metadata.name, reservation.status().message())),
            details);
      }
      auto created = store_.Create(std::move(*obj));
      if (!created.ok()) return SendError(r, created.status(), details);
      reservation->Keep();
      Audit(who, kind, *created, "create", 201);
      return SendJson(r, 201, api::ObjectToJson(*created));
    }
    if (kind.group == api::kAgentsGroup && kind.kind == "SandboxClaim") {
      // Its claims are traced under this request (controller/sandboxclaim_controller.cc).
      trace::CarryContext(*obj);
    }
    auto created = store_.Create(std::move(*obj));
    if (!created.ok()) return SendError(r, created.status(), details);
    AwaitQuotaInForce(kind, *created);
    return SendJson(r, 201, api::ObjectToJson(*created));
  }

  if (IsTrue(req.Query("watch"))) return StartWatch(kind, ns, req, r);

  store::ListOptions options;
  options.namespace_ = ns;
  if (auto v = req.Query("labelSelector"); v && !v->empty()) {
    auto sel = api::LabelSelector::Parse(*v);
    if (!sel.ok()) return SendError(r, sel.status(), t.details);
    options.label_selector = std::move(*sel);
  }
  if (auto v = req.Query("fieldSelector"); v && !v->empty()) {
    auto sel = api::FieldSelector::Parse(*v);
    if (!sel.ok()) return SendError(r, sel.status(), t.details);
    options.field_selector = std::move(*sel);
  }
  if (auto v = req.Query("limit"); v && !v->empty()) {
    auto limit = base::ParseInt64(*v);
    if (!limit || *limit < 0) {
      return SendError(r, InvalidArgumentError(fmt::format("invalid limit \"{}\"", *v)), t.details);
    }
    options.limit = *limit;
  }
  if (auto v = req.Query("continue")) options.continue_token = *v;
  auto list = store_.List(kind, options);
  if (!list.ok()) return SendError(r, list.status(), t.details);
  Json items = Json::array();
  for (const auto& o : list->items) items.push_back(api::ObjectToJson(o));
  Json meta = {{"resourceVersion", std::to_string(list->resource_version)}};
  if (!list->continue_token.empty()) meta["continue"] = list->continue_token;
  SendJson(r, 200,
           {{"apiVersion", kind.ApiVersion()},
            {"kind", kind.kind + "List"},
            {"metadata", meta},
            {"items", std::move(items)}});
}

void ResourceApi::StartWatch(const api::KindInfo& kind, const std::string& ns, net::Request& req,
                             net::Responder& r) {
  store::WatchOptions options;
  options.namespace_ = ns;
  if (auto v = req.Query("labelSelector"); v && !v->empty()) {
    auto sel = api::LabelSelector::Parse(*v);
    if (!sel.ok()) return SendError(r, sel.status());
    options.label_selector = std::move(*sel);
  }
  if (auto v = req.Query("fieldSelector"); v && !v->empty()) {
    auto sel = api::FieldSelector::Parse(*v);
    if (!sel.ok()) return SendError(r, sel.status());
    options.field_selector = std::move(*sel);
  }
  if (auto v = req.Query("resourceVersion"); v && !v->empty() && *v != "0") {
    auto rv = ParseRevision(*v, "resourceVersion");
    if (!rv.ok()) return SendError(r, rv.status());
    options.resource_version = *rv;
  }
  auto session = std::make_shared<WatchSession>();
  std::weak_ptr<WatchSession> weak = session;
  store::WatchSink sink;
  sink.on_event = [weak](const store::WatchEvent& e) {
    if (auto s = weak.lock()) s->WriteLine(EventLine(e.type, *e.object));
  };
  sink.on_close = [weak](const Status& status) {
    auto s = weak.lock();
    if (!s) return;
    api::HttpError e = api::ToHttpError(status);
    s->WriteLine({{"type", "ERROR"}, {"object", e.status}});
    std::lock_guard lock(s->mu);
    if (s->stream) s->stream->Finish();
  };
  // The replay (history or the current objects) runs here and is buffered; a watch that cannot
  // start (410 Gone, bad revision) gets a plain error response.
  auto subscription = store_.Subscribe(&kind, std::move(options), std::move(sink));
  if (!subscription.ok()) return SendError(r, subscription.status());
  session->subscription = std::move(*subscription);
  {
    std::lock_guard lock(mu_);
    watches_.insert(session);
  }
  net::Headers headers;
  headers.Set("Content-Type", "application/json");
  auto stream = r.Stream(200, headers);
  {
    std::lock_guard lock(session->mu);
    session->stream = stream;
    if (!session->pending.empty()) {
      stream->Write(std::move(session->pending));
      session->pending.clear();
    }
  }
  stream->OnClose([this, weak] {
    auto s = weak.lock();
    if (!s) return;
    if (s->subscription) s->subscription->CancelAsync();
    std::lock_guard lock(mu_);
    watches_.erase(s);
  });
}

void ResourceApi::HandleObject(net::Request&& req, net::Responder r) {
  auto target = ResolveTarget(kinds_, req, /*object_route=*/true);
  if (!target.ok()) return SendError(r, target.status());
  const Target& t = *target;
  const api::KindInfo& kind = *t.kind;
  if (req.body.size() > max_body_bytes_) {
    return SendStatus(
        r, 413, "RequestEntityTooLarge",
        fmt::format("request body is {} bytes; the limit is {}", req.body.size(), max_body_bytes_),
        t.details);
  }
  const base::Principal& who = auth::CallerOf(req);
  if (Status s = auth::CheckTenantScope(
          who, kind, t.ns, t.name, req.method == "GET" ? auth::Verb::kRead : auth::Verb::kWrite);
      !s.ok()) {
    return SendError(r, s, t.details);
  }
  if (req.method == "GET") {
    auto obj = store_.Get(kind, t.ns, t.name);
    if (!obj.ok()) return SendError(r, obj.status(), t.details);
    return SendJson(r, 200, api::ObjectToJson(*obj));
  }
  if (req.method == "PUT") {
    auto obj = DecodeObject(req, t);
    if (!obj.ok()) return SendError(r, obj.status(), t.details);
    auto updated = UpdateChecked(store_, who, kind, t, std::move(*obj), store::Subresource::kMain);
    if (!updated.ok()) return SendError(r, updated.status(), t.details);
    AwaitQuotaInForce(kind, *updated);
    Audit(who, kind, *updated, "update", 200);
    return SendJson(r, 200, api::ObjectToJson(*updated));
  }
  if (req.method == "PATCH") {
    auto patch = PatchOrAnswer(req, r, t.details);
    if (!patch) return;
    auto patched = PatchChecked(store_, who, kind, t, *patch);
    if (!patched.ok()) return SendError(r, patched.status(), t.details);
    AwaitQuotaInForce(kind, *patched);
    Audit(who, kind, *patched, "patch", 200);
    return SendJson(r, 200, api::ObjectToJson(*patched));
  }
  // DELETE, with options from the query or a DeleteOptions body.
  store::DeleteOptions options;
  std::string policy = req.Query("propagationPolicy").value_or("");
  if (!base::TrimSpace(req.body).empty()) {
    auto body = ParseBody(req);
    if (!body.ok()) return SendError(r, body.status(), t.details);
    if (body->is_object()) {
      if ((*body)["propagationPolicy"].is_string()) {
        policy = (*body)["propagationPolicy"].get<std::string>();
      }
      const Json& pre = (*body)["preconditions"];
      if (pre.is_object()) {
        if (pre["uid"].is_string()) options.preconditions.uid = pre["uid"].get<std::string>();
        if (pre["resourceVersion"].is_string()) {
          auto rv = ParseRevision(pre["resourceVersion"].get<std::string>(),
                                  "preconditions.resourceVersion");
          if (!rv.ok()) return SendError(r, rv.status(), t.details);
          options.preconditions.resource_version = *rv;
        }
      }
    }
  }
  if (policy == "Orphan") {
    options.propagation = store::Propagation::kOrphan;
  } else if (!policy.empty() && policy != "Background") {
    return SendError(
        r,
        InvalidArgumentError(fmt::format(
            "propagationPolicy \"{}\" is not supported: use Background or Orphan", policy)),
        t.details);
  }
  auto deleted = store_.Delete(kind, t.ns, t.name, options);
  if (!deleted.ok()) return SendError(r, deleted.status(), t.details);
  Audit(who, kind, *deleted, "delete", 200);
  SendJson(r, 200, api::ObjectToJson(*deleted));
}

void ResourceApi::AwaitQuotaInForce(const api::KindInfo& kind, const api::Object& written) {
  if (quota_ != nullptr && &kind == &api::ResourceQuotaKind()) {
    quota_->AwaitQuotaRevision(written.metadata.resource_version);
  }
}

void ResourceApi::Audit(const base::Principal& who, const api::KindInfo& kind,
                        const api::Object& obj, std::string_view verb, int status) {
  if (audit_ == nullptr || kind.group != api::kAgentsGroup || kind.kind != "Sandbox") return;
  auto id = obj.metadata.labels.find(api::labels::kSandboxId);
  if (id == obj.metadata.labels.end()) return;
  Json entry{{"source", "api"},
             {"actor", who.key_name},
             {"keyId", who.key_id},
             {"team", who.team},
             {"action", fmt::format("resource.{}", verb)},
             {"status", status}};
  audit_->Post(obj.metadata.namespace_, id->second, std::move(entry));
}

void ResourceApi::HandleStatus(net::Request&& req, net::Responder r) {
  auto target = ResolveTarget(kinds_, req, /*object_route=*/true);
  if (!target.ok()) return SendError(r, target.status());
  const Target& t = *target;
  const api::KindInfo& kind = *t.kind;
  if (!kind.status_subresource) {
    return SendStatus(r, 404, "NotFound",
                      fmt::format("{} has no status subresource", kind.Resource()), t.details);
  }
  if (req.body.size() > max_body_bytes_) {
    return SendStatus(
        r, 413, "RequestEntityTooLarge",
        fmt::format("request body is {} bytes; the limit is {}", req.body.size(), max_body_bytes_),
        t.details);
  }
  const base::Principal& who = auth::CallerOf(req);
  if (Status s = auth::CheckTenantScope(
          who, kind, t.ns, t.name, req.method == "GET" ? auth::Verb::kRead : auth::Verb::kWrite);
      !s.ok()) {
    return SendError(r, s, t.details);
  }
  Result<api::Object> result = InternalError("unreachable");
  if (req.method == "GET") {
    result = store_.Get(kind, t.ns, t.name);
  } else if (req.method == "PUT") {
    auto obj = DecodeObject(req, t);
    if (!obj.ok()) return SendError(r, obj.status(), t.details);
    result = UpdateChecked(store_, who, kind, t, std::move(*obj), store::Subresource::kStatus);
  } else {
    auto patch = PatchOrAnswer(req, r, t.details);
    if (!patch) return;
    if (Status s = auth::CheckTenantPatch(who, kind, *patch, /*status=*/true); !s.ok()) {
      return SendError(r, s, t.details);
    }
    result = store_.Patch(kind, t.ns, t.name, *patch, store::Subresource::kStatus);
  }
  if (!result.ok()) return SendError(r, result.status(), t.details);
  SendJson(r, 200, api::ObjectToJson(*result));
}

void ResourceApi::HandleScale(net::Request&& req, net::Responder r) {
  auto target = ResolveTarget(kinds_, req, /*object_route=*/true);
  if (!target.ok()) return SendError(r, target.status());
  const Target& t = *target;
  const api::KindInfo& kind = *t.kind;
  if (!kind.scale_subresource) {
    return SendStatus(r, 404, "NotFound",
                      fmt::format("{} has no scale subresource", kind.Resource()), t.details);
  }
  if (Status s =
          auth::CheckTenantScope(auth::CallerOf(req), kind, t.ns, t.name,
                                 req.method == "GET" ? auth::Verb::kRead : auth::Verb::kWrite);
      !s.ok()) {
    return SendError(r, s, t.details);
  }
  auto current = store_.Get(kind, t.ns, t.name);
  if (!current.ok()) return SendError(r, current.status(), t.details);
  if (req.method == "GET") return SendJson(r, 200, ScaleOf(*current));

  // PUT sends a Scale; PATCH a merge patch of one. A resourceVersion the client sent is a
  // precondition.
  Json scale = ScaleOf(*current);
  Json user_rv;
  if (req.method == "PUT") {
    auto body = ParseBody(req);
    if (!body.ok()) return SendError(r, body.status(), t.details);
    scale = std::move(*body);
    if (scale.is_object() && scale["metadata"].is_object()) {
      user_rv = scale["metadata"].value("resourceVersion", Json());
    }
  } else {
    auto patch = PatchOrAnswer(req, r, t.details);
    if (!patch) return;
    if ((*patch)["metadata"].is_object()) {
      user_rv = (*patch)["metadata"].value("resourceVersion", Json());
    }
    api::ApplyMergePatch(scale, *patch);
  }
  if (!scale.is_object() || !scale["spec"].is_object() ||
      !scale["spec"]["replicas"].is_number_integer() ||
      scale["spec"]["replicas"].get<int64_t>() < 0) {
    return SendStatus(r, 422, "Invalid",
                      fmt::format("Scale.autoscaling \"{}\" is invalid: spec.replicas: must be "
                                  "an integer >= 0",
                                  t.name),
                      t.details);
  }
  Json patch = {{"spec", {{"replicas", scale["spec"]["replicas"]}}}};
  if (user_rv.is_string()) patch["metadata"] = {{"resourceVersion", user_rv}};
  auto patched = store_.Patch(kind, t.ns, t.name, patch);
  if (!patched.ok()) return SendError(r, patched.status(), t.details);
  SendJson(r, 200, ScaleOf(*patched));
}

}  // namespace warren::server
