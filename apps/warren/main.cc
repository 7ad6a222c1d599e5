// `warren`: every role of the system in one binary — `warren server` and the CLI verbs.
//
// Adding to it is a change to this file only:
//   - a CLI verb: call your AddXxxCommand(app) below (write it like cli/get_command.cc);
//   - a server part (routes, a controller, the node agent, the E2B API, the gateway): register
//     it in RegisterServerParts, on the server before it starts:
//       server.router().Add("POST", "/sandboxes", handler, {.blocking = true});
//       server.AddComponent(std::make_unique<MyController>(server.store()));

#include <iostream>
#include <memory>

#include "api/types/labels.h"
#include "audit/journal.h"
#include "base/log.h"
#include "base/strings.h"
#include "cli/app.h"
#include "cli/server_command.h"
#include "controller/advanced_cron_job_controller.h"
#include "controller/claim/sandbox_connector.h"
#include "controller/image_pull_job_controller.h"
#include "controller/pool_autoscaler_controller.h"
#include "controller/pool_manager.h"
#include "controller/recycle_controller.h"
#include "controller/sandbox_update_ops_controller.h"
#include "controller/timers_controller.h"
#include "controller/traffic_policy_controller.h"
#include "gateway/gateway_component.h"
#include "gateway/tls_certificate.h"
#include "node/log_route.h"
#include "node/node_agent.h"
#include "obs/metrics_route.h"
#include "server/e2b/e2b_component.h"
#include "server/e2b/node_access.h"
#include "server/eviction_api.h"

namespace {

// The E2B layer's view of the node agent: dialing and the stats ring.
class AgentNodeAccess final : public warren::server::e2b::NodeAccess {
 public:
  explicit AgentNodeAccess(warren::node::NodeAgent& agent) : agent_(agent) {}
  warren::Result<warren::base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                                              std::chrono::milliseconds timeout) override {
    return agent_.Dial(sandbox_id, port, timeout);
  }
  std::vector<warren::server::e2b::UsageSample> Usage(std::string_view sandbox_id) override {
    std::vector<warren::server::e2b::UsageSample> out;
    for (const auto& s : agent_.Metrics(sandbox_id)) {
      warren::server::e2b::UsageSample u;
      u.time = s.time;
      u.cpu_count = static_cast<int32_t>(s.cpu_count);
      u.cpu_used_pct = s.cpu_used_pct;
      u.mem_used = s.memory_bytes;
      u.mem_total = s.memory_limit_bytes;
      u.disk_used = s.disk_bytes;
      u.disk_total = s.disk_limit_bytes;
      out.push_back(u);
    }
    return out;
  }
  warren::Status ApplyNetwork(const warren::api::Object& sandbox) override {
    return agent_.ApplyEgressPolicy(sandbox);
  }
  warren::Result<std::vector<warren::base::LogLine>> Logs(
      std::string_view sandbox_id, const warren::base::LogLineQuery& query) override {
    return agent_.ReadCommandLog(sandbox_id, query);
  }
  warren::Result<std::pair<std::string, uint32_t>> VolumeDir(const std::string& namespace_,
                                                             const std::string& name) override {
    return agent_.VolumeDir(namespace_, name);
  }
  std::vector<std::string> VolumeMountedBy(const std::string& namespace_,
                                           const std::string& name) override {
    return agent_.VolumeMountedBy(namespace_, name);
  }

 private:
  warren::node::NodeAgent& agent_;
};

// The warm pools' view of the node agent: envd of a claimed sandbox (/init with the node
// secret) and of a recycled one (/reset).
class AgentPoolAccess final : public warren::controller::claim::SandboxConnector,
                              public warren::controller::SandboxResetter {
 public:
  explicit AgentPoolAccess(warren::node::NodeAgent& agent) : agent_(agent) {}
  warren::Result<warren::base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                                              std::chrono::milliseconds timeout) override {
    return agent_.Dial(sandbox_id, port, timeout);
  }
  warren::net::Headers EnvdAuthHeaders(std::string_view sandbox_id) override {
    auto envd = agent_.Envd(sandbox_id);
    return envd.ok() ? (*envd)->AuthHeaders() : warren::net::Headers{};
  }
  // The agent's keep-alive client (node secret attached): no connect on the claim path.
  warren::Status Init(std::string_view sandbox_id, const std::string& body,
                      std::chrono::milliseconds timeout, std::string_view) override {
    ASSIGN_OR_RETURN(auto envd, agent_.Envd(sandbox_id));
    return envd->Init(body, timeout);
  }
  warren::Status Reset(const warren::api::Object& sandbox,
                       std::chrono::milliseconds timeout) override {
    auto id = sandbox.metadata.labels.find(warren::api::labels::kSandboxId);
    if (id == sandbox.metadata.labels.end()) {
      return warren::FailedPreconditionError(sandbox.Key() + " has no sandbox id");
    }
    // A real reset: processes restarted, writable layer discarded, envd fresh (node/reset.cc).
    return agent_.Reset(id->second, timeout);
  }

 private:
  warren::node::NodeAgent& agent_;
};

