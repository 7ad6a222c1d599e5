#include "server/e2b/volumes_api.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <set>
#include <tuple>

#include "api/json.h"
#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/volume.h"
#include "api/validation.h"
#include "base/encoding.h"
#include "base/strings.h"
#include "base/time_format.h"
#include "server/e2b/authed_route.h"
#include "server/e2b/errors.h"
#include "server/e2b/volume_files.h"

namespace warren::server::e2b {
namespace {

using api::Json;

Json Info(const api::Object& v) {
  return {{"volumeID", v.metadata.uid}, {"name", v.metadata.name}};
}

Json InfoWithToken(const api::Object& v, const api::SandboxSecrets& secrets) {
  Json j = Info(v);
  j["token"] = secrets.VolumeToken(v);
  return j;
}

// The caller's team's volume by uid (the SDK's volumeID) or name; one being deleted is gone
// already, as in the list.
Result<api::Object> Find(store::Store& store, const auth::Principal& who, std::string_view id) {
  const std::string ns = who.team;
  auto live = [&](Result<api::Object> v) -> Result<api::Object> {
    if (v.ok() && v->metadata.deletion_timestamp) {
      return NotFoundError(fmt::format("volume \"{}\" not found (being deleted)", id));
    }
    return v;
  };
  if (api::CheckDns1123Subdomain(std::string(id)) == std::nullopt) {
    auto byName = store.Get(api::VolumeKind(), ns, id);
    if (byName.ok() || byName.status().code() != StatusCode::kNotFound) return live(byName);
  }
  store::ListOptions lo;
  lo.namespace_ = ns;
  ASSIGN_OR_RETURN(store::ObjectList list, store.List(api::VolumeKind(), lo));
  for (api::Object& v : list.items) {
    if (v.metadata.uid == id) return live(std::move(v));
  }
  return NotFoundError(fmt::format("volume \"{}\" not found", id));
}

net::Response Create(store::Store& store, const api::SandboxSecrets& secrets,
                     const auth::Principal& who, const net::Request& req) {
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
      auto existing = store.Get(api::VolumeKind(), who.team, n);
      if (existing.ok() && existing->metadata.deletion_timestamp) {
        return ErrorResponse(409, fmt::format("volume \"{}\" is being deleted; try again once "
                                              "it is gone",
                                              n));
      }
      return ErrorResponse(409, fmt::format("volume \"{}\" already exists", n));
    }
    return ErrorResponse(created.status());
  }
  return net::Response::Json(201, api::DumpJson(InfoWithToken(*created, secrets)));
}

