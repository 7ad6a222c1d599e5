#include "server/auth/route_guard.h"

#include <fmt/format.h>

#include "api/json.h"
#include "api/status_object.h"
#include "base/check.h"
#include "base/log.h"
#include "base/strings.h"

namespace warren::server::auth {
namespace {

enum class ErrorStyle { kKubernetes, kE2b };

ErrorStyle StyleFor(std::string_view pattern) {
  return pattern.starts_with("/apis") || pattern.starts_with("/api/") ? ErrorStyle::kKubernetes
                                                                      : ErrorStyle::kE2b;
}

bool Matches(const std::set<std::string, std::less<>>& patterns, std::string_view pattern) {
  if (patterns.contains(pattern)) return true;
  for (const std::string& p : patterns) {
    if (p.ends_with('*') && pattern.starts_with(std::string_view(p).substr(0, p.size() - 1))) {
      return true;
    }
  }
  return false;
}

net::Response Refusal(ErrorStyle style, const Status& status) {
  net::Response resp;
  if (style == ErrorStyle::kKubernetes) {
    api::HttpError e = api::ToHttpError(status);
    resp = net::Response::Json(e.code, api::DumpJson(e.status));
  } else {
    int code = HttpStatusFromCode(status.code());
    resp = net::Response::Json(
        code, api::DumpJson(api::Json{{"code", code}, {"message", status.message()}}));
  }
  if (status.code() == StatusCode::kUnauthenticated) {
    resp.headers.Set("WWW-Authenticate", "Bearer realm=\"warren\"");
  }
  return resp;
}

Status NeedsAdmin(const net::Request& req, const Principal& who) {
  return PermissionDeniedError(
      fmt::format("{} {} needs an admin key; key {} belongs to team \"{}\"", req.method, req.path,
                  who.key_name, who.team));
}

}  // namespace

std::string_view PresentedKey(const net::Headers& headers) {
  if (auto key = headers.Get("X-API-Key"); key && !key->empty()) return base::TrimSpace(*key);
  if (auto authz = headers.Get("Authorization")) {
    std::string_view v = base::TrimSpace(*authz);
    // The scheme is case-insensitive (RFC 9110 §11.1).
    if (v.size() > 7 && base::AsciiLower(v.substr(0, 7)) == "bearer ") {
      return base::TrimSpace(v.substr(7));
    }
  }
  return {};
}

void GuardRoutes(net::Router& router, std::shared_ptr<KeyStore> keys,
                 const RouteGuardOptions& options) {
  router.WrapAll([&options, &keys](std::string_view, std::string_view pattern,
                                   net::RouteOptions& route, net::Handler inner) -> net::Handler {
    if (Matches(options.public_patterns, pattern)) return inner;
    if (route.blocking && !route.fairness_key) {
      // Blocking work is shared out by team: one team's flood queues behind itself, not in front
      // of everyone else (all callers without a valid key share one queue).
      // The caller found here is the one the check below uses: one lookup per request.
      route.fairness_key = [keys](net::Request& req) -> std::string {
        auto who = keys->Authenticate(PresentedKey(req.headers));
        if (!who.ok()) return "unauthenticated";
        req.principal = std::make_shared<const Principal>(std::move(*who));
        return "team " + req.principal->team;
      };
    }
    ErrorStyle style = StyleFor(pattern);
    bool admin_only = Matches(options.admin_patterns, pattern);
    return
        [inner = std::move(inner), keys, style, admin_only](net::Request&& req, net::Responder r) {
          if (req.principal != nullptr) {  // authenticated by the route's fairness key
            if (admin_only && !req.principal->admin) {
              r.Send(Refusal(style, NeedsAdmin(req, *req.principal)));
              return;
            }
            inner(std::move(req), std::move(r));
            return;
          }
          std::string_view key = PresentedKey(req.headers);
          if (key.empty()) {
            r.Send(Refusal(style,
                           UnauthenticatedError("missing API key: send it as X-API-Key: <key> or "
                                                "Authorization: Bearer <key>")));
            return;
          }
          auto who = keys->Authenticate(key);
          if (!who.ok()) {
            if (who.status().code() != StatusCode::kUnauthenticated) {
              base::Logger("auth")->error("api key check failed error={}", who.status().ToString());
            }
            r.Send(Refusal(style, who.status()));
            return;
          }
          if (admin_only && !who->admin) {
            r.Send(Refusal(style, NeedsAdmin(req, *who)));
            return;
          }
          req.principal = std::make_shared<const Principal>(std::move(*who));
          inner(std::move(req), std::move(r));
        };
  });
}

const Principal& CallerOf(const net::Request& req) {
  CHECK_MSG(req.principal != nullptr,
            "no caller on " << req.method << " " << req.path << ": the route is not guarded");
  return *req.principal;
}

}  // namespace warren::server::auth