// The timers controller (spec.shutdownTime / spec.pauseTime) as a server component.
class TimersComponent : public warren::server::Component {
 public:
  explicit TimersComponent(warren::store::Store& store)
      : timers_(store, warren::base::RealClock()) {}
  std::string_view name() const override { return "timers"; }
  warren::Status Start() override { return timers_.Start(); }
  void Stop() override { timers_.Stop(); }

 private:
  warren::controller::TimersController timers_;
};

// TrafficPolicies onto the sandboxes they select, as a server component.
class TrafficPolicyComponent : public warren::server::Component {
 public:
  explicit TrafficPolicyComponent(warren::store::Store& store) : controller_(store) {}
  std::string_view name() const override { return "traffic-policy"; }
  warren::Status Start() override { return controller_.Start(); }
  void Stop() override { controller_.Stop(); }

 private:
  warren::controller::TrafficPolicyController controller_;
};

// ImagePullJobs' targets, counts, deadline and TTL, as a server component.
class ImagePullJobComponent : public warren::server::Component {
 public:
  explicit ImagePullJobComponent(warren::store::Store& store)
      : controller_(store, warren::base::RealClock()) {}
  std::string_view name() const override { return "imagepulljob"; }
  warren::Status Start() override { return controller_.Start(); }
  void Stop() override { controller_.Stop(); }

 private:
  warren::controller::ImagePullJobController controller_;
};

// AdvancedCronJobs (scheduled prewarm), as a server component.
class AdvancedCronJobComponent : public warren::server::Component {
 public:
  explicit AdvancedCronJobComponent(warren::store::Store& store)
      : controller_(store, warren::base::RealClock()) {}
  std::string_view name() const override { return "advancedcronjob"; }
  warren::Status Start() override { return controller_.Start(); }
  void Stop() override { controller_.Stop(); }

 private:
  warren::controller::AdvancedCronJobController controller_;
};

// PoolAutoscalers (controller/pool_autoscaler_controller.h) as a server component.
class PoolAutoscalerComponent : public warren::server::Component {
 public:
  explicit PoolAutoscalerComponent(warren::store::Store& store)
      : events_(store, {.component = "poolautoscaler-controller"}), controller_(store, &events_) {}
  std::string_view name() const override { return "pool-autoscaler"; }
  warren::Status Start() override { return controller_.Start(); }
  void Stop() override { controller_.Stop(); }

 private:
  warren::obs::EventRecorder events_;
  warren::controller::PoolAutoscalerController controller_;
};

// SandboxUpdateOps (batch template updates of running sandboxes), as a server component.
class SandboxUpdateOpsComponent : public warren::server::Component {
 public:
  explicit SandboxUpdateOpsComponent(warren::store::Store& store)
      : events_(store, {.component = "sandboxupdateops-controller"}),
        controller_(store, &events_) {}
  std::string_view name() const override { return "sandboxupdateops"; }
  warren::Status Start() override { return controller_.Start(); }
  void Stop() override { controller_.Stop(); }

 private:
  warren::obs::EventRecorder events_;
  warren::controller::SandboxUpdateOpsController controller_;
};

// The node agent as a part of `warren server`. A machine that cannot run sandboxes (not root,
// no cgroups) still serves the API: the agent stays off and /readyz says why.
class NodeComponent final : public warren::server::Component {
 public:
  NodeComponent(std::unique_ptr<warren::node::NodeAgent> agent,
                std::shared_ptr<warren::audit::Journal> journal)
      : journal_(std::move(journal)), agent_(std::move(agent)), access_(*agent_) {}
  std::string_view name() const override { return "node"; }
  warren::Status Start() override {
    if (!agent_->options().enabled) {
      warren::base::Logger("node")->info("node agent off (WARREN_NODE_AGENT=off)");
      off_ = true;
      return warren::Status::Ok();
    }
    warren::Status s = agent_->Start();
    if (!s.ok()) {
      warren::base::Logger("node")->error("node agent disabled: {}", s.ToString());
      agent_->Stop();
    }
    return warren::Status::Ok();
  }
  void Stop() override { agent_->Stop(); }
  bool Ready() const override { return off_ || agent_->Ready(); }
  std::vector<std::string> Degraded() const override {
    return off_ ? std::vector<std::string>{} : agent_->Degraded();
  }
  AgentNodeAccess& access() { return access_; }
  AgentPoolAccess& pool_access() { return pool_access_; }

