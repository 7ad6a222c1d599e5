#include "server/e2b/e2b_api.h"

#include <fmt/format.h>

#include "base/log.h"
#include "server/e2b/audited.h"
#include "server/e2b/authed_route.h"
#include "server/e2b/errors.h"
#include "server/e2b/responses.h"
#include "server/e2b/snapshot_service.h"
#include "server/e2b/templates.h"

namespace warren::server::e2b {
namespace {

struct Context {
  std::shared_ptr<SandboxService> service;
  std::unique_ptr<SnapshotService> snapshots;
  std::shared_ptr<audit::Journal> journal;
};

SnapshotView ViewOf(const SnapshotInfo& info) { return SnapshotView{info.snapshot_id, info.names}; }

net::Response Json(int status, std::string body) {
  return net::Response::Json(status, std::move(body));
}

// Every call that changes a sandbox is audited (audited.h); reads are not.
void Add(net::Router& router, const char* method, const char* pattern, const char* operation,
         const std::shared_ptr<Context>& ctx, AuthedHandler handler) {
  if (std::string_view(method) != "GET" &&
      std::string_view(pattern).find("/sandboxes") != std::string_view::npos) {
    handler = Audited(ctx->journal, ctx->service, operation, std::move(handler));
  }
  AddAuthedRoute(router, method, pattern, operation, ctx->service->options().max_body_bytes,
                 std::move(handler));
}

std::string SandboxId(const net::Request& req) { return std::string(req.PathParam("id")); }

net::Response CreateHandler(const Context& ctx, const auth::Principal& who, const net::Request& req,
                            const TimeoutRules& rules) {
  auto parsed = ParseCreateRequest(req.body, rules);
  if (!parsed.ok()) return ErrorResponse(parsed.status());
  auto created = ctx.service->Create(who, *parsed, [&req] { return req.client_gone(); });
  if (!created.ok()) return ErrorResponse(created.status());
  return Json(201, EncodeSandbox(*created, ctx.service->options().response));
}

net::Response ListHandler(const Context& ctx, const auth::Principal& who, const net::Request& req,
                          bool running_only) {
  auto query = ParseListQuery(req.QueryParams());
  if (!query.ok()) return ErrorResponse(query.status());
  if (running_only) {
    query->want_paused = false;
    query->want_running = true;
  }
  auto page = ctx.service->List(who, *query);
  if (!page.ok()) return ErrorResponse(page.status());
  size_t running = 0;
  for (const auto& r : page->items) running += r.state == E2bState::kRunning;
  auto resp = Json(200, EncodeListedSandboxes(page->items, ctx.service->options().response));
  if (!page->next_token.empty()) resp.headers.Set("X-Next-Token", page->next_token);
  if (query->want_running) resp.headers.Set("X-Total-Running", std::to_string(running));
  return resp;
}

net::Response ConnectHandler(const Context& ctx, const auth::Principal& who,
                             const net::Request& req) {
  auto parsed = ParseConnectRequest(req.body, ctx.service->options().v2_timeouts);
  if (!parsed.ok()) return ErrorResponse(parsed.status());
  auto result = ctx.service->Connect(who, SandboxId(req), parsed->timeout_seconds,
                                     parsed->memory.value_or(true));
  if (!result.ok()) return ErrorResponse(result.status());
  return Json(result->resumed ? 201 : 200,
              EncodeSandbox(result->record, ctx.service->options().response));
}

}  // namespace

void RegisterE2bRoutes(net::Router& router, std::shared_ptr<SandboxService> service,
                       std::shared_ptr<audit::Journal> journal) {
  auto ctx = std::make_shared<Context>();
  ctx->service = std::move(service);
  ctx->journal = std::move(journal);
  ctx->snapshots = std::make_unique<SnapshotService>(ctx->service->store(), *ctx->service);
  const E2bOptions& opts = ctx->service->options();
  TimeoutRules v1 = opts.v2_timeouts;
  v1.default_seconds = opts.v1_default_timeout_seconds;
  TimeoutRules v2 = opts.v2_timeouts;

  router.Add("GET", "/health", [](net::Request&&, net::Responder r) {
    r.Send(net::Response::Json(200, R"({"status":"ok"})"));
  });

  Add(router, "POST", "/sandboxes", "create", ctx,
      [ctx, v1](const auto& who, const auto& req) { return CreateHandler(*ctx, who, req, v1); });
  Add(router, "POST", "/v2/sandboxes", "create", ctx,
      [ctx, v2](const auto& who, const auto& req) { return CreateHandler(*ctx, who, req, v2); });
  Add(router, "GET", "/sandboxes", "list", ctx,
      [ctx](const auto& who, const auto& req) { return ListHandler(*ctx, who, req, true); });
  Add(router, "GET", "/v2/sandboxes", "list", ctx,
      [ctx](const auto& who, const auto& req) { return ListHandler(*ctx, who, req, false); });

  Add(router, "GET", "/sandboxes/{id}", "get", ctx, [ctx](const auto& who, const auto& req) {
    auto r = ctx->service->Get(who, SandboxId(req));
    if (!r.ok()) return ErrorResponse(r.status());
    return Json(200, EncodeSandboxDetail(*r, ctx->service->options().response));
  });
  Add(router, "DELETE", "/sandboxes/{id}", "kill", ctx, [ctx](const auto& who, const auto& req) {
    Status s = ctx->service->Kill(who, SandboxId(req));
    return s.ok() ? net::Response::Empty(204) : ErrorResponse(s);
  });
  Add(router, "POST", "/sandboxes/{id}/timeout", "set_timeout", ctx,
      [ctx](const auto& who, const auto& req) {
        auto seconds = ParseTimeoutRequest(req.body, ctx->service->options().v2_timeouts);
        if (!seconds.ok()) return ErrorResponse(seconds.status());
        Status s = ctx->service->SetTimeout(who, SandboxId(req), *seconds);
        return s.ok() ? net::Response::Empty(204) : ErrorResponse(s);
      });
  Add(router, "PUT", "/sandboxes/{id}/network", "set_network", ctx,
      [ctx](const auto& who, const auto& req) {
        auto policy = ParseNetworkUpdate(req.body);
        if (!policy.ok()) return ErrorResponse(policy.status());
        Status s = ctx->service->SetNetwork(who, SandboxId(req), *policy);
        return s.ok() ? net::Response::Empty(204) : ErrorResponse(s);
      });
  Add(router, "POST", "/sandboxes/{id}/refreshes", "refresh", ctx,
      [ctx](const auto& who, const auto& req) {
        auto seconds = ParseRefreshRequest(req.body, ctx->service->options().v2_timeouts);
        if (!seconds.ok()) return ErrorResponse(seconds.status());
        Status s = ctx->service->Refresh(who, SandboxId(req), *seconds);
        return s.ok() ? net::Response::Empty(204) : ErrorResponse(s);
      });
  Add(router, "POST", "/sandboxes/{id}/pause", "pause", ctx,
      [ctx](const auto& who, const auto& req) {
        auto memory = ParsePauseMemory(req.body);
        if (!memory.ok()) return ErrorResponse(memory.status());
        Status s = ctx->service->Pause(who, SandboxId(req), *memory);
        return s.ok() ? net::Response::Empty(204) : ErrorResponse(s);
      });
  Add(router, "POST", "/sandboxes/{id}/snapshots", "snapshot", ctx,
      [ctx](const auto& who, const auto& req) {
        auto name = ParseSnapshotName(req.body);
        if (!name.ok()) return ErrorResponse(name.status());
        auto made = ctx->snapshots->Create(who, SandboxId(req), *name);
        if (!made.ok()) return ErrorResponse(made.status());
        return Json(201, EncodeSnapshot(ViewOf(*made)));
      });
  Add(router, "GET", "/snapshots", "list_snapshots", ctx, [ctx](const auto& who, const auto& req) {
    auto query = ParseSnapshotQuery(req.QueryParams());
    if (!query.ok()) return ErrorResponse(query.status());
    auto page = ctx->snapshots->List(who, *query);
    if (!page.ok()) return ErrorResponse(page.status());
    std::vector<SnapshotView> views;
    for (const auto& s : page->items) views.push_back(ViewOf(s));
    auto resp = Json(200, EncodeSnapshots(views));
    if (!page->next_token.empty()) resp.headers.Set("X-Next-Token", page->next_token);
    return resp;
  });
  Add(router, "DELETE", "/templates/{id}", "delete_snapshot", ctx,
      [ctx](const auto& who, const auto& req) {
        Status s = ctx->snapshots->Delete(who, req.PathParam("id"));
        return s.ok() ? net::Response::Empty(204) : ErrorResponse(s);
      });
  Add(router, "POST", "/sandboxes/{id}/fork", "fork", ctx, [ctx](const auto& who, const auto& req) {
    auto parsed = ParseForkRequest(req.body, ctx->service->options().v2_timeouts,
                                   SnapshotService::kMaxForkCount);
    if (!parsed.ok()) return ErrorResponse(parsed.status());
    auto forks = ctx->snapshots->Fork(who, SandboxId(req), *parsed);
    if (!forks.ok()) return ErrorResponse(forks.status());
    return Json(201, EncodeForks(*forks, ctx->service->options().response));
  });
  Add(router, "POST", "/sandboxes/{id}/resume", "resume", ctx,
      [ctx](const auto& who, const auto& req) {
        auto parsed = ParseConnectRequest(req.body, ctx->service->options().v2_timeouts);
        if (!parsed.ok()) return ErrorResponse(parsed.status());
        auto r = ctx->service->Resume(who, SandboxId(req), parsed->timeout_seconds);
        if (!r.ok()) return ErrorResponse(r.status());
        return Json(201, EncodeSandbox(*r, ctx->service->options().response));
      });
  Add(router, "POST", "/sandboxes/{id}/connect", "connect", ctx,
      [ctx](const auto& who, const auto& req) { return ConnectHandler(*ctx, who, req); });
  Add(router, "POST", "/v2/sandboxes/{id}/connect", "connect", ctx,
      [ctx](const auto& who, const auto& req) { return ConnectHandler(*ctx, who, req); });
  Add(router, "GET", "/sandboxes/{id}/metrics", "metrics", ctx,
      [ctx](const auto& who, const auto& req) {
        auto query = ParseMetricsQuery(req.QueryParams());
        if (!query.ok()) return ErrorResponse(query.status());
        auto samples = ctx->service->Metrics(who, SandboxId(req), *query);
        if (!samples.ok()) return ErrorResponse(samples.status());
        return Json(200, EncodeMetrics(*samples));
      });
  Add(router, "GET", "/templates", "templates", ctx, [ctx](const auto& who, const auto&) {
    const E2bOptions& o = ctx->service->options();
    auto list = ListTemplates(ctx->service->store(), who.team, who.admin, o.shared_namespace);
    if (!list.ok()) return ErrorResponse(list.status());
    return Json(200, EncodeTemplates(*list, o.response));
  });
}

}  // namespace warren::server::e2b
