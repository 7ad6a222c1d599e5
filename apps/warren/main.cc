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

#include "cli/app.h"
#include "cli/server_command.h"
#include "controller/pool_manager.h"
#include "controller/timers_controller.h"
#include "gateway/gateway_component.h"
#include "obs/metrics_route.h"
#include "server/e2b/e2b_component.h"

namespace {

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

warren::Status RegisterServerParts(warren::server::Server& server) {
  warren::obs::AddMetricsRoute(server.router());
  // The gateway (contracts.md: the server's port + 1, 7781 by default; an ephemeral one when the
  // server's is, written to <data dir>/gateway.port). No node agent runs in the server yet, so
  // its dials report sandboxes as not found until one is wired in here.
  warren::gateway::GatewayComponentOptions gateway_options;
  gateway_options.gateway.server.address = server.options().address;
  gateway_options.gateway.server.port = warren::gateway::GatewayPortFor(server.options().port);
  gateway_options.port_file = server.options().data_dir + "/gateway.port";
  auto gateway = std::make_unique<warren::gateway::GatewayComponent>(
      server.store(), std::make_unique<warren::gateway::NoNodeDialer>(),
      std::move(gateway_options));
  warren::server::e2b::E2bParts e2b;
  e2b.routes = gateway.get();
  // Claims tell the gateway the way E2B creates do.
  warren::server::e2b::RouteNotifier* routes = e2b.routes;
  auto pools = std::make_unique<warren::controller::PoolManager>(
      server.store(), /*connector=*/nullptr, /*resetter=*/nullptr,
      [routes](const warren::api::Object& sandbox) {
        if (routes != nullptr) routes->SandboxChanged(sandbox);
      });
  e2b.claimer = &pools->claimer();
  server.AddComponent(std::make_unique<PoolComponent>(std::move(pools)));
  auto installed = warren::server::e2b::E2bComponent::Install(server, std::move(e2b));
  if (!installed.ok()) return installed.status();
  gateway->SetResumer(std::make_unique<warren::gateway::E2bResumer>((*installed)->service()));
  server.AddComponent(std::move(gateway));
  server.AddComponent(std::make_unique<TimersComponent>(server.store()));
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
  warren::cli::AddVersionCommand(app);
  warren::cli::AddApiKeyCommand(app);
  return app.Run(argc, argv);
}
