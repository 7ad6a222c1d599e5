// `warren create suo -l SELECTOR CONTAINER=IMAGE...`: okactl's create sandboxupdateops. Makes a
// SandboxUpdateOps with a generated name whose patch sets those images on the sandboxes the
// selector picks (e.g. -l agents.kruise.io/claim-name=my-claim), after checking that it picks
// at least one: an ops over nothing would complete at once and say nothing.

#include <fmt/format.h>

#include "api/kinds.h"
#include "base/strings.h"
#include "cli/app.h"
#include "cli/printer.h"
#include "cli/rollout_edits.h"

namespace warren::cli {
namespace {

struct CreateFlags {
  std::vector<std::string> args;
  UpdateOpsFlags ops;
};

void RunCreate(App& app, const CreateFlags& f) {
  const api::KindInfo* kind = f.args.empty() ? nullptr : app.kinds().Resolve(f.args[0]);
  if (kind != &api::SandboxUpdateOpsKind()) {
    return app.Fail(InvalidArgumentError(
        "warren create makes SandboxUpdateOps: warren create suo -l SELECTOR CONTAINER=IMAGE... "
        "(other kinds: warren apply -f)"));
  }
  auto images = ParseImageArgs({f.args.begin() + 1, f.args.end()});
  if (!images.ok()) return app.Fail(images.status());
  auto ops = UpdateOpsForImages(f.ops, *images);
  if (!ops.ok()) return app.Fail(ops.status());
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  const std::string ns = app.Namespace();
  auto matched = (*client)->List(api::SandboxKind(), ns,
                                 "limit=1&labelSelector=" + base::PercentEncode(f.ops.selector));
  if (!matched.ok()) return app.FailFromServer(matched.status());
  if (!matched->contains("items") || (*matched)["items"].empty()) {
    return app.Fail(FailedPreconditionError(
        fmt::format("no sandbox in namespace \"{}\" matches selector \"{}\"", ns, f.ops.selector)));
  }
  auto created = (*client)->Create(*kind, ns, *ops);
  if (!created.ok()) return app.FailFromServer(created.status());
  std::string name = created->contains("metadata") ? (*created)["metadata"].value("name", "") : "";
  app.out() << QualifiedName(*kind, name) << " created\n";
}

}  // namespace

void AddCreateCommand(App& app) {
  auto flags = std::make_shared<CreateFlags>();
  auto* cmd = app.cli().add_subcommand(
      "create", "Create a SandboxUpdateOps, as okactl: warren create suo -l SELECTOR C=IMAGE...");
  cmd->add_option("args", flags->args, "suo CONTAINER=IMAGE...")->required();
  cmd->add_option("-l,--selector", flags->ops.selector,
                  "the sandboxes to update (k=v, k!=v, k in (a,b), !k)")
      ->required();
  cmd->add_option("--max-unavailable", flags->ops.max_unavailable,
                  "at most this many (or this percentage) updating at once (default 1)");
  cmd->add_option("--partition", flags->ops.partition,
                  "keep this many (or this percentage) on the old template, the last by name");
  cmd->add_flag("--paused", flags->ops.paused, "create it paused (start none until unpaused)");
  cmd->callback([&app, flags] { RunCreate(app, *flags); });
}

}  // namespace warren::cli