// Whether a Sandbox object with E2B id `sandbox_id` is in `ns` and not being deleted (true
// when unsure: the store could not say).
bool LiveSandbox(store::Store& store, const std::string& ns, const std::string& sandbox_id) {
  store::ListOptions lo;
  lo.namespace_ = ns;
  auto selector =
      api::LabelSelector::Parse(fmt::format("{}={}", api::labels::kSandboxId, sandbox_id));
  if (!selector.ok()) return true;
  lo.label_selector = *selector;
  auto list = store.List(api::SandboxKind(), lo);
  if (!list.ok()) return true;
  for (const api::Object& o : list->items) {
    if (!o.metadata.deletion_timestamp) return true;
  }
  return false;
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
  // A sandbox already killed (its object being deleted, or gone) is on its way out: the
  // deletion waits for it on the node (the finalizer), so a kill then a destroy just works.
  std::erase_if(users, [&](const std::string& sandbox_id) {
    return !LiveSandbox(store, v->metadata.namespace_, sandbox_id);
  });
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

// --- /volumecontent: the volume's own token, no API key ---

// Largest file the content routes take or return whole.
constexpr size_t kMaxFileBytes = size_t{64} << 20;

Json EntryJson(const VolumeEntry& e) {
  Json j = {{"name", e.name},
            {"path", e.path},
            {"type", e.type},
            {"size", e.size},
            {"mode", e.mode},
            {"uid", e.uid},
            {"gid", e.gid},
            {"atime", base::FormatRfc3339Nanos(e.atime)},
            {"mtime", base::FormatRfc3339Nanos(e.mtime)},
            {"ctime", base::FormatRfc3339Nanos(e.ctime)}};
  if (e.type == "symlink") j["target"] = e.target;
  return j;
}

net::Response ContentError(const Status& s) {
  if (s.code() == StatusCode::kResourceExhausted) return ErrorResponse(507, s.message());
  return ErrorResponse(s);
}

// An unsigned integer query parameter no larger than `max` (absent: nullopt).
Result<std::optional<uint32_t>> UintParam(const net::Request& req, const char* name, int64_t max) {
  auto v = req.Query(name);
  if (!v || v->empty()) return std::optional<uint32_t>{};
  auto n = base::ParseInt64(*v);
  if (!n || *n < 0 || *n > max) {
    return InvalidArgumentError(fmt::format("{} must be 0..{}, got \"{}\"", name, max, *v));
  }
  return std::optional<uint32_t>(static_cast<uint32_t>(*n));
}

Result<VolumeOwner> OwnerParams(const net::Request& req) {
  VolumeOwner o;
  ASSIGN_OR_RETURN(o.uid, UintParam(req, "uid", 65535));
  ASSIGN_OR_RETURN(o.gid, UintParam(req, "gid", 65535));
  ASSIGN_OR_RETURN(o.mode, UintParam(req, "mode", 07777));
  return o;
}

// The volume a content request names, if its token opens it, as files on this host.
Result<VolumeFiles> OpenContent(store::Store& store, const api::SandboxSecrets& secrets,
                                NodeAccess* node, const net::Request& req) {
  std::string_view auth = req.headers.Get("authorization").value_or("");
  constexpr std::string_view kBearer = "Bearer ";
  if (!auth.starts_with(kBearer)) {
    return UnauthenticatedError("the volume's token is required (Authorization: Bearer <token>)");
  }
  const std::string id(req.PathParam("volumeID"));
  ASSIGN_OR_RETURN(store::ObjectList list, store.List(api::VolumeKind(), {}));
  for (const api::Object& v : list.items) {
    if (v.metadata.uid != id || v.metadata.deletion_timestamp) continue;
    if (!base::ConstantTimeEquals(auth.substr(kBearer.size()), secrets.VolumeToken(v))) {
      return UnauthenticatedError("the token does not open this volume");
    }
    if (node == nullptr) return UnavailableError("this server runs no node agent");
    ASSIGN_OR_RETURN(auto dir, node->VolumeDir(v.metadata.namespace_, v.metadata.name));
    return VolumeFiles::Open(dir.first, dir.second);
  }
  return NotFoundError(fmt::format("volume \"{}\" not found", id));
}

Result<std::string> PathParam(const net::Request& req) {
  auto p = req.Query("path");
  if (!p) return InvalidArgumentError("path is required");
  return std::string(*p);
}

using ContentHandler =
    std::function<net::Response(const VolumeFiles& files, const net::Request& req)>;

void AddContentRoute(net::Router& router, std::string_view method, std::string_view pattern,
                     store::Store& store, const api::SandboxSecrets& secrets, NodeAccess* node,
                     ContentHandler handler) {
  net::RouteOptions options;
  options.blocking = true;
  options.max_body_bytes = kMaxFileBytes;
  router.Add(
      method, pattern,
      [&store, &secrets, node, handler = std::move(handler)](net::Request&& req, net::Responder r) {
        auto files = OpenContent(store, secrets, node, req);
        if (!files.ok()) return r.Send(ContentError(files.status()));
        r.Send(handler(*files, req));
      },
      options);
}

}  // namespace

