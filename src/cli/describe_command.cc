#include <fmt/format.h>

#include "api/json_path.h"
#include "base/strings.h"
#include "cli/app.h"
#include "cli/printer.h"
#include "cli/resource_args.h"

namespace warren::cli {
namespace {

struct DescribeFlags {
  std::vector<std::string> args;
  std::string selector;
};

void RunDescribe(App& app, const DescribeFlags& f) {
  auto refs = ParseResourceArgs(app.kinds(), f.args);
  if (!refs.ok()) return app.Fail(refs.status());
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  const std::string ns = app.Namespace();
  std::vector<std::pair<const api::KindInfo*, api::Json>> objects;
  for (const auto& ref : *refs) {
    if (!ref.name.empty()) {
      auto obj = (*client)->Get(*ref.kind, ns, ref.name);
      if (!obj.ok()) {
        app.FailFromServer(obj.status());
        continue;
      }
      objects.emplace_back(ref.kind, std::move(*obj));
      continue;
    }
    std::string query;
    if (!f.selector.empty()) query = "labelSelector=" + base::PercentEncode(f.selector);
    auto list = (*client)->List(*ref.kind, ns, query);
    if (!list.ok()) {
      app.FailFromServer(list.status());
      continue;
    }
    for (auto& item : (*list)["items"]) objects.emplace_back(ref.kind, std::move(item));
  }
  bool first = true;
  for (const auto& [kind, obj] : objects) {
    if (!first) app.out() << "\n\n";
    first = false;
    // Events about the object (warren.dev Events name it in involvedObject).
    // The uid keeps out the events of an earlier object of the same name.
    std::string name = api::JsonPathText(obj, ".metadata.name");
    std::string uid = api::JsonPathText(obj, ".metadata.uid");
    std::string query =
        "fieldSelector=" + base::PercentEncode(fmt::format(
                               "involvedObject.kind={},involvedObject.name={}{}", kind->kind, name,
                               uid.empty() ? "" : ",involvedObject.uid=" + uid));
    auto events = (*client)->List(api::EventKind(), kind->namespaced ? ns : "", query);
    app.out() << Describe(*kind, obj, events.ok() ? *events : api::Json(), base::RealClock().Now());
  }
  if (objects.empty() && app.out().good() && refs->size() == 1 && (*refs)[0].name.empty()) {
    app.err() << "No resources found in " << ns << " namespace.\n";
  }
}

}  // namespace

void AddDescribeCommand(App& app) {
  auto flags = std::make_shared<DescribeFlags>();
  auto* cmd =
      app.cli().add_subcommand("describe", "Show details of a resource: warren describe sbs NAME");
  cmd->add_option("resources", flags->args, "KIND [NAME...] or KIND/NAME")->required();
  cmd->add_option("--selector,-l", flags->selector, "label selector");
  cmd->callback([&app, flags] { RunDescribe(app, *flags); });
}

}  // namespace warren::cli
