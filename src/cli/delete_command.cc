#include <fmt/format.h>

#include <chrono>
#include <thread>

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
  // As kubectl: wait until the objects are really gone (finalizers done, e.g. a sandbox's
  // runtime resources destroyed by the node agent).
  bool wait = true;
  int timeout_seconds = 60;
};

// Waits until each object is gone (or replaced by a new one of the same name).
void WaitGone(App& app, ApiClient& client, const std::string& ns,
              const std::vector<std::tuple<const api::KindInfo*, std::string, std::string>>& gone,
              int timeout_seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  for (const auto& [kind, name, uid] : gone) {
    while (true) {
      auto obj = client.Get(*kind, ns, name);
      if (!obj.ok() || api::JsonPathText(*obj, ".metadata.uid") != uid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        return app.Fail(DeadlineExceededError(fmt::format(
            "timed out waiting for {}.{} \"{}\" to be deleted (still: {})", kind->singular,
            kind->group, name, api::JsonPathText(*obj, ".metadata.finalizers"))));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

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
  std::vector<std::tuple<const api::KindInfo*, std::string, std::string>> deleting;
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
      if (deleted->is_object() && deleted->contains("metadata") &&
          !api::JsonPathText(*deleted, ".metadata.deletionTimestamp").empty()) {
        deleting.emplace_back(ref.kind, name, api::JsonPathText(*deleted, ".metadata.uid"));
      }
    }
  }
  if (f.wait) WaitGone(app, **client, ns, deleting, f.timeout_seconds);
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
  cmd->add_flag("--wait,!--no-wait", flags->wait,
                "wait until the objects are gone (their finalizers done); default true");
  cmd->add_option("--timeout", flags->timeout_seconds, "seconds to wait for deletion");
  cmd->callback([&app, flags] { RunDelete(app, *flags); });
}

}  // namespace warren::cli