void RegisterVolumeContentRoutes(net::Router& router, store::Store& store,
                                 const api::SandboxSecrets& secrets, NodeAccess* node) {
  AddContentRoute(router, "GET", "/volumecontent/{volumeID}/dir", store, secrets, node,
                  [](const VolumeFiles& files, const net::Request& req) {
                    int depth = 1;
                    if (auto d = req.Query("depth"); d && !d->empty()) {
                      auto n = base::ParseInt64(*d);
                      if (!n || *n < 1 || *n > 100) {
                        return ErrorResponse(400,
                                             fmt::format("depth must be 1..100, got \"{}\"", *d));
                      }
                      depth = static_cast<int>(*n);
                    }
                    auto path = PathParam(req);
                    if (!path.ok()) return ContentError(path.status());
                    auto entries = files.List(*path, depth);
                    if (!entries.ok()) return ContentError(entries.status());
                    Json out = Json::array();
                    for (const VolumeEntry& e : *entries) out.push_back(EntryJson(e));
                    return net::Response::Json(200, api::DumpJson(out));
                  });
  AddContentRoute(router, "POST", "/volumecontent/{volumeID}/dir", store, secrets, node,
                  [](const VolumeFiles& files, const net::Request& req) {
                    auto path = PathParam(req);
                    auto owner = OwnerParams(req);
                    if (!path.ok()) return ContentError(path.status());
                    if (!owner.ok()) return ContentError(owner.status());
                    auto e = files.MakeDir(*path, *owner, req.Query("force") == "true");
                    if (!e.ok()) return ContentError(e.status());
                    return net::Response::Json(201, api::DumpJson(EntryJson(*e)));
                  });
  AddContentRoute(router, "GET", "/volumecontent/{volumeID}/path", store, secrets, node,
                  [](const VolumeFiles& files, const net::Request& req) {
                    auto path = PathParam(req);
                    if (!path.ok()) return ContentError(path.status());
                    auto e = files.Stat(*path);
                    if (!e.ok()) return ContentError(e.status());
                    return net::Response::Json(200, api::DumpJson(EntryJson(*e)));
                  });
  AddContentRoute(
      router, "PATCH", "/volumecontent/{volumeID}/path", store, secrets, node,
      [](const VolumeFiles& files, const net::Request& req) {
        auto path = PathParam(req);
        if (!path.ok()) return ContentError(path.status());
        auto body = api::ParseJson(req.body.empty() ? "{}" : req.body);
        if (!body.ok() || !body->is_object()) {
          return ErrorResponse(400, "the body must be a JSON object {uid?, gid?, mode?}");
        }
        VolumeOwner owner;
        for (auto [key, max, field] :
             {std::tuple{"uid", 65535, &owner.uid}, std::tuple{"gid", 65535, &owner.gid},
              std::tuple{"mode", 07777, &owner.mode}}) {
          auto it = body->find(key);
          if (it == body->end() || it->is_null()) continue;
          if (!it->is_number_unsigned() || it->get<uint64_t>() > static_cast<uint64_t>(max)) {
            return ErrorResponse(400, fmt::format("{} must be 0..{}", key, max));
          }
          *field = it->get<uint32_t>();
        }
        auto e = files.SetMetadata(*path, owner);
        if (!e.ok()) return ContentError(e.status());
        return net::Response::Json(200, api::DumpJson(EntryJson(*e)));
      });
  AddContentRoute(router, "DELETE", "/volumecontent/{volumeID}/path", store, secrets, node,
                  [](const VolumeFiles& files, const net::Request& req) {
                    auto path = PathParam(req);
                    if (!path.ok()) return ContentError(path.status());
                    if (Status s = files.Remove(*path); !s.ok()) return ContentError(s);
                    return net::Response::Empty(204);
                  });
  AddContentRoute(router, "GET", "/volumecontent/{volumeID}/file", store, secrets, node,
                  [](const VolumeFiles& files, const net::Request& req) {
                    auto path = PathParam(req);
                    if (!path.ok()) return ContentError(path.status());
                    auto data = files.Read(*path, kMaxFileBytes);
                    if (!data.ok()) return ContentError(data.status());
                    net::Response res = net::Response::Text(200, std::move(*data));
                    res.headers.Set("content-type", "application/octet-stream");
                    return res;
                  });
  AddContentRoute(router, "PUT", "/volumecontent/{volumeID}/file", store, secrets, node,
                  [](const VolumeFiles& files, const net::Request& req) {
                    auto path = PathParam(req);
                    auto owner = OwnerParams(req);
                    if (!path.ok()) return ContentError(path.status());
                    if (!owner.ok()) return ContentError(owner.status());
                    auto e = files.Write(*path, req.body, *owner);
                    if (!e.ok()) return ContentError(e.status());
                    return net::Response::Json(200, api::DumpJson(EntryJson(*e)));
                  });
}

void RegisterVolumeRoutes(net::Router& router, store::Store& store,
                          const api::SandboxSecrets& secrets, NodeAccess* node,
                          size_t max_body_bytes) {
  store::Store* s = &store;
  const api::SandboxSecrets* sec = &secrets;
  AddAuthedRoute(router, "POST", "/volumes", "create_volume", max_body_bytes,
                 [s, sec](const auth::Principal& who, const net::Request& req) {
                   return Create(*s, *sec, who, req);
                 });
  AddAuthedRoute(router, "GET", "/volumes", "list_volumes", max_body_bytes,
                 [s](const auth::Principal& who, const net::Request&) {
                   store::ListOptions lo;
                   lo.namespace_ = who.team;
                   auto list = s->List(api::VolumeKind(), lo);
                   if (!list.ok()) return ErrorResponse(list.status());
                   Json out = Json::array();
                   for (const api::Object& v : list->items) {
                     if (!v.metadata.deletion_timestamp) out.push_back(Info(v));
                   }
                   return net::Response::Json(200, api::DumpJson(out));
                 });
  AddAuthedRoute(router, "GET", "/volumes/{volumeID}", "get_volume", max_body_bytes,
                 [s, sec](const auth::Principal& who, const net::Request& req) {
                   auto v = Find(*s, who, req.PathParam("volumeID"));
                   if (!v.ok()) return ErrorResponse(v.status());
                   return net::Response::Json(200, api::DumpJson(InfoWithToken(*v, *sec)));
                 });
  AddAuthedRoute(router, "DELETE", "/volumes/{volumeID}", "delete_volume", max_body_bytes,
                 [s, node](const auth::Principal& who, const net::Request& req) {
                   return Delete(*s, node, who, req.PathParam("volumeID"));
                 });
  RegisterVolumeContentRoutes(router, store, secrets, node);
}

}  // namespace warren::server::e2b
