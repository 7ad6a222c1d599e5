// `warren`: every role of the system in one binary — `warren server` and the CLI verbs.
//
// Adding to it is a change to this file only:
//   - a CLI verb: call your AddXxxCommand(app) below (write it like cli/get_command.cc);
//   - a server part (routes, a controller, the node agent, the E2B API, the gateway): register
//     it in RegisterServerParts, on the server before it starts:
//       server.router().Add("POST", "/sandboxes", handler, {.blocking = true});
//       server.AddComponent(std::make_unique<MyController>(server.store()));

#include <iostream>

#include "cli/app.h"
#include "cli/server_command.h"

namespace {

warren::Status RegisterServerParts(warren::server::Server& server) {
  (void)server;
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
  return app.Run(argc, argv);
}
