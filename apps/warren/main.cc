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

#include "api/json.h"
#include "api/status_object.h"
#include "api/types/labels.h"
#include "audit/journal.h"
#include "base/log.h"
#include "base/strings.h"
#include "cli/app.h"
#include "cli/node_command.h"
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
#include "node/relay_client.h"
#include "node/sandbox_object.h"
#include "obs/metrics_route.h"
#include "sbnet/sandbox_network.h"
#include "server/cluster/node_router.h"
#include "server/e2b/e2b_component.h"
#include "server/e2b/node_access.h"
#include "server/eviction_api.h"
#include "server/leader_only.h"

// This binary's own parts.
#include "cluster_components.h"

namespace {

// Where a sandbox runs: on this process's node agent, or on another node, reached through its
// relay (server/cluster/node_router.h). Asking the local agent first keeps the embedded path
// free of lookups.
class SandboxNodes {
 public:
  SandboxNodes(warren::node::NodeAgent& agent, warren::server::cluster::NodeRouter& router)
      : agent_(agent), router_(router) {}
  warren::node::NodeAgent& local() { return agent_; }

  warren::Result<warren::base::UniqueFd> Dial(std::string_view id, uint16_t port,
                                              std::chrono::milliseconds timeout) {
    ASSIGN_OR_RETURN(auto relay, Remote(id));
    if (relay) return relay->Dial(id, port, timeout);
    return agent_.Dial(id, port, timeout);
  }
  // An /init body for the sandbox's envd (NodeAgent::DeliverInit: its init channel, or
  // POST /init with the node secret).
  warren::Status Init(std::string_view id, const std::string& body,
                      std::chrono::milliseconds timeout) {
    ASSIGN_OR_RETURN(auto relay, Remote(id));
    if (relay) return relay->Init(id, body, timeout);
    return agent_.DeliverInit(id, body, timeout);
  }
  // A real reset: processes restarted, writable layer discarded, envd fresh (node/reset.cc).
  warren::Status Reset(std::string_view id, std::chrono::milliseconds timeout) {
    ASSIGN_OR_RETURN(auto relay, Remote(id));
    if (relay) return relay->Reset(id, timeout);
    return agent_.Reset(id, timeout);
  }
  warren::Result<warren::net::Headers> EnvdAuthHeaders(std::string_view id) {
    ASSIGN_OR_RETURN(auto relay, Remote(id));
    if (relay) return relay->EnvdAuthHeaders(id);
    ASSIGN_OR_RETURN(auto envd, agent_.Envd(id));
    return envd->AuthHeaders();
  }
  warren::Result<std::vector<warren::node::StatsSample>> Metrics(std::string_view id) {
    ASSIGN_OR_RETURN(auto relay, Remote(id));
    if (relay) return relay->Metrics(id);
    return agent_.Metrics(id);
  }
  warren::Result<std::vector<warren::base::LogLine>> CommandLog(
      std::string_view id, const warren::base::LogLineQuery& query) {
    ASSIGN_OR_RETURN(auto relay, Remote(id));
    if (relay) return relay->CommandLog(id, query);
    return agent_.ReadCommandLog(id, query);
  }
  // `warren logs` of a sandbox on another node: relayed there as it came, answered from there.
  // False for this process's own (or one no node runs: the local route says NotFound).
  bool ForwardLog(const std::string& id, warren::net::Responder& responder) {
    auto relay = Remote(id);
    if (!relay.ok() || !*relay) return false;
    if (warren::Status s = (*relay)->Forward(responder, std::chrono::hours(24)); !s.ok()) {
      warren::api::HttpError e = warren::api::ToHttpError(s);
      responder.Send(warren::net::Response::Json(e.code, warren::api::DumpJson(e.status)));
    }
    return true;
  }
  warren::Status ApplyNetwork(const warren::api::Object& sandbox) {
    ASSIGN_OR_RETURN(auto relay, Remote(warren::node::SandboxIdOf(sandbox)));
    if (relay) return relay->ApplyNetwork(sandbox);
    return agent_.ApplyEgressPolicy(sandbox);
  }

