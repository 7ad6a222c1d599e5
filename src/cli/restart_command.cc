// `warren restart sbx NAME (--all | -c CONTAINER...)`: okactl's restart, done by the node agent
// rather than a ContainerRecreateRequest. It writes annotation warren.dev/restart-requested-at
// (the time now, RFC 3339); the node stops every process of the sandbox and starts them again
// on the same writable layer, then writes the same value to status.restartedFor. The verb waits
// for that and Ready. Only a Running sandbox restarts. A sandbox's containers share one process
// tree, so -c restarts them all too; it is checked against the template so a typo is caught.

#include <fmt/format.h>

#include <algorithm>

#include "api/json_path.h"
#include "api/kinds.h"
#include "api/types/labels.h"
#include "base/clock.h"
#include "base/strings.h"
#include "base/time_format.h"
#include "cli/app.h"
#include "cli/printer.h"
#include "cli/wait_flags.h"

namespace warren::cli {
namespace {

constexpr std::chrono::milliseconds kPollInterval{250};

struct RestartFlags {
  std::vector<std::string> args;
  std::vector<std::string> containers;
  bool all = false;
  std::string timeout = "60s";
};

void RunRestart(App& app, const RestartFlags& f) {
  const api::KindInfo* kind = f.args.size() == 2 ? app.kinds().Resolve(f.args[0]) : nullptr;
  if (kind != &api::SandboxKind()) {
    return app.Fail(InvalidArgumentError("warren restart sbx NAME (--all | -c CONTAINER)"));
  }
  if (f.all == !f.containers.empty()) {
    return app.Fail(InvalidArgumentError("give one of --all or -c/--container"));
  }
  auto timeout = ParseTimeout(f.timeout);
  if (!timeout.ok()) return app.Fail(timeout.status());
  const std::string& name = f.args[1];
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  const std::string ns = app.Namespace();
  auto sbx = (*client)->Get(*kind, ns, name);
  if (!sbx.ok()) return app.FailFromServer(sbx.status());
  std::string phase = api::JsonPathText(*sbx, ".status.phase");
  if (phase != "Running") {
    return app.Fail(FailedPreconditionError(
        fmt::format("sandbox \"{}\" is {}, not Running: only a running sandbox restarts", name,
                    phase.empty() ? "not started" : phase)));
  }
  // The inline template's containers; a templateRef sandbox's are not checked here.
  auto containers = api::ParseJson(api::JsonPathText(*sbx, ".spec.template.spec.containers"));
  if (containers.ok() && containers->is_array()) {
    std::vector<std::string> known;
    for (const auto& c : *containers) {
      if (c.is_object()) known.push_back(c.value("name", ""));
    }
    for (const auto& c : f.containers) {
      if (std::find(known.begin(), known.end(), c) == known.end()) {
        return app.Fail(
            InvalidArgumentError(fmt::format("sandbox \"{}\" has no container \"{}\" (it has {})",
                                             name, c, base::Join(known, ", "))));
      }
    }
  }
  const std::string requested = base::FormatRfc3339Nanos(base::RealClock().Now());
  api::Json patch = {
      {"metadata", {{"annotations", {{api::annotations::kRestartRequestedAt, requested}}}}}};
  auto patched = (*client)->MergePatch(*kind, ns, name, patch);
  if (!patched.ok()) return app.FailFromServer(patched.status());
  Status waited = PollUntil(
      [&]() -> Result<bool> {
        ASSIGN_OR_RETURN(api::Json now, (*client)->Get(*kind, ns, name));
        return api::JsonPathText(now, ".status.restartedFor") == requested &&
               api::JsonPathText(now, ".status.conditions[?(@.type==\"Ready\")].status") == "True";
      },
      *timeout, kPollInterval, fmt::format("sandbox \"{}\" to restart", name));
  if (!waited.ok()) return app.Fail(waited);
  app.out() << QualifiedName(*kind, name) << " restarted\n";
}

}  // namespace

void AddRestartCommand(App& app) {
  auto flags = std::make_shared<RestartFlags>();
  auto* cmd = app.cli().add_subcommand(
      "restart",
      "Restart a running sandbox's processes on its same files: warren restart sbx NAME");
  cmd->add_option("args", flags->args, "sbx NAME")->required();
  cmd->add_flag("--all", flags->all, "restart every container");
  cmd->add_option("-c,--container", flags->containers,
                  "a container to restart (a sandbox's containers restart together)");
  cmd->add_option("--timeout", flags->timeout,
                  "how long to wait for the restart (default 60s; 0 = no limit)");
  cmd->callback([&app, flags] { RunRestart(app, *flags); });
}

}  // namespace warren::cli
