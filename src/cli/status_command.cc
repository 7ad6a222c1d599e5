// `warren status sbs NAME`: okactl's rollout status of a SandboxSet, one line
// ("my-pool  Updating  1/3 updated  1/3 available"), and while it is updating, why members are
// not ready (their status message, as okactl's first diagnosis source).

#include <fmt/format.h>

#include "api/json_path.h"
#include "api/kinds.h"
#include "base/strings.h"
#include "cli/app.h"
#include "cli/resource_args.h"
#include "cli/rollout_status.h"

namespace warren::cli {
namespace {

constexpr size_t kMaxDiagnosed = 5;

void RunStatus(App& app, const std::vector<std::string>& args) {
  auto refs = ParseResourceArgs(app.kinds(), args);
  if (!refs.ok()) return app.Fail(refs.status());
  if (refs->size() != 1 || (*refs)[0].name.empty()) {
    return app.Fail(InvalidArgumentError("warren status sbs NAME: one SandboxSet"));
  }
  const ResourceRef& ref = (*refs)[0];
  if (ref.kind != &api::SandboxSetKind()) {
    return app.Fail(InvalidArgumentError(
        fmt::format("warren status knows SandboxSets (sbs), not {}", ref.kind->plural)));
  }
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  auto sbs = (*client)->Get(*ref.kind, app.Namespace(), ref.name);
  if (!sbs.ok()) return app.FailFromServer(sbs.status());
  RolloutStatus rollout = SandboxSetRollout(*sbs);
  app.out() << rollout.Line() << "\n";
  if (rollout.done) return;
  // The pool's members (status.selector: the pool's unclaimed sandboxes).
  std::string selector = api::JsonPathText(*sbs, ".status.selector");
  if (selector.empty()) selector = "agents.kruise.io/sandbox-pool=" + ref.name;
  auto members = (*client)->List(api::SandboxKind(), app.Namespace(),
                                 "labelSelector=" + base::PercentEncode(selector));
  if (!members.ok()) return app.FailFromServer(members.status());
  for (const std::string& line : UnreadyMembers((*members)["items"], kMaxDiagnosed)) {
    app.out() << "  " << line << "\n";
  }
}

}  // namespace

void AddStatusCommand(App& app) {
  auto args = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.cli().add_subcommand(
      "status", "Show a SandboxSet's rollout, as okactl: warren status sbs NAME");
  cmd->add_option("resource", *args, "sbs NAME or sbs/NAME")->required();
  cmd->callback([&app, args] { RunStatus(app, *args); });
}

}  // namespace warren::cli
