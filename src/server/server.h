#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/kinds.h"
#include "api/sandbox_secrets.h"
#include "audit/journal.h"
#include "base/result.h"
#include "net/http_server.h"
#include "net/router.h"
#include "obs/http_server_metrics.h"
#include "server/auth/key_store.h"
#include "server/component.h"
#include "server/quota/quota_service.h"
#include "store/sqlite_store.h"

namespace warren::server {

class ResourceApi;

// Whether `warren server` runs the scheduler (controller/scheduler_controller.h; `--scheduler`).
enum class SchedulerMode {
  kAuto,  // only when this server runs no node agent of its own (a control plane in a cluster)
  kOn,
  kOff,
};

struct ServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 7780;                      // 0 = ephemeral (see Server::port())
  std::string data_dir = "/var/lib/warren";  // the SQLite store lives in <data_dir>/store.db
  // The object store: empty for the embedded SQLite one in data_dir, or
  // "etcd://host:port[,host:port...][/prefix]" (store/etcd_store.h) for etcd.
  std::string store_url;
  // This server among several replicas of one etcd store (`--replica-name`): its claims' locks
  // and its Leases name it (server/leader_only.h). Keep it across restarts. Empty = the
  // default, server::DefaultReplicaName(port).
  std::string replica_name;
  store::SqliteStoreOptions::Sync store_sync = store::SqliteStoreOptions::Sync::kNormal;  // SQLite
  int loop_threads = 0;                      // 0 = one per core
  int blocking_threads = 32;                 // resource handlers block on the store
  size_t max_request_body_bytes = 3u << 20;  // larger → 413, as the Kubernetes API server
  // Connections from one client address. An E2B SDK at concurrency 100 keeps about 100 (one
  // per request in flight; undici and httpx pool keep-alive ones); ten times that leaves room
  // for a NAT or proxy that many users share. The listener's own cap is net's default (a
  // quarter of the open-file limit).
  size_t max_connections_per_address = 1024;
  const api::KindRegistry* kinds = nullptr;  // nullptr = api::BuiltinKinds()
  std::string key_dir;                       // the API keys; empty = <data_dir>/auth
  // Run a node agent in this process (the embedded default). Off (`--node off`): a pure
  // control plane, whose sandboxes run on `warren node` processes (issue 17).
  bool local_node = true;
  // Per-team quota: the ledger (embedded, or Redis) and its anti-drift (quota/quota_service.h).
  quota::QuotaOptions quota;
  // A second listener serving only GET /metrics, without a key, for a Prometheus on the same
  // host or network ("host:port"; port 0 = ephemeral, written to <data_dir>/metrics.port).
  // Empty = none (the main listener's /metrics, behind an admin key, is always there).
  std::string metrics_address;
  // For the node agent: the image registries it may pull from, comma-separated
  // (image/registry_allowlist.h; `--allowed-registries`). Empty: none.
  std::string allowed_registries;
  // For the node agent: sandboxes' link out (sbnet/sandbox_network.h; `--sandbox-network`):
  // their IPv4 range, or "none" for loopback only; the resolvers written into them; blocked
  // ranges they may reach nonetheless (comma-separated CIDRs).
  std::string sandbox_network = "10.213.0.0/16";
  std::string sandbox_dns = "8.8.8.8";
  std::string sandbox_open;
  // Domain mode (`--domain`): sandboxes' hosts are <port>-<id>.<domain>, served over HTTPS on
  // tls_port with tls_cert/tls_key, or with a certificate from Warren's own CA
  // (<data_dir>/tls) when those are empty. Empty domain = none.
  std::string domain;
  uint16_t tls_port = 443;
  std::string tls_cert;
  std::string tls_key;
  // The cluster's controllers: the scheduler places Sandboxes on Nodes (a local node agent that
  // takes unplaced sandboxes itself makes it unneeded, hence kAuto); node lifecycle marks a
  // Node that stopped renewing its heartbeat and its sandboxes lost (harmless while heartbeats
  // are fresh; the server's own node agent is never judged by it).
  SchedulerMode scheduler = SchedulerMode::kAuto;
  bool node_lifecycle = true;
};

// `warren server`: the object store, the API keys, the resource REST API
// (server/resource_api.h), /healthz, /readyz, /version, plus whatever other modules add. Every
// route but the health checks needs an API key (auth/route_guard.h): Start puts the check in
// front of whatever the router holds by then, so a module's routes need no code of their own
// for it and read the caller with auth::CallerOf. Adding a part is one call before Start:
//   server->router().Add("POST", "/sandboxes", handler, {.blocking = true});   // routes
//   server->AddComponent(std::make_unique<SandboxSetController>(server->store()));
// Lifecycle: Create → (router/AddComponent) → Start → Stop. Not thread-safe until started;
// then store(), kinds() and port() may be used from any thread.
class Server {
 public:
  // Creates the data directory when missing and opens the store (SQLite there, or etcd);
  // nothing is served yet.
  static Result<std::unique_ptr<Server>> Create(ServerOptions options);
  ~Server();  // Stop() if still running

  net::Router& router() { return router_; }
  store::Store& store() { return *store_; }
  auth::KeyStore& keys() { return *keys_; }
  // Seals and opens the secrets kept on Sandbox objects, with this install's key
  // (<key_dir>/seal.key, made on first start).
  const api::SandboxSecrets& secrets() const { return *secrets_; }
  // The cluster's node relay credential (node/relay_wire.h), derived from the same key: a
  // server reaches `warren node` processes with it.
  const std::string& relay_token() const { return relay_token_; }
  // Every path that makes a Sandbox reserves through it (the first component to start).
  quota::QuotaService& quota() { return *quota_; }
  // The key store for handlers that keep it (shared with the router's guard).
  const std::shared_ptr<auth::KeyStore>& shared_keys() { return keys_; }
  // The per-sandbox audit journals (<data dir>/audit; audit/journal.h): the resource API records
  // its writes to Sandboxes there, the E2B API and the node agent theirs.
  const std::shared_ptr<audit::Journal>& audit_journal() { return audit_; }
  const api::KindRegistry& kinds() const { return *kinds_; }
  const ServerOptions& options() const { return options_; }

  void AddComponent(std::unique_ptr<Component> component);

  // Starts the components in order, then serves HTTP.
  Status Start();
  // The bound port (after Start).
  uint16_t port() const;
  // The metrics listener's bound port (after Start); 0 when there is none.
  uint16_t metrics_port() const;
  // Stops serving (requests in flight get `grace`), then the components in reverse order.
  void Stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

 private:
  explicit Server(ServerOptions options);
  void AddBuiltinRoutes();
  Status StartMetricsListener();

  ServerOptions options_;
  const api::KindRegistry* kinds_;
  std::unique_ptr<store::Store> store_;  // SQLite or etcd (ServerOptions::store_url)
  std::shared_ptr<auth::KeyStore> keys_;
  std::shared_ptr<audit::Journal> audit_;
  std::unique_ptr<api::SandboxSecrets> secrets_;
  std::string relay_token_;
  quota::QuotaService* quota_ = nullptr;  // owned by components_
  std::unique_ptr<ResourceApi> resources_;
  net::Router router_;
  std::vector<std::unique_ptr<Component>> components_;
  size_t started_components_ = 0;
  std::unique_ptr<net::HttpServer> http_;
  std::unique_ptr<net::HttpServer> metrics_http_;
  std::unique_ptr<obs::HttpServerMetrics> http_metrics_;  // listener="api"
  bool stopped_ = false;
};

}  // namespace warren::server
