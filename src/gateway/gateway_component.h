#pragma once

#include <memory>
#include <optional>
#include <string>

#include "gateway/gateway.h"
#include "gateway/metrics_export.h"
#include "gateway/resumer.h"
#include "gateway/route_sync.h"
#include "gateway/route_table.h"
#include "gateway/sandbox_dialer.h"
#include "gateway/tls_front.h"
#include "obs/http_server_metrics.h"
#include "obs/metrics.h"
#include "server/component.h"
#include "server/e2b/node_access.h"
#include "server/e2b/route_notifier.h"
#include "server/e2b/sandbox_service.h"
#include "store/store.h"

namespace warren::gateway {

struct GatewayComponentOptions {
  GatewayOptions gateway;
  RouteSyncOptions sync;
  // Written with the bound port once listening (scripts and tests that start the server with
  // an ephemeral gateway port read it here); empty = none.
  std::string port_file;
  obs::Metrics* metrics = nullptr;  // null = obs::Metrics::Default()
  // HTTPS in front of the gateway (domain mode: `--domain`), relaying to it; its upstream is
  // filled in at Start. The bound port goes to tls_port_file when that is not empty.
  std::optional<TlsFrontOptions> tls;
  std::string tls_port_file;
};

// The gateway as a part of `warren server`: owns the route table, its store watch (RouteSync)
// and the listener (Gateway), and is the E2B layer's RouteNotifier, so a create, resume, pause
// or kill reaches the table the moment it is written (the watch confirms it later). Its metrics
// are published in the obs registry while it runs.
//
// Lifecycle: construct, SetResumer (optional), hand it to the server (AddComponent) and to the
// E2B layer (as its RouteNotifier), Start, Stop. The notifier methods are thread-safe and may be
// called before Start (the table exists from construction). Ready once the first list of
// Sandboxes is in the table and the listener is up.
class GatewayComponent final : public server::Component, public server::e2b::RouteNotifier {
 public:
  // Borrows the store and the secrets (envd tokens are sealed on the objects).
  GatewayComponent(store::Store& store, const api::SandboxSecrets& secrets,
                   std::unique_ptr<SandboxDialer> dialer, GatewayComponentOptions options);
  ~GatewayComponent() override;

  // Auto-resume of paused sandboxes whose route allows it. Before Start.
  void SetResumer(std::unique_ptr<Resumer> resumer) { resumer_ = std::move(resumer); }

  std::string_view name() const override { return "gateway"; }
  Status Start() override;
  void Stop() override;
  bool Ready() const override { return gateway_ != nullptr; }

  RouteTable& routes() { return routes_; }
  // The bound port (after Start), 0 before.
  uint16_t port() const { return gateway_ ? gateway_->port() : 0; }
  // The HTTPS port (after Start), 0 when there is none.
  uint16_t tls_port() const { return tls_ ? tls_->port() : 0; }

  // RouteNotifier.
  void SandboxChanged(const api::Object& sandbox) override;
  void SandboxRemoved(std::string_view sandbox_id, std::string_view uid,
                      int64_t resource_version) override;

 private:
  std::vector<MetricSample> Samples() const;

  store::Store& store_;
  const api::SandboxSecrets& secrets_;
  std::unique_ptr<SandboxDialer> dialer_;
  std::unique_ptr<Resumer> resumer_;
  GatewayComponentOptions options_;
  RouteTable routes_;
  std::unique_ptr<RouteSync> sync_;
  std::unique_ptr<Gateway> gateway_;
  std::unique_ptr<TlsFront> tls_;
  std::unique_ptr<MetricsExport> metrics_;
  std::unique_ptr<obs::HttpServerMetrics> http_metrics_;  // listener="gateway"
};

// A SandboxDialer over the node agent's dialing (the E2B layer's NodeAccess has the same
// contract). Borrows it.
class NodeAccessDialer final : public SandboxDialer {
 public:
  explicit NodeAccessDialer(server::e2b::NodeAccess& node) : node_(node) {}
  Result<base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                              std::chrono::milliseconds timeout) override {
    return node_.Dial(sandbox_id, port, timeout);
  }

 private:
  server::e2b::NodeAccess& node_;
};

// For a server without a node agent: every dial fails as "no such sandbox" (502 not found).
class NoNodeDialer final : public SandboxDialer {
 public:
  Result<base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t,
                              std::chrono::milliseconds) override;
};

// Auto-resume through the E2B layer (SandboxService::ResumeForTraffic: unpause and wait until
// it runs again). Borrows the service.
class E2bResumer final : public Resumer {
 public:
  explicit E2bResumer(server::e2b::SandboxService& service) : service_(service) {}
  Status Resume(const Route& route, std::chrono::milliseconds timeout) override;
  Status PauseIdle(const Route& route) override;

 private:
  server::e2b::SandboxService& service_;
};

// The gateway's port for a server on `server_port`: the next port (7780 → 7781, contracts.md),
// or an ephemeral one when the server's is.
uint16_t GatewayPortFor(uint16_t server_port);

}  // namespace warren::gateway
