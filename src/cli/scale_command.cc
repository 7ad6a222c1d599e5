// `warren scale sbs NAME --replicas N [-w]`: sets a SandboxSet's replicas through its scale
// subresource. With -w it waits, printing a progress line as the pool fills (or drains), until
// it holds N members and all are available, or --timeout passes (then it says which members
// are not ready, as `warren status sbs` does).

#include <fmt/format.h>

#include "api/kinds.h"
#include "cli/app.h"
#include "cli/pool_wait.h"
#include "cli/printer.h"
#include "cli/resource_args.h"
#include "cli/rollout_status.h"
#include "cli/wait_flags.h"

namespace warren::cli {
namespace {

struct ScaleFlags {
  std::vector<std::string> args;
  int64_t replicas = -1;
  std::string resource_version;
  bool wait = false;
  std::string timeout = "5m";
};

void RunScale(App& app, const ScaleFlags& f) {
  if (f.replicas < 0) {
    return app.Fail(InvalidArgumentError("--replicas=COUNT is required, and COUNT must be >= 0"));
  }
  auto refs = ParseResourceArgs(app.kinds(), f.args);
  if (!refs.ok()) return app.Fail(refs.status());
  auto timeout = ParseTimeout(f.timeout);
  if (!timeout.ok()) return app.Fail(timeout.status());
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  for (const auto& ref : *refs) {
    if (ref.name.empty()) {
      return app.Fail(InvalidArgumentError("resource(s) were provided, but no name was specified"));
    }
    if (!ref.kind->scale_subresource) {
      app.Fail(InvalidArgumentError(
          fmt::format("{} cannot be scaled (it has no scale subresource)", ref.kind->Resource())));
      continue;
    }
    api::Json patch = {{"spec", {{"replicas", f.replicas}}}};
    if (!f.resource_version.empty()) {
      patch["metadata"] = {{"resourceVersion", f.resource_version}};
    }
    auto r = (*client)->MergePatch(*ref.kind, app.Namespace(), ref.name, patch, "scale");
    if (!r.ok()) {
      app.FailFromServer(r.status());
      continue;
    }
    app.out() << QualifiedName(*ref.kind, ref.name) << " scaled\n";
    if (!f.wait) continue;
    if (ref.kind != &api::SandboxSetKind()) {
      app.Fail(InvalidArgumentError(
          fmt::format("--wait follows SandboxSets only, not {}", ref.kind->Resource())));
      continue;
    }
    Status waited = WaitForSandboxSet(
        app, **client, ref.name, *timeout,
        [](const api::Json& now) {
          ScaleStatus s = SandboxSetScale(now);
          return std::make_pair(s.done, s.ProgressLine());
        },
        fmt::format("sandboxset \"{}\" to have {} available", ref.name, f.replicas));
    if (!waited.ok()) app.Fail(waited);
  }
}

}  // namespace

void AddScaleCommand(App& app) {
  auto flags = std::make_shared<ScaleFlags>();
  auto* cmd = app.cli().add_subcommand(
      "scale", "Set the replicas of a SandboxSet: warren scale sbs NAME --replicas N");
  cmd->add_option("resources", flags->args, "KIND NAME or KIND/NAME")->required();
  cmd->add_option("--replicas", flags->replicas, "the new number of replicas")->required();
  cmd->add_option("--resource-version", flags->resource_version,
                  "only scale if the object is still at this resourceVersion");
  cmd->add_flag("-w,--wait", flags->wait,
                "wait until the SandboxSet holds that many members, all available");
  cmd->add_option("--timeout", flags->timeout, "how long --wait waits (default 5m; 0 = no limit)");
  cmd->callback([&app, flags] { RunScale(app, *flags); });
}

}  // namespace warren::cli