 private:
  std::shared_ptr<warren::audit::Journal> journal_;  // outlives the agent, which borrows it
  std::unique_ptr<warren::node::NodeAgent> agent_;
  bool off_ = false;
  AgentNodeAccess access_;
  AgentPoolAccess pool_access_{*agent_};
};

// Warm pools (SandboxSet, claims, SandboxClaim, recycling) as a server component.
class PoolComponent : public warren::server::Component {
 public:
  explicit PoolComponent(std::unique_ptr<warren::controller::PoolManager> pools)
      : pools_(std::move(pools)) {}
  std::string_view name() const override { return "pools"; }
  warren::Status Start() override { return pools_->Start(); }
  void Stop() override { pools_->Stop(); }
  bool Ready() const override { return pools_->Ready(); }

 private:
  std::unique_ptr<warren::controller::PoolManager> pools_;
};

// `--sandbox-network`, `--sandbox-dns` and `--sandbox-open` as the node agent takes them.
warren::Result<std::optional<warren::sbnet::NetworkOptions>> ParseSandboxNetwork(
    const warren::server::ServerOptions& o) {
  if (o.sandbox_network == "none" || o.sandbox_network.empty()) {
    return std::optional<warren::sbnet::NetworkOptions>();
  }
  warren::sbnet::NetworkOptions net;
  auto range = warren::os::ParseIpv4Prefix(o.sandbox_network);
  if (!range.ok()) return range.status().WithPrefix("--sandbox-network");
  net.range = *range;
  for (std::string_view r : warren::base::Split(o.sandbox_dns, ',')) {
    if (r.empty()) continue;
    auto ip = warren::os::ParseIpv4(r);
    if (!ip.ok()) return ip.status().WithPrefix("--sandbox-dns");
    net.resolvers.push_back(*ip);
  }
  for (std::string_view c : warren::base::Split(o.sandbox_open, ',')) {
    if (c.empty()) continue;
    auto p = warren::os::ParseIpv4Prefix(c);
    if (!p.ok()) return p.status().WithPrefix("--sandbox-open");
    net.opened.push_back(*p);
  }
  return std::optional<warren::sbnet::NetworkOptions>(std::move(net));
}

// Domain mode (`--domain`): the certificate the gateway's HTTPS listener serves, the operator's
// or one from Warren's own CA, whose trust exports are printed for the clients.
warren::Result<std::optional<warren::gateway::TlsFrontOptions>> DomainTls(
    const warren::server::ServerOptions& o) {
  if (o.domain.empty()) return std::optional<warren::gateway::TlsFrontOptions>();
  auto files = o.tls_cert.empty()
                   ? warren::gateway::EnsureWarrenCertificate(o.data_dir + "/tls", o.domain)
                   : warren::gateway::CheckOperatorCertificate(o.tls_cert, o.tls_key, o.domain);
  if (!files.ok()) return files.status();
  if (!files->ca.empty()) {
    std::cerr << "Domain mode: sandbox ports are https://<port>-<sandboxId>." << o.domain
              << ", with a certificate signed by Warren's CA"
              << (files->ca_created ? " (made now)" : "") << ". Point *." << o.domain
              << " at this host and trust the CA:\n\n"
              << "  export E2B_DOMAIN=" << o.domain << "\n"
              << "  export NODE_EXTRA_CA_CERTS=" << files->ca << "   # Node\n"
              << "  cp " << files->ca
              << " /usr/local/share/ca-certificates/warren-ca.crt && update-ca-certificates   # "
                 "Python, curl (the system store)\n\n";
  }
  warren::gateway::TlsFrontOptions tls;
  tls.address = o.address;
  tls.port = o.tls_port;
  tls.certificate_chain = files->certificate_chain;
  tls.private_key = files->private_key;
  return std::optional<warren::gateway::TlsFrontOptions>(std::move(tls));
}

