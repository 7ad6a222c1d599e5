#include "cli/app.h"
#include "server/version.h"

namespace warren::cli {

void AddVersionCommand(App& app) {
  auto* cmd = app.cli().add_subcommand("version", "Print the client and server versions");
  cmd->callback([&app] {
    app.out() << "Client Version: v" << server::Version() << "\n";
    auto client = app.Client();
    if (!client.ok()) return app.Fail(client.status());
    auto v = (*client)->GetPath("/version");
    if (!v.ok()) return app.FailFromServer(v.status());
    app.out() << "Server Version: " << v->value("gitVersion", "unknown") << "\n";
  });
}

}  // namespace warren::cli
