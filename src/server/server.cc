#include "server/server.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "api/json.h"
#include "base/log.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "node/relay_wire.h"
#include "obs/metrics_route.h"
#include "server/auth/route_guard.h"
#include "server/resource_api.h"
#include "server/ui/ui_routes.h"
#include "server/version.h"
#include "store/etcd_store.h"
#include "trace/route_spans.h"
#include "trace/tracer.h"

namespace warren::server {

Server::Server(ServerOptions options)
    : options_(std::move(options)),
      kinds_(options_.kinds ? options_.kinds : &api::BuiltinKinds()) {}

Server::~Server() { Stop(std::chrono::milliseconds(0)); }

namespace {

// The store ServerOptions::store_url names: the embedded SQLite one by default, else etcd.
Result<std::unique_ptr<store::Store>> OpenStore(const ServerOptions& options,
                                                const api::KindRegistry& kinds) {
  if (options.store_url.empty() || options.store_url == "sqlite") {
    store::SqliteStoreOptions sqlite;
    sqlite.path = options.data_dir + "/store.db";
    sqlite.sync = options.store_sync;
    ASSIGN_OR_RETURN(auto opened, store::SqliteStore::Open(sqlite, kinds));
    return std::unique_ptr<store::Store>(std::move(opened));
  }
  ASSIGN_OR_RETURN(store::EtcdStoreOptions etcd, store::ParseEtcdUrl(options.store_url));
  ASSIGN_OR_RETURN(auto opened, store::EtcdStore::Open(std::move(etcd), kinds));
  return std::unique_ptr<store::Store>(std::move(opened));
}

}  // namespace

Result<std::unique_ptr<Server>> Server::Create(ServerOptions options) {
  std::unique_ptr<Server> server(new Server(std::move(options)));
  std::error_code ec;
  std::filesystem::create_directories(server->options_.data_dir, ec);
  if (ec) {
    return Status(
        ec.value() == EACCES ? StatusCode::kPermissionDenied : StatusCode::kInternal,
        fmt::format("create data directory {}: {}", server->options_.data_dir, ec.message()));
  }
  ASSIGN_OR_RETURN(server->store_, OpenStore(server->options_, *server->kinds_));
  std::string key_dir = server->options_.key_dir.empty() ? server->options_.data_dir + "/auth"
                                                         : server->options_.key_dir;
  ASSIGN_OR_RETURN(server->keys_, auth::KeyStore::Open(key_dir));
  ASSIGN_OR_RETURN(base::SealedBox box, base::SealedBox::LoadOrCreate(key_dir + "/seal.key"));
  server->relay_token_ = box.Token(node::kRelayTokenContext);
  server->secrets_ = std::make_unique<api::SandboxSecrets>(std::move(box));
  ASSIGN_OR_RETURN(auto quota,
                   quota::QuotaService::Create(*server->store_, server->options_.quota));
  server->quota_ = quota.get();
  server->components_.push_back(std::move(quota));
  server->audit_ = std::make_shared<audit::Journal>(server->options_.data_dir + "/audit",
                                                    audit::Journal::Options{});
  server->resources_ =
      std::make_unique<ResourceApi>(*server->store_, *server->kinds_, *server->secrets_,
                                    server->quota_, server->options_.max_request_body_bytes);
  server->resources_->SetAuditJournal(server->audit_);
  server->resources_->Register(server->router_);
  server->AddBuiltinRoutes();
  return server;
}

void Server::AddBuiltinRoutes() {
  ui::AddUiRoutes(router_);
  router_.Add("GET", "/healthz",
              [](net::Request&&, net::Responder r) { r.Send(net::Response::Text(200, "ok")); });
  router_.Add("GET", "/readyz", [this](net::Request&&, net::Responder r) {
    std::string body = "ok";
    for (const auto& c : components_) {
      if (!c->Ready()) {
        r.Send(net::Response::Text(503, fmt::format("{} is not ready", c->name())));
        return;
      }
      for (const std::string& d : c->Degraded()) body += fmt::format("\n{}: {}", c->name(), d);
    }
    r.Send(net::Response::Text(200, body));
  });
  // Who the presented key is (the CLI's default namespace is the key's team).
  router_.Add("GET", "/whoami", [](net::Request&& req, net::Responder r) {
    const auth::Principal& who = auth::CallerOf(req);
    api::Json body = {
        {"keyId", who.key_id}, {"name", who.key_name}, {"team", who.team}, {"admin", who.admin}};
    r.Send(net::Response::Json(200, api::DumpJson(body)));
  });
  router_.Add("GET", "/version", [](net::Request&&, net::Responder r) {
    std::string v(Version());
    auto dot = v.find('.');
    auto dot2 = v.find('.', dot + 1);
    api::Json body = {{"major", v.substr(0, dot)},
                      {"minor", v.substr(dot + 1, dot2 - dot - 1)},
                      {"gitVersion", "v" + v},
                      {"platform", "linux/amd64"},
                      {"compiler", "gcc"}};
    r.Send(net::Response::Json(200, api::DumpJson(body)));
  });
}

void Server::AddComponent(std::unique_ptr<Component> component) {
  components_.push_back(std::move(component));
}

Status Server::Start() {
  auto log = base::Logger("server");
  for (; started_components_ < components_.size(); ++started_components_) {
    Component& c = *components_[started_components_];
    Status s = c.Start();
    if (!s.ok()) {
      log->error("component failed to start name={} error={}", c.name(), s.ToString());
      Stop(std::chrono::milliseconds(0));
      return s.WithPrefix(fmt::format("start {}", c.name()));
    }
    log->info("component started name={}", c.name());
  }
  auth::GuardRoutes(router_, keys_);
  // Outside the key check, so a refused request is traced too.
  if (trace::Enabled()) trace::TraceRoutes(router_);
  net::ServerOptions http;
  http.address = options_.address;
  http.port = options_.port;
  http.loop_threads = options_.loop_threads;
  http.blocking_threads = options_.blocking_threads;
  http.max_connections_per_address = options_.max_connections_per_address;
  auto started = net::HttpServer::Start(http, std::move(router_));
  if (!started.ok()) {
    Stop(std::chrono::milliseconds(0));
    return started.status().WithPrefix(
        fmt::format("listen on {}:{}", options_.address, options_.port));
  }
  http_ = std::move(*started);
  http_metrics_ = std::make_unique<obs::HttpServerMetrics>(
      obs::Metrics::Default(), "api", [http = http_.get()] { return http->connection_stats(); });
  if (Status s = StartMetricsListener(); !s.ok()) {
    Stop(std::chrono::milliseconds(0));
    return s;
  }
  log->info("serving address={}:{} data_dir={} version={}", options_.address, http_->port(),
            options_.data_dir, Version());
  return Status::Ok();
}

Status Server::StartMetricsListener() {
  if (options_.metrics_address.empty()) return Status::Ok();
  const std::string& a = options_.metrics_address;
  auto colon = a.rfind(':');
  auto port = colon == std::string::npos ? std::nullopt : base::ParseInt64(a.substr(colon + 1));
  if (!port || *port < 0 || *port > 65535) {
    return InvalidArgumentError(
        fmt::format("metrics address \"{}\" must be host:port (port 0-65535)", a));
  }
  net::Router router;
  obs::AddMetricsRoute(router);
  net::ServerOptions http;
  http.address = a.substr(0, colon);
  http.port = static_cast<uint16_t>(*port);
  http.loop_threads = 1;
  http.blocking_threads = 1;
  auto started = net::HttpServer::Start(http, std::move(router));
  if (!started.ok()) return started.status().WithPrefix(fmt::format("listen on {} (metrics)", a));
  metrics_http_ = std::move(*started);
  if (*port == 0) {
    RETURN_IF_ERROR(base::WriteFileAtomically(options_.data_dir + "/metrics.port",
                                              fmt::format("{}\n", metrics_http_->port())));
  }
  base::Logger("server")->info("metrics without a key on {}:{}", http.address,
                               metrics_http_->port());
  return Status::Ok();
}

uint16_t Server::port() const { return http_ ? http_->port() : 0; }

uint16_t Server::metrics_port() const { return metrics_http_ ? metrics_http_->port() : 0; }

void Server::Stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  http_metrics_.reset();  // no scrape reaches into the server from here on
  if (metrics_http_) metrics_http_->Shutdown(std::chrono::milliseconds(0));
  if (http_) http_->Shutdown(grace);
  if (resources_) resources_->Shutdown();
  while (started_components_ > 0) {
    Component& c = *components_[--started_components_];
    c.Stop();
    base::Logger("server")->info("component stopped name={}", c.name());
  }
  http_.reset();
  metrics_http_.reset();
}

}  // namespace warren::server
