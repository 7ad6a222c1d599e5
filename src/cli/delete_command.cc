#include <fmt/format.h>

#include "api/json_path.h"
#include "base/strings.h"
#include "cli/app.h"
#include "cli/printer.h"
#include "cli/resource_args.h"

namespace warren::cli {
namespace {

struct DeleteFlags {
  std::vector<std::string> args;
  std::string selector;
  std::string cascade = "background";
  bool ignore_not_found = false;
};

void RunDelete(App& app, const DeleteFlags& f) {
  api::Json options = api::Json::object();
  if (f.cascade == "orphan") {
    options["propagationPolicy"] = "Orphan";
  } else if (f.cascade == "background" || f.cascade == "true") {
    options["propagationPolicy"] = "Background";
  } else {
    return app.Fail(InvalidArgumentError(
        fmt::format("invalid --cascade value \"{}\": use background or orphan", f.cascade)));
  }
  auto refs = ParseResourceArgs(app.kinds(), f.args);
  if (!refs.ok()) return app.Fail(refs.status());
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  const std::string ns = app.Namespace();
  for (const auto& ref : *refs) {
    std::vector<std::string> names;
    if (!ref.name.empty()) {
      names.push_back(ref.name);
    } else if (!f.selector.empty()) {
      auto list =
          (*client)->List(*ref.kind, ns, "labelSelector=" + base::PercentEncode(f.selector));
      if (!list.ok()) {
        app.FailFromServer(list.status());
        continue;
      }
      for (const auto& item : (*list)["items"]) {
        names.push_back(api::JsonPathText(item, ".metadata.name"));
      }
    } else {
      return app.Fail(InvalidArgumentError(
          "resource(s) were provided, but no name or label selector was specified"));
    }
    for (const auto& name : names) {
      auto deleted = (*client)->Delete(*ref.kind, ns, name, options);
      if (!deleted.ok()) {
        if (f.ignore_not_found && deleted.status().code() == StatusCode::kNotFound) continue;
        app.FailFromServer(deleted.status());
        continue;
      }
      app.out() << fmt::format("{}.{} \"{}\" deleted\n", ref.kind->singular, ref.kind->group, name);
    }
  }
}

}  // namespace

void AddDeleteCommand(App& app) {
  auto flags = std::make_shared<DeleteFlags>();
  auto* cmd = app.cli().add_subcommand("delete", "Delete resources: warren delete sbx NAME...");
  cmd->add_option("resources", flags->args, "KIND NAME... or KIND/NAME...")->required();
  cmd->add_option("--selector,-l", flags->selector, "delete what matches this label selector");
  cmd->add_option("--cascade", flags->cascade,
                  "background (dependents are garbage-collected) or orphan");
  cmd->add_flag("--ignore-not-found", flags->ignore_not_found, "treat a missing object as success");
  cmd->callback([&app, flags] { RunDelete(app, *flags); });
}

}  // namespace warren::cli
