#include "node/relay_routes.h"

#include <fmt/format.h>

#include "api/json.h"
#include "api/object_codec.h"
#include "base/encoding.h"
#include "base/log.h"
#include "base/strings.h"
#include "node/relay_wire.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

// Longest a caller may have the node wait on envd or a reset; longer asks are cut to it.
constexpr std::chrono::milliseconds kMaxWait = 120s;
// How long a dial may wait on a sandbox busy with a lifecycle step (the gateway's own budget).
constexpr std::chrono::milliseconds kDialTimeout = 5s;

void SendError(net::Responder& r, const Status& s) {
  r.Send(net::Response::Json(HttpStatusFromCode(s.code()), EncodeRelayError(s)));
}

Result<std::chrono::milliseconds> WaitOf(const net::Request& req) {
  auto v = req.Query("timeoutMs");
  if (!v) return std::chrono::milliseconds(30s);
  auto n = base::ParseInt64(*v);
  if (!n || *n <= 0) {
    return InvalidArgumentError(
        fmt::format("timeoutMs must be a positive integer, got \"{}\"", *v));
  }
  return std::min(std::chrono::milliseconds(*n), kMaxWait);
}

Result<uint16_t> PortOf(const net::Request& req) {
  auto n = base::ParseInt64(req.PathParam("port"));
  if (!n || *n < 1 || *n > 65535) {
    return InvalidArgumentError(
        fmt::format("port must be 1..65535, got \"{}\"", req.PathParam("port")));
  }
  return static_cast<uint16_t>(*n);
}

}  // namespace

net::Handler RequireRelayCredential(std::string token, net::Handler handler) {
  return [token = std::move(token), handler = std::move(handler)](net::Request&& req,
                                                                  net::Responder r) {
    std::string_view auth = req.headers.Get("Authorization").value_or("");
    constexpr std::string_view kBearer = "Bearer ";
    if (auth.substr(0, kBearer.size()) != kBearer ||
        !base::ConstantTimeEquals(auth.substr(kBearer.size()), token)) {
      SendError(r, UnauthenticatedError("the node relay needs the cluster's relay credential"));
      return;
    }
    // The caller is a server of the cluster, which checked its own caller's team already.
    static const auto kClusterServer = std::make_shared<const base::Principal>(
        base::Principal{.key_name = "cluster server", .admin = true});
    req.principal = kClusterServer;
    handler(std::move(req), std::move(r));
  };
}

void AddRelayRoutes(net::Router& router, NodeAgent& agent, std::string token) {
  auto Guarded = [&token](net::Handler handler) {
    return RequireRelayCredential(token, std::move(handler));
  };
  const net::RouteOptions blocking{.blocking = true};
  router.Add("GET", "/relay/v1/sandboxes/{id}/ports/{port}",
             Guarded([&agent](net::Request&& req, net::Responder r) {
               auto port = PortOf(req);
               if (!port.ok()) return SendError(r, port.status());
               auto fd = agent.Dial(req.PathParam("id"), *port, kDialTimeout);
               if (!fd.ok()) return SendError(r, fd.status());
               net::ProxyOptions options;
               options.raw_upgrade = true;
               r.Proxy(std::move(*fd), std::move(options));
             }),
             blocking);
  router.Add("POST", "/relay/v1/sandboxes/{id}/init",
             Guarded([&agent](net::Request&& req, net::Responder r) {
               auto wait = WaitOf(req);
               if (!wait.ok()) return SendError(r, wait.status());
               Status s = agent.DeliverInit(req.PathParam("id"), req.body, *wait);
               if (!s.ok()) return SendError(r, s);
               r.Send(net::Response::Empty(204));
             }),
             blocking);
  router.Add("POST", "/relay/v1/sandboxes/{id}/reset",
             Guarded([&agent](net::Request&& req, net::Responder r) {
               auto wait = WaitOf(req);
               if (!wait.ok()) return SendError(r, wait.status());
               Status s = agent.Reset(req.PathParam("id"), *wait);
               if (!s.ok()) return SendError(r, s);
               r.Send(net::Response::Empty(204));
             }),
             blocking);
  router.Add("GET", "/relay/v1/sandboxes/{id}/envd-auth",
             Guarded([&agent](net::Request&& req, net::Responder r) {
               auto envd = agent.Envd(req.PathParam("id"));
               if (!envd.ok()) return SendError(r, envd.status());
               api::Json out = api::Json::object();
               const net::Headers headers = (*envd)->AuthHeaders();
               for (const auto& [name, value] : headers.fields()) {
                 out[name] = value;
               }
               r.Send(net::Response::Json(200, api::DumpJson(out)));
             }),
             blocking);
  router.Add("GET", "/relay/v1/sandboxes/{id}/metrics",
             Guarded([&agent](net::Request&& req, net::Responder r) {
               r.Send(net::Response::Json(200, EncodeStats(agent.Metrics(req.PathParam("id")))));
             }),
             blocking);
  router.Add("GET", "/relay/v1/sandboxes/{id}/commandlog",
             Guarded([&agent](net::Request&& req, net::Responder r) {
               auto query = DecodeLogQuery(req.QueryParams());
               if (!query.ok()) return SendError(r, query.status());
               auto lines = agent.ReadCommandLog(req.PathParam("id"), *query);
               if (!lines.ok()) return SendError(r, lines.status());
               r.Send(net::Response::Json(200, EncodeLogLines(*lines)));
             }),
             blocking);
  router.Add("POST", "/relay/v1/network", Guarded([&agent](net::Request&& req, net::Responder r) {
               auto sandbox = api::ObjectFromJsonText(req.body);
               if (!sandbox.ok()) return SendError(r, sandbox.status());
               Status s = agent.ApplyEgressPolicy(*sandbox);
               if (!s.ok()) return SendError(r, s);
               r.Send(net::Response::Empty(204));
             }),
             blocking);
}

}  // namespace warren::node
