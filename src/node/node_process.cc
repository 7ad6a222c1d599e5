#include "node/node_process.h"

#include <fmt/format.h>

#include <filesystem>

#include "api/kinds.h"
#include "base/log.h"
#include "base/sealed_box.h"
#include "net/dial.h"
#include "node/log_route.h"
#include "node/node_registration.h"
#include "node/relay_routes.h"
#include "obs/metrics_route.h"
#include "store/etcd_store.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<spdlog::logger> Log() { return base::Logger("node"); }

}  // namespace

Result<std::unique_ptr<NodeProcess>> NodeProcess::Create(NodeProcessOptions options) {
  if (options.store_url.rfind("etcd://", 0) != 0) {
    return InvalidArgumentError(fmt::format(
        "warren node needs the cluster's etcd store (--store etcd://host:port), got \"{}\": "
        "an embedded SQLite store is one process's alone",
        options.store_url));
  }
  if (options.agent.node_name.empty()) return InvalidArgumentError("the node needs a name");
  if (options.advertise_address.empty() &&
      (options.address == "0.0.0.0" || options.address == "::" || options.address.empty())) {
    return InvalidArgumentError(
        "a node listening on a wildcard address needs --advertise host:port for the servers");
  }
  const std::string key_path = options.key_dir + "/seal.key";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(key_path, ec)) {
    return FailedPreconditionError(fmt::format(
        "no cluster seal key at {}: copy seal.key from a server's key directory (--key-dir) so "
        "the node opens the same secrets and holds the same relay credential",
        key_path));
  }
  std::unique_ptr<NodeProcess> p(new NodeProcess(std::move(options)));
  std::filesystem::create_directories(p->options_.data_dir, ec);
  if (ec) {
    return InternalError(fmt::format("create {}: {}", p->options_.data_dir, ec.message()));
  }
  ASSIGN_OR_RETURN(store::EtcdStoreOptions etcd, store::ParseEtcdUrl(p->options_.store_url));
  ASSIGN_OR_RETURN(auto opened, store::EtcdStore::Open(std::move(etcd), api::BuiltinKinds()));
  p->store_ = std::move(opened);
  ASSIGN_OR_RETURN(base::SealedBox box, base::SealedBox::LoadOrCreate(key_path));
  p->relay_token_ = box.Token(kRelayTokenContext);
  p->secrets_ = std::make_unique<api::SandboxSecrets>(std::move(box));
  p->journal_ =
      std::make_unique<audit::Journal>(p->options_.data_dir + "/audit", audit::Journal::Options{});
  NodeAgentOptions agent = p->options_.agent;
  agent.secrets = p->secrets_.get();
  // The scheduler places sandboxes; several nodes taking unplaced ones would race for them.
  agent.take_unplaced = false;
  p->agent_ = std::make_unique<NodeAgent>(*p->store_, std::move(agent));
  p->agent_->SetAuditJournal(p->journal_.get());
  return p;
}

NodeProcess::~NodeProcess() { Stop(); }

Status NodeProcess::Start() {
  net::Router router;
  AddRelayRoutes(router, *agent_, relay_token_);
  // `warren logs` of this node's sandboxes, as the servers forward it (log_route.h).
  RegisterLogRoute(router, *agent_, *store_);
  router.Add("GET", "/healthz",
             [](net::Request&&, net::Responder r) { r.Send(net::Response::Text(200, "ok")); });
  router.Add("GET", "/readyz", [this](net::Request&&, net::Responder r) {
    r.Send(agent_->Ready() ? net::Response::Text(200, "ok")
                           : net::Response::Text(503, "the node agent is not ready"));
  });
  // Metrics name sandboxes and teams: behind the relay credential like the rest (Prometheus
  // sends it as a bearer token).
  obs::AddMetricsRoute(router);
  router.WrapAll([token = relay_token_](std::string_view, std::string_view pattern,
                                        net::RouteOptions&, net::Handler handler) -> net::Handler {
    // /metrics and the log route (the relay's own routes carry the check already).
    const bool guarded = pattern == "/metrics" || pattern.ends_with("/log");
    return guarded ? RequireRelayCredential(token, std::move(handler)) : handler;
  });
  net::ServerOptions http;
  http.address = options_.address;
  http.port = options_.port;
  http.loop_threads = 2;
  http.blocking_threads = 64;
  auto server = net::HttpServer::Start(http, std::move(router));
  if (!server.ok()) return server.status().WithPrefix("the node relay's listener");
  http_ = std::move(*server);
  // The relay answers NotFound for every sandbox until the agent has adopted its own.
  std::string advertise = options_.advertise_address.empty()
                              ? net::HostPort{options_.address, http_->port()}.authority()
                              : options_.advertise_address;
  agent_->SetAdvertiseAddress(advertise);
  if (Status s = agent_->Start(); !s.ok()) {
    http_->Shutdown(0ms);
    http_.reset();
    agent_->Stop();
    return s;
  }
  Log()->info("node relay listening address={}:{} advertised={} node={}", options_.address,
              http_->port(), advertise, options_.agent.node_name);
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  return Status::Ok();
}

void NodeProcess::HeartbeatLoop() {
  std::unique_lock lock(mu_);
  bool failing = false;
  while (!stopping_) {
    lock.unlock();
    Status s = RenewNodeHeartbeat(*store_, options_.agent.node_name, base::RealClock());
    // Never written (the store was away at start) or deleted since: register again.
    if (s.code() == StatusCode::kNotFound) agent_->PublishNodeObject();
    if (!s.ok() && !failing) {
      Log()->warn("node heartbeat not written node={} error=\"{}\"", options_.agent.node_name,
                  s.ToString());
    } else if (s.ok() && failing) {
      Log()->info("node heartbeat written again node={}", options_.agent.node_name);
    }
    failing = !s.ok();
    lock.lock();
    cv_.wait_for(lock, options_.heartbeat_interval, [this] { return stopping_; });
  }
}

void NodeProcess::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  // Traffic first: nothing reaches a sandbox the agent is about to leave.
  if (http_) {
    http_->Shutdown(2s);
    http_.reset();
  }
  if (agent_) agent_->Stop();
}

}  // namespace warren::node
