// `warren status sbs NAME`: okactl's rollout status of a SandboxSet, one line
// ("my-pool  Updating  1/3 updated  1/3 available"), and while it is updating, why members are
// not ready (their status message, as okactl's first diagnosis source).
// `warren status suo NAME`: a SandboxUpdateOps' line ("suo-zk7h7  Updating   0/2 updated
// 1 updating  0 failed"); a Failed one exits non-zero with the reason it stopped.

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
    return app.Fail(InvalidArgumentError("warren status sbs|suo NAME: one object"));
  }
  const ResourceRef& ref = (*refs)[0];
  if (ref.kind != &api::SandboxSetKind() && ref.kind != &api::SandboxUpdateOpsKind()) {
    return app.Fail(InvalidArgumentError(
        fmt::format("warren status knows SandboxSets (sbs) and SandboxUpdateOps (suo), not {}",
                    ref.kind->plural)));
  }
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  if (ref.kind == &api::SandboxUpdateOpsKind()) {
    auto suo = (*client)->Get(*ref.kind, app.Namespace(), ref.name);
    if (!suo.ok()) return app.FailFromServer(suo.status());
    UpdateOpsStatus st = UpdateOpsRollout(*suo);
    app.out() << st.Line() << "\n";
    if (st.failed_phase()) {
      return app.Fail(FailedPreconditionError(
          fmt::format("sandboxupdateops \"{}\" failed ({}): {}", st.name, st.reason, st.message)));
    }
    return;
  }
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
  auto* cmd =
      app.cli().add_subcommand("status", "Show a rollout, as okactl: warren status sbs|suo NAME");
  cmd->add_option("resource", *args, "sbs NAME, suo NAME (or KIND/NAME)")->required();
  cmd->callback([&app, args] { RunStatus(app, *args); });
}

}  // namespace warren::cli
