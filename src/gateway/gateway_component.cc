#include "gateway/gateway_component.h"

#include <fmt/format.h>

#include "base/log.h"
#include "base/small_file.h"

namespace warren::gateway {

GatewayComponent::GatewayComponent(store::Store& store, const api::SandboxSecrets& secrets,
                                   std::unique_ptr<SandboxDialer> dialer,
                                   GatewayComponentOptions options)
    : store_(store), secrets_(secrets), dialer_(std::move(dialer)), options_(std::move(options)) {}

GatewayComponent::~GatewayComponent() { Stop(); }

Status GatewayComponent::Start() {
  ASSIGN_OR_RETURN(sync_, RouteSync::Start(store_, secrets_, routes_, options_.sync));
  auto gateway = Gateway::Start(options_.gateway, routes_, *dialer_, resumer_.get());
  if (!gateway.ok()) {
    sync_.reset();
    return gateway.status();
  }
  gateway_ = std::move(gateway).value();
  if (!options_.port_file.empty()) {
    Status written =
        base::WriteFileAtomically(options_.port_file, fmt::format("{}\n", gateway_->port()));
    if (!written.ok()) {
      Stop();
      return written.WithPrefix("gateway port file");
    }
  }
  if (options_.tls) {
    TlsFrontOptions tls = *options_.tls;
    tls.upstream_address = options_.gateway.server.address == "0.0.0.0"
                               ? "127.0.0.1"
                               : options_.gateway.server.address;
    tls.upstream_port = gateway_->port();
    auto front = TlsFront::Start(std::move(tls));
    if (!front.ok()) {
      Stop();
      return front.status();
    }
    tls_ = std::move(front).value();
    if (!options_.tls_port_file.empty()) {
      Status written =
          base::WriteFileAtomically(options_.tls_port_file, fmt::format("{}\n", tls_->port()));
      if (!written.ok()) {
        Stop();
        return written.WithPrefix("HTTPS port file");
      }
    }
  }
  obs::Metrics& metrics = options_.metrics ? *options_.metrics : obs::Metrics::Default();
  metrics_ = std::make_unique<MetricsExport>(metrics, [this] { return Samples(); });
  http_metrics_ = std::make_unique<obs::HttpServerMetrics>(
      metrics, "gateway", [g = gateway_.get()] { return g->connection_stats(); });
  return Status::Ok();
}

void GatewayComponent::Stop() {
  metrics_.reset();  // no scrape reaches into what stops next
  http_metrics_.reset();
  if (tls_) tls_->Stop();
  tls_.reset();
  if (gateway_) gateway_->Shutdown(std::chrono::seconds(1));
  if (sync_) sync_->Stop();
  gateway_.reset();
  sync_.reset();
}

std::vector<MetricSample> GatewayComponent::Samples() const {
  std::vector<MetricSample> out;
  if (gateway_) out = gateway_->MetricSamples();
  if (tls_) {
    TlsFrontStats tls = tls_->stats();
    for (auto [result, n] :
         {std::pair{"ok", tls.accepted}, std::pair{"failed", tls.failed_handshakes},
          std::pair{"rejected", tls.rejected}}) {
      out.push_back({"warren_gateway_tls_connections_total",
                     "counter",
                     {{"result", result}},
                     static_cast<double>(n)});
    }
  }
  if (sync_) {
    RouteSyncStats stats = sync_->Stats();
    out.push_back({"warren_gateway_route_events_total",
                   "counter",
                   {{"result", "applied"}},
                   static_cast<double>(stats.applied)});
    out.push_back({"warren_gateway_route_events_total",
                   "counter",
                   {{"result", "ignored"}},
                   static_cast<double>(stats.ignored)});
  }
  return out;
}

void GatewayComponent::SandboxChanged(const api::Object& sandbox) {
  auto route = RouteFromSandbox(sandbox, secrets_);
  if (!route.ok()) {
    base::Logger("gateway")->warn("route notification ignored error={}", route.status().ToString());
    return;
  }
  UpdateResult result = routes_.Upsert(std::move(route).value());
  base::Logger("gateway")->debug("route notified sandbox_id={} result={}", SandboxIdOf(sandbox),
                                 UpdateResultName(result));
}

void GatewayComponent::SandboxRemoved(std::string_view sandbox_id, std::string_view uid,
                                      int64_t resource_version) {
  routes_.Remove(sandbox_id, resource_version, uid);
}

Result<base::UniqueFd> NoNodeDialer::Dial(std::string_view sandbox_id, uint16_t,
                                          std::chrono::milliseconds) {
  return NotFoundError(
      fmt::format("sandbox {}: no node agent runs in this server to dial into it", sandbox_id));
}

Status E2bResumer::Resume(const Route& route, std::chrono::milliseconds) {
  return service_.ResumeForTraffic(route.namespace_, route.name);
}

Status E2bResumer::PauseIdle(const Route& route) {
  return service_.PauseIdle(route.namespace_, route.name, route.uid);
}

uint16_t GatewayPortFor(uint16_t server_port) {
  if (server_port == 0 || server_port == 65535) return 0;
  return static_cast<uint16_t>(server_port + 1);
}

}  // namespace warren::gateway