 private:
  // Null: the local agent's (or nobody's, which the agent then says).
  warren::Result<std::shared_ptr<warren::node::RelayClient>> Remote(std::string_view id) {
    if (agent_.Find(id).ok()) return std::shared_ptr<warren::node::RelayClient>();
    return router_.RemoteFor(id);
  }

  warren::node::NodeAgent& agent_;
  warren::server::cluster::NodeRouter& router_;
};

// The E2B layer's view of the nodes: dialing, the stats ring, logs, network policy.
class AgentNodeAccess final : public warren::server::e2b::NodeAccess {
 public:
  explicit AgentNodeAccess(SandboxNodes& nodes) : nodes_(nodes) {}
  warren::Result<warren::base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                                              std::chrono::milliseconds timeout) override {
    return nodes_.Dial(sandbox_id, port, timeout);
  }
  // None when the node cannot say (gone, unreachable): E2B's metrics are then empty.
  std::vector<warren::server::e2b::UsageSample> Usage(std::string_view sandbox_id) override {
    std::vector<warren::server::e2b::UsageSample> out;
    auto samples = nodes_.Metrics(sandbox_id);
    if (!samples.ok()) return out;
    for (const auto& s : *samples) {
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
    return nodes_.ApplyNetwork(sandbox);
  }
  warren::Result<std::vector<warren::base::LogLine>> Logs(
      std::string_view sandbox_id, const warren::base::LogLineQuery& query) override {
    return nodes_.CommandLog(sandbox_id, query);
  }
  // Volumes' files are read on the host that holds them: this process's node only.
  warren::Result<std::pair<std::string, uint32_t>> VolumeDir(const std::string& namespace_,
                                                             const std::string& name) override {
    return nodes_.local().VolumeDir(namespace_, name);
  }
  std::vector<std::string> VolumeMountedBy(const std::string& namespace_,
                                           const std::string& name) override {
    return nodes_.local().VolumeMountedBy(namespace_, name);
  }

 private:
  SandboxNodes& nodes_;
};

// The warm pools' view of the nodes: envd of a claimed sandbox (/init with the node secret)
// and of a recycled one (/reset).
class AgentPoolAccess final : public warren::controller::claim::SandboxConnector,
                              public warren::controller::SandboxResetter {
 public:
  explicit AgentPoolAccess(SandboxNodes& nodes) : nodes_(nodes) {}
  warren::Result<warren::base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                                              std::chrono::milliseconds timeout) override {
    return nodes_.Dial(sandbox_id, port, timeout);
  }
  warren::net::Headers EnvdAuthHeaders(std::string_view sandbox_id) override {
    auto headers = nodes_.EnvdAuthHeaders(sandbox_id);
    return headers.ok() ? *headers : warren::net::Headers{};
  }
  warren::Status Init(std::string_view sandbox_id, const std::string& body,
                      std::chrono::milliseconds timeout, std::string_view) override {
    return nodes_.Init(sandbox_id, body, timeout);
  }
  warren::Status Reset(const warren::api::Object& sandbox,
                       std::chrono::milliseconds timeout) override {
    const std::string id = warren::node::SandboxIdOf(sandbox);
    if (id.empty()) return warren::FailedPreconditionError(sandbox.Key() + " has no sandbox id");
    return nodes_.Reset(id, timeout);
  }

