// `warren set image sbs NAME [CONTAINER=]IMAGE...`: okactl's set image. Changes the images of a
// SandboxSet's inline template, which starts the set's rolling update; refuses a set that uses
// templateRef (rollout_edits.h). With -w it waits, printing the status line as it changes,
// until every replica is updated and available, or --timeout passes (then it says which
// members are not ready, as `warren status sbs` does).

#include <fmt/format.h>

#include "api/kinds.h"
#include "base/strings.h"
#include "cli/app.h"
#include "cli/pool_wait.h"
#include "cli/printer.h"
#include "cli/resource_args.h"
#include "cli/rollout_edits.h"
#include "cli/rollout_status.h"
#include "cli/wait_flags.h"

namespace warren::cli {
namespace {

struct SetImageFlags {
  std::vector<std::string> args;
  bool wait = false;
  std::string timeout = "5m";
};

void RunSetImage(App& app, const SetImageFlags& f) {
  if (f.args.size() < 2) {
    return app.Fail(InvalidArgumentError("warren set image sbs NAME [CONTAINER=]IMAGE..."));
  }
  const api::KindInfo* kind = app.kinds().Resolve(f.args[0]);
  if (kind != &api::SandboxSetKind()) {
    return app.Fail(InvalidArgumentError(
        fmt::format("warren set image changes SandboxSets (sbs), not \"{}\"; for sandboxes use "
                    "`warren create suo -l SELECTOR CONTAINER=IMAGE`",
                    f.args[0])));
  }
  const std::string& name = f.args[1];
  auto images = ParseImageArgs({f.args.begin() + 2, f.args.end()});
  if (!images.ok()) return app.Fail(images.status());
  auto timeout = ParseTimeout(f.timeout);
  if (!timeout.ok()) return app.Fail(timeout.status());
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  auto sbs = (*client)->Get(*kind, app.Namespace(), name);
  if (!sbs.ok()) return app.FailFromServer(sbs.status());
  auto patch = SetImagePatch(*sbs, *images);
  if (!patch.ok()) return app.Fail(patch.status());
  auto patched = (*client)->MergePatch(*kind, app.Namespace(), name, *patch);
  if (!patched.ok()) return app.FailFromServer(patched.status());
  app.out() << QualifiedName(*kind, name) << " image updated\n";
  if (!f.wait) return;
  Status waited = WaitForSandboxSet(
      app, **client, name, *timeout,
      [](const api::Json& now) {
        RolloutStatus r = SandboxSetRollout(now);
        return std::make_pair(r.done, r.ProgressLine());
      },
      fmt::format("sandboxset \"{}\" to finish its rollout", name));
  if (!waited.ok()) app.Fail(waited);
}

}  // namespace

void AddSetCommand(App& app) {
  auto* set = app.cli().add_subcommand("set", "Change part of an object, as okactl: set image");
  set->require_subcommand(1);
  auto flags = std::make_shared<SetImageFlags>();
  auto* cmd = set->add_subcommand(
      "image", "Set a SandboxSet's images: warren set image sbs NAME [CONTAINER=]IMAGE...");
  cmd->add_option("args", flags->args, "sbs NAME [CONTAINER=]IMAGE...")->required();
  cmd->add_flag("-w,--wait", flags->wait, "wait until every replica is updated and available");
  cmd->add_option("--timeout", flags->timeout, "how long --wait waits (default 5m; 0 = no limit)");
  cmd->callback([&app, flags] { RunSetImage(app, *flags); });
}

}  // namespace warren::cli
