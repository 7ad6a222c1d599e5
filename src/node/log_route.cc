#include "node/log_route.h"

#include <fmt/format.h>

#include "api/json.h"
#include "api/kinds.h"
#include "api/status_object.h"
#include "api/types/labels.h"
#include "base/strings.h"

namespace warren::node {
namespace {

void SendError(net::Responder& r, const Status& s, const std::string& name) {
  api::StatusDetails details{name, api::kAgentsGroup, "sandboxes"};
  api::HttpError e = api::ToHttpError(s, details);
  r.Send(net::Response::Json(e.code, api::DumpJson(e.status)));
}

Result<LogRequest> ParseQuery(const net::Request& req) {
  LogRequest q;
  if (auto v = req.Query("follow")) {
    if (*v == "true" || *v == "1") {
      q.follow = true;
    } else if (*v != "false" && *v != "0") {
      return InvalidArgumentError(fmt::format("follow must be true or false, got \"{}\"", *v));
    }
  }
  for (auto [name, out] :
       {std::pair{"tailLines", &q.tail_lines}, std::pair{"limitBytes", &q.limit_bytes}}) {
    if (auto v = req.Query(name)) {
      auto n = base::ParseInt64(*v);
      if (!n || *n < 0) {
        return InvalidArgumentError(
            fmt::format("{} must be a non-negative integer, got \"{}\"", name, *v));
      }
      *out = *n;
    }
  }
  return q;
}

// Looks the sandbox up (a store read: the route is blocking) and hands the response to the
// streamer, which writes the log from its own thread: the handler returns at once.
void HandleLog(LogStreamer& streamer, store::Store& store, const LogForwarder& forward,
               net::Request&& req, net::Responder r) {
  const std::string name(req.PathParam("name"));
  const std::string ns(req.PathParam("ns"));
  // The server's route guard put the caller here; another team's sandbox does not exist for it.
  if (req.principal == nullptr || !req.principal->Sees(ns)) {
    return SendError(
        r,
        req.principal == nullptr
            ? UnauthenticatedError("an API key is needed to read logs")
            : NotFoundError(fmt::format("sandboxes.{} \"{}\" not found", api::kAgentsGroup, name)),
        name);
  }
  auto query = ParseQuery(req);
  if (!query.ok()) return SendError(r, query.status(), name);
  auto obj = store.Get(api::SandboxKind(), ns, name);
  if (!obj.ok()) return SendError(r, obj.status(), name);
  LogRequest& log = *query;
  log.namespace_ = obj->metadata.namespace_;
  log.name = name;
  log.uid = obj->metadata.uid;
  auto id = obj->metadata.labels.find(api::labels::kSandboxId);
  if (id != obj->metadata.labels.end()) log.sandbox_id = id->second;
  if (forward && !log.sandbox_id.empty() && forward(log.sandbox_id, r)) return;
  Status started = streamer.Start(r, std::move(log));
  if (!started.ok()) SendError(r, started, name);
}

}  // namespace

void RegisterLogRoute(net::Router& router, LogSource source, store::Store& store,
                      LogStreamOptions options, LogForwarder forward) {
  // Shared by the route's handler and the router's copies of it: the streamer lives as long as
  // the router (the HTTP server), and its destructor finishes what is open and joins its thread.
  auto streamer = std::make_shared<LogStreamer>(store, std::move(source), options);
  net::RouteOptions route;
  route.blocking = true;
  router.Add(
      "GET", "/apis/agents.kruise.io/v1alpha1/namespaces/{ns}/sandboxes/{name}/log",
      [streamer, &store, forward = std::move(forward)](net::Request&& req, net::Responder r) {
        HandleLog(*streamer, store, forward, std::move(req), std::move(r));
      },
      route);
}

void RegisterLogRoute(net::Router& router, NodeAgent& agent, store::Store& store,
                      LogStreamOptions options, LogForwarder forward) {
  LogSource source;
  source.open = [&agent](std::string_view id) { return agent.OpenCommandLog(id); };
  source.stopping = [&agent] { return agent.stopping(); };
  RegisterLogRoute(router, std::move(source), store, options, std::move(forward));
}

}  // namespace warren::node
