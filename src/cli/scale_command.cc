#include <fmt/format.h>

#include "cli/app.h"
#include "cli/printer.h"
#include "cli/resource_args.h"

namespace warren::cli {
namespace {

struct ScaleFlags {
  std::vector<std::string> args;
  int64_t replicas = -1;
  std::string resource_version;
};

void RunScale(App& app, const ScaleFlags& f) {
  if (f.replicas < 0) {
    return app.Fail(InvalidArgumentError("--replicas=COUNT is required, and COUNT must be >= 0"));
  }
  auto refs = ParseResourceArgs(app.kinds(), f.args);
  if (!refs.ok()) return app.Fail(refs.status());
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
  cmd->callback([&app, flags] { RunScale(app, *flags); });
}

}  // namespace warren::cli
