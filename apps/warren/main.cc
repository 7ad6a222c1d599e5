// `warren`: every role of the system in one binary — `warren server` and the CLI verbs.
//
// Adding to it is a change to this file only:
//   - a CLI verb: call your AddXxxCommand(app) below (write it like cli/get_command.cc);
//   - a server part (routes, a controller, the node agent, the E2B API, the gateway): register
//     it in RegisterServerParts, on the server before it starts:
//       server.router().Add("POST", "/sandboxes", handler, {.blocking = true});
//       server.AddComponent(std::make_unique<MyController>(server.store()));

#include <iostream>

#include "base/log.h"
#include "cli/app.h"
#include "cli/server_command.h"
#include "node/log_route.h"
#include "node/node_agent.h"

namespace {

// The node agent as a part of `warren server`. A machine that cannot run sandboxes (not root,
// no cgroups) still serves the API: the agent stays off and /readyz says why.
class NodeComponent final : public warren::server::Component {
 public:
  explicit NodeComponent(std::unique_ptr<warren::node::NodeAgent> agent)
      : agent_(std::move(agent)) {}
  std::string_view name() const override { return "node"; }
  warren::Status Start() override {
    warren::Status s = agent_->Start();
    if (!s.ok()) {
      warren::base::Logger("node")->error("node agent disabled: {}", s.ToString());
      agent_->Stop();
    }
    return warren::Status::Ok();
  }
  void Stop() override { agent_->Stop(); }
  bool Ready() const override { return agent_->Ready(); }
  warren::node::NodeAgent& agent() { return *agent_; }

 private:
  std::unique_ptr<warren::node::NodeAgent> agent_;
};

warren::Status RegisterServerParts(warren::server::Server& server) {
  auto agent = std::make_unique<warren::node::NodeAgent>(
      server.store(), warren::node::NodeAgentOptions::ForDataDir(server.options().data_dir));
  warren::node::RegisterLogRoute(server.router(), *agent, server.store());
  server.AddComponent(std::make_unique<NodeComponent>(std::move(agent)));
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
  warren::cli::AddLogsCommand(app);
  return app.Run(argc, argv);
}