warren::Status RegisterServerParts(warren::server::Server& server) {
  warren::obs::AddMetricsRoute(server.router());
  // The node agent first: the gateway and the E2B API dial through it. Owned by its component
  // (the server's); the gateway's dialer and the E2B layer borrow it for the server's life.
  auto node_options = warren::node::NodeAgentOptions::ForDataDir(server.options().data_dir);
  node_options.secrets = &server.secrets();
  auto registries = warren::image::RegistryAllowlist::Parse(server.options().allowed_registries);
  if (!registries.ok()) return registries.status().WithPrefix("--allowed-registries");
  node_options.allowed_registries = std::move(registries).value();
  auto network = ParseSandboxNetwork(server.options());
  if (!network.ok()) return network.status();
  node_options.network = std::move(network).value();
  auto agent_owned =
      std::make_unique<warren::node::NodeAgent>(server.store(), std::move(node_options));
  warren::node::NodeAgent& agent = *agent_owned;
  warren::node::RegisterLogRoute(server.router(), agent, server.store());
  // The server's audit journals: the E2B API writes lifecycle calls there, the node agent what
  // envd did; the agent's component keeps them alive as long as the agent.
  std::shared_ptr<warren::audit::Journal> journal = server.audit_journal();
  agent.SetAuditJournal(journal.get());
  auto node = std::make_unique<NodeComponent>(std::move(agent_owned), journal);
  AgentNodeAccess& node_access = node->access();
  AgentPoolAccess& pool_access = node->pool_access();
  server.AddComponent(std::move(node));
  // The gateway (contracts.md: the server's port + 1, 7781 by default; an ephemeral one when the
  // server's is, written to <data dir>/gateway.port), dialing through the node agent.
  warren::gateway::GatewayComponentOptions gateway_options;
  gateway_options.gateway.server.address = server.options().address;
  gateway_options.gateway.server.port = warren::gateway::GatewayPortFor(server.options().port);
  gateway_options.port_file = server.options().data_dir + "/gateway.port";
  gateway_options.gateway.domain = server.options().domain;
  auto tls = DomainTls(server.options());
  if (!tls.ok()) return tls.status();
  gateway_options.tls = std::move(tls).value();
  gateway_options.tls_port_file = server.options().data_dir + "/gateway-tls.port";
  auto gateway = std::make_unique<warren::gateway::GatewayComponent>(
      server.store(), server.secrets(),
      std::make_unique<warren::gateway::FunctionDialer>(
          [&agent](std::string_view id, uint16_t port, std::chrono::milliseconds timeout) {
            return agent.Dial(id, port, timeout);
          },
          [&agent](std::string_view id, uint16_t port) { return agent.DialNow(id, port); }),
      std::move(gateway_options));
  warren::server::e2b::E2bParts e2b;
  e2b.options.response.domain = server.options().domain;
  e2b.node = &node_access;
  e2b.routes = gateway.get();
  e2b.audit = journal;
  // Claims tell the gateway the way E2B creates do.
  warren::server::e2b::RouteNotifier* routes = e2b.routes;
  warren::controller::PoolManagerOptions pool_options;
  pool_options.sets.quota = &server.quota();
  pool_options.claims.quota = &server.quota();
  auto pools = std::make_unique<warren::controller::PoolManager>(
      server.store(), server.secrets(), /*connector=*/&pool_access, /*resetter=*/&pool_access,
      [routes](const warren::api::Object& sandbox) {
        if (routes != nullptr) routes->SandboxChanged(sandbox);
      },
      pool_options);
  e2b.claimer = &pools->claimer();
  server.AddComponent(std::make_unique<PoolComponent>(std::move(pools)));
  auto installed = warren::server::e2b::E2bComponent::Install(server, std::move(e2b));
  if (!installed.ok()) return installed.status();
  gateway->SetResumer(std::make_unique<warren::gateway::E2bResumer>((*installed)->service()));
  server.AddComponent(std::move(gateway));
  server.AddComponent(std::make_unique<TimersComponent>(server.store()));
  server.AddComponent(std::make_unique<TrafficPolicyComponent>(server.store()));
  server.AddComponent(std::make_unique<ImagePullJobComponent>(server.store()));
  server.AddComponent(std::make_unique<AdvancedCronJobComponent>(server.store()));
  server.AddComponent(std::make_unique<PoolAutoscalerComponent>(server.store()));
  server.AddComponent(std::make_unique<SandboxUpdateOpsComponent>(server.store()));
  // Sandbox evictions and the PodUnavailableBudgets they keep (server/eviction_api.h).
  warren::server::InstallDisruption(server);
  return warren::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  warren::cli::App app(std::cout, std::cerr);
  warren::cli::AddServerCommand(app, RegisterServerParts);
  warren::cli::AddApplyCommand(app);
  warren::cli::AddGetCommand(app);
  warren::cli::AddDescribeCommand(app);
  warren::cli::AddDeleteCommand(app);
  warren::cli::AddScaleCommand(app);
  warren::cli::AddStatusCommand(app);
  warren::cli::AddSetCommand(app);
  warren::cli::AddCreateCommand(app);
  warren::cli::AddRestartCommand(app);
  warren::cli::AddVersionCommand(app);
  warren::cli::AddApiKeyCommand(app);
  warren::cli::AddLogsCommand(app);
  warren::cli::AddAuditCommand(app);
  warren::cli::AddExecCommand(app);
  warren::cli::AddTopCommand(app);
  warren::cli::AddCompletionCommand(app);
  warren::cli::AddImageCommand(app);
  warren::cli::AddDrainCommands(app);
  return app.Run(argc, argv);
}