 private:
  SandboxNodes& nodes_;
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

// The node agent as a part of `warren server`, with the router to the other nodes. A machine
// that cannot run sandboxes (not root, no cgroups) still serves the API: the agent stays off and
// /readyz says why. The router starts first: the gateway and the pools dial through it.
class NodeComponent final : public warren::server::Component {
 public:
  NodeComponent(std::unique_ptr<warren::node::NodeAgent> agent,
                std::shared_ptr<warren::audit::Journal> journal, warren::store::Store& store,
                std::string relay_token)
      : journal_(std::move(journal)),
        agent_(std::move(agent)),
        router_(store, std::move(relay_token),
                agent_->options().enabled ? agent_->options().node_name : ""),
        nodes_(*agent_, router_),
        access_(nodes_),
        pool_access_(nodes_) {}
  std::string_view name() const override { return "node"; }
  warren::Status Start() override {
    RETURN_IF_ERROR(router_.Start());
    if (!agent_->options().enabled) {
      warren::base::Logger("node")->info(
          "no node agent in this process (--node off or WARREN_NODE_AGENT=off)");
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
  void Stop() override {
    agent_->Stop();
    router_.Stop();
  }
  bool Ready() const override { return off_ || agent_->Ready(); }
  std::vector<std::string> Degraded() const override {
    return off_ ? std::vector<std::string>{} : agent_->Degraded();
  }
  SandboxNodes& nodes() { return nodes_; }
  AgentNodeAccess& access() { return access_; }
  AgentPoolAccess& pool_access() { return pool_access_; }

 private:
  std::shared_ptr<warren::audit::Journal> journal_;  // outlives the agent, which borrows it
  std::unique_ptr<warren::node::NodeAgent> agent_;
  warren::server::cluster::NodeRouter router_;
  SandboxNodes nodes_;
  bool off_ = false;
  AgentNodeAccess access_;
  AgentPoolAccess pool_access_;
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
  auto network =
      warren::sbnet::ParseNetworkFlags(server.options().sandbox_network,
                                       server.options().sandbox_dns, server.options().sandbox_open);
  if (!network.ok()) return network.status();
  node_options.network = std::move(network).value();
  if (!server.options().local_node) node_options.enabled = false;
  // With the scheduler asked for, this node waits to be chosen like any other.
  node_options.take_unplaced = server.options().scheduler != warren::server::SchedulerMode::kOn;
  auto agent_owned =
      std::make_unique<warren::node::NodeAgent>(server.store(), std::move(node_options));
  warren::node::NodeAgent& agent = *agent_owned;
  // The server's audit journals: the E2B API writes lifecycle calls there, the node agent what
  // envd did; the agent's component keeps them alive as long as the agent.
  std::shared_ptr<warren::audit::Journal> journal = server.audit_journal();
  agent.SetAuditJournal(journal.get());
  auto node = std::make_unique<NodeComponent>(std::move(agent_owned), journal, server.store(),
                                              server.relay_token());
  AgentNodeAccess& node_access = node->access();
  AgentPoolAccess& pool_access = node->pool_access();
  SandboxNodes& nodes = node->nodes();
  warren::node::RegisterLogRoute(server.router(), agent, server.store(), {},
                                 [&nodes](const std::string& id, warren::net::Responder& r) {
                                   return nodes.ForwardLog(id, r);
                                 });
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
          [&nodes](std::string_view id, uint16_t port, std::chrono::milliseconds timeout) {
            return nodes.Dial(id, port, timeout);
          },
          [&agent](std::string_view id,
                   uint16_t port) -> std::optional<warren::Result<warren::base::UniqueFd>> {
            auto now = agent.DialNow(id, port);
            // Not this node's: another node's, dialed on a dial thread (the relay's handshake
            // waits), or nobody's, which that dial says.
            if (now && !now->ok() && now->status().code() == warren::StatusCode::kNotFound) {
              return std::nullopt;
            }
            return now;
          }),
      std::move(gateway_options));
  warren::server::e2b::E2bParts e2b;
  e2b.options.response.domain = server.options().domain;
  e2b.node = &node_access;
  e2b.routes = gateway.get();
  e2b.audit = journal;
  // Claims tell the gateway the way E2B creates do.
  warren::server::e2b::RouteNotifier* routes = e2b.routes;
  // Replicas (server/leader_only.h): over etcd every replica claims, the controllers run on the
  // leader; the embedded store has one server, which runs everything without an election.
  warren::server::ReplicaOptions replica;
  replica.name = server.options().replica_name;
  replica.elect = !warren::server::IsSingleReplica(server.options().store_url);
  auto replica_lease = std::make_unique<warren::server::ReplicaLease>(server.store(), replica);
  warren::controller::PoolManagerOptions pool_options;
  pool_options.parts =
      replica.elect ? warren::controller::PoolParts::kClaimer : warren::controller::PoolParts::kAll;
  pool_options.sets.quota = &server.quota();
  pool_options.claims.quota = &server.quota();
  pool_options.claims.replica = replica.name;
  pool_options.claims.liveness = replica_lease->liveness();
  server.AddComponent(std::move(replica_lease));
  auto pools = std::make_unique<warren::controller::PoolManager>(
      server.store(), server.secrets(), /*connector=*/&pool_access, /*resetter=*/&pool_access,
      [routes](const warren::api::Object& sandbox) {
        if (routes != nullptr) routes->SandboxChanged(sandbox);
      },
      pool_options);
  e2b.claimer = &pools->claimer();
  warren::controller::claim::Claimer* claimer = &pools->claimer();
  server.AddComponent(std::make_unique<PoolComponent>(std::move(pools)));
  auto installed = warren::server::e2b::E2bComponent::Install(server, std::move(e2b));
  if (!installed.ok()) return installed.status();
  gateway->SetResumer(std::make_unique<warren::gateway::E2bResumer>((*installed)->service()));
  server.AddComponent(std::move(gateway));
  // The one-writer controllers, built afresh for each term as leader.
  warren::store::Store* store = &server.store();
  const warren::api::SandboxSecrets* secrets = &server.secrets();
  warren::server::quota::QuotaService* quota = &server.quota();
  bool elect = replica.elect;
  const bool local_agent = agent.options().enabled;
  // The embedded store has one server and its own agent (or none, in tests of the control plane
  // alone): nothing to place on. The scheduler's auto is for replicas on etcd.
  const bool scheduler =
      warren::apps::SchedulerWanted(server.options().scheduler, local_agent || !elect);
  const bool node_lifecycle = server.options().node_lifecycle;
  warren::controller::NodeLifecycleOptions lifecycle;
  if (local_agent) lifecycle.exempt_nodes.insert(agent.options().node_name);
  auto controllers = [=, &pool_access] {
    std::vector<std::unique_ptr<warren::server::Component>> parts;
    if (elect) {
      warren::controller::PoolManagerOptions o;
      o.parts = warren::controller::PoolParts::kControllers;
      o.claimer = claimer;
      o.sets.quota = quota;
      parts.push_back(
          std::make_unique<PoolComponent>(std::make_unique<warren::controller::PoolManager>(
              *store, *secrets, &pool_access, &pool_access, nullptr, o)));
    }
    parts.push_back(std::make_unique<TimersComponent>(*store));
    parts.push_back(std::make_unique<TrafficPolicyComponent>(*store));
    parts.push_back(std::make_unique<ImagePullJobComponent>(*store));
    parts.push_back(std::make_unique<AdvancedCronJobComponent>(*store));
    parts.push_back(std::make_unique<PoolAutoscalerComponent>(*store));
    parts.push_back(std::make_unique<SandboxUpdateOpsComponent>(*store));
    // The cluster's controllers (apps/warren/cluster_components.h): the scheduler when no local
    // agent takes unplaced sandboxes; node lifecycle, which never judges this process's node.
    if (scheduler) parts.push_back(std::make_unique<warren::apps::SchedulerComponent>(*store));
    if (node_lifecycle) {
      parts.push_back(std::make_unique<warren::apps::NodeLifecycleComponent>(*store, lifecycle));
    }
    // The PodUnavailableBudgets' status (evictions themselves: every replica, below).
    parts.push_back(warren::server::MakeBudgetController(*store));
    return parts;
  };
  server.AddComponent(
      std::make_unique<warren::server::LeaderOnly>(server.store(), controllers, replica));
  // Sandbox evictions, judged against the PodUnavailableBudgets (server/eviction_api.h).
  warren::server::InstallEvictions(server);
  return warren::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  warren::cli::App app(std::cout, std::cerr);
  warren::cli::AddServerCommand(app, RegisterServerParts);
  warren::cli::AddNodeCommand(app);
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
