#include "server/e2b/observe_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "api/json.h"
#include "base/strings.h"
#include "base/time_format.h"
#include "server/e2b/authed_route.h"
#include "server/e2b/errors.h"
#include "server/e2b/responses.h"
#include "server/e2b/sandbox_observer.h"

namespace warren::server::e2b {
namespace {

using Json = api::Json;

// The time comes from envd's index (written in the sandbox): clamped to years 1970..9999, so a
// hostile value cannot overflow the conversion to the clock's nanoseconds.
std::string Rfc3339OfMillis(int64_t ms) {
  ms = std::clamp<int64_t>(ms, 0, int64_t{253402300799999});
  return base::FormatRfc3339Millis(base::WallTime(std::chrono::milliseconds(ms)));
}

Json LogEntry(const base::LogLine& line) {
  const bool err = line.stream == base::LogStream::kStderr;
  return Json{{"timestamp", Rfc3339OfMillis(line.unix_ms)},
              {"level", err ? "error" : "info"},
              {"message", line.text},
              {"fields", Json{{"stream", err ? "stderr" : "stdout"}}}};
}

std::string EncodeLogsV1(const std::vector<base::LogLine>& lines) {
  Json logs = Json::array();
  Json entries = Json::array();
  for (const auto& l : lines) {
    logs.push_back(Json{{"timestamp", Rfc3339OfMillis(l.unix_ms)}, {"line", l.text}});
    entries.push_back(LogEntry(l));
  }
  return api::DumpJson(Json{{"logs", std::move(logs)}, {"logEntries", std::move(entries)}});
}

std::string EncodeLogsV2(const std::vector<base::LogLine>& lines) {
  Json logs = Json::array();
  for (const auto& l : lines) logs.push_back(LogEntry(l));
  return api::DumpJson(Json{{"logs", std::move(logs)}});
}

int64_t UnixSeconds(base::WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

Json TeamMetricJson(const TeamMetrics::Sample& s) {
  return Json{{"timestamp", base::FormatRfc3339(s.time)},
              {"timestampUnix", UnixSeconds(s.time)},
              {"concurrentSandboxes", s.concurrent},
              {"sandboxStartRate", s.start_rate}};
}

struct Routes {
  std::shared_ptr<SandboxService> service;
  SandboxObserver observer;
  std::shared_ptr<TeamMetrics> team_metrics;
  std::shared_ptr<auth::KeyStore> keys;
};

void Add(net::Router& router, const char* pattern, const char* operation,
         const std::shared_ptr<Routes>& r, AuthedHandler handler) {
  AddAuthedRoute(router, "GET", pattern, operation, r->service->options().max_body_bytes,
                 std::move(handler));
}

net::Response LogsHandler(Routes& r, const auth::Principal& who, const net::Request& req, bool v2) {
  auto query = ParseLogsQuery(req.QueryParams(), v2);
  if (!query.ok()) return ErrorResponse(query.status());
  auto lines = r.observer.Logs(who, req.PathParam("id"), *query);
  if (!lines.ok()) return ErrorResponse(lines.status());
  return net::Response::Json(200, v2 ? EncodeLogsV2(*lines) : EncodeLogsV1(*lines));
}

// The team a /teams/{teamID}/... call may read: its own; an admin any.
Status CheckTeam(const auth::Principal& who, std::string_view team) {
  if (who.Sees(team)) return Status::Ok();
  return PermissionDeniedError(fmt::format("team \"{}\" is not the team of this key", team));
}

}  // namespace

void RegisterObserveRoutes(net::Router& router, std::shared_ptr<SandboxService> service,
                           NodeAccess* node, std::shared_ptr<TeamMetrics> team_metrics,
                           std::shared_ptr<auth::KeyStore> keys) {
  auto r = std::make_shared<Routes>(
      Routes{service, SandboxObserver(*service, node), std::move(team_metrics), std::move(keys)});
  Add(router, "/sandboxes/{id}/logs", "logs", r,
      [r](const auto& who, const auto& req) { return LogsHandler(*r, who, req, false); });
  Add(router, "/v2/sandboxes/{id}/logs", "logs", r,
      [r](const auto& who, const auto& req) { return LogsHandler(*r, who, req, true); });
  Add(router, "/sandboxes/metrics", "metrics", r, [r](const auto& who, const auto& req) {
    auto ids = ParseSandboxIds(req.QueryParams());
    if (!ids.ok()) return ErrorResponse(ids.status());
    auto latest = r->observer.LatestMetrics(who, *ids);
    if (!latest.ok()) return ErrorResponse(latest.status());
    return net::Response::Json(200, EncodeMetricsBySandbox(*latest));
  });
  Add(router, "/teams", "teams", r, [r](const auto& who, const auto&) {
    std::set<std::string> teams{who.team};
    if (who.admin) {
      auto keys = r->keys->List();
      if (!keys.ok()) return ErrorResponse(keys.status());
      for (const auto& k : *keys) teams.insert(k.team);
    }
    Json out = Json::array();
    // The key itself is never returned: it is stored hashed, and E2B's field is informative.
    for (const auto& t : teams) {
      out.push_back(Json{{"teamID", t}, {"name", t}, {"apiKey", ""}, {"isDefault", t == who.team}});
    }
    return net::Response::Json(200, api::DumpJson(out));
  });
  Add(router, "/teams/{team}/metrics", "team_metrics", r, [r](const auto& who, const auto& req) {
    std::string_view team = req.PathParam("team");
    if (Status s = CheckTeam(who, team); !s.ok()) return ErrorResponse(s);
    auto query = ParseMetricsQuery(req.QueryParams());
    if (!query.ok()) return ErrorResponse(query.status());
    Json out = Json::array();
    for (const auto& s : r->team_metrics->Range(team, query->start, query->end)) {
      out.push_back(TeamMetricJson(s));
    }
    return net::Response::Json(200, api::DumpJson(out));
  });
  Add(router, "/teams/{team}/metrics/max", "team_metrics", r,
      [r](const auto& who, const auto& req) {
        std::string_view team = req.PathParam("team");
        if (Status s = CheckTeam(who, team); !s.ok()) return ErrorResponse(s);
        auto query = ParseMetricsQuery(req.QueryParams());
        if (!query.ok()) return ErrorResponse(query.status());
        std::string metric;
        for (const auto& [k, v] : req.QueryParams()) {
          if (k == "metric") metric = v;
        }
        if (metric != "concurrent_sandboxes" && metric != "sandbox_start_rate") {
          return ErrorResponse(InvalidArgumentError(fmt::format(
              "metric must be concurrent_sandboxes or sandbox_start_rate, got \"{}\"", metric)));
        }
        // The newest sample holding the largest value; none yet: 0 now.
        const bool concurrent = metric == "concurrent_sandboxes";
        TeamMetrics::Sample best{base::RealClock().Now(), 0, 0};
        for (const auto& s : r->team_metrics->Range(team, query->start, query->end)) {
          if ((concurrent ? s.concurrent - best.concurrent : s.start_rate - best.start_rate) >= 0) {
            best = s;
          }
        }
        Json out{{"timestampUnix", UnixSeconds(best.time)},
                 {"timestamp", base::FormatRfc3339(best.time)},
                 {"value", concurrent ? static_cast<double>(best.concurrent) : best.start_rate}};
        return net::Response::Json(200, api::DumpJson(out));
      });
}

}  // namespace warren::server::e2b
