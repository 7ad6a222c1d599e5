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
  warren::server::e2b::E2bParts e2b;
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
