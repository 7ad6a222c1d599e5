#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "api/json_path.h"
#include "api/object_codec.h"
#include "base/strings.h"
#include "cli/app.h"
#include "cli/manifests.h"
#include "cli/printer.h"
#include "cli/resource_args.h"

namespace warren::cli {
namespace {

struct DeleteFlags {
  std::vector<std::string> args;
  std::vector<std::string> files;
  bool recursive = false;
  bool all = false;
  std::string selector;
  std::string cascade = "background";
  bool ignore_not_found = false;
  // As kubectl: wait until the objects are really gone (finalizers done, e.g. a sandbox's
  // runtime resources destroyed by the node agent).
  bool wait = true;
  int timeout_seconds = 60;
};

// Waits until each object is gone (or replaced by a new one of the same name).
void WaitGone(
    App& app, ApiClient& client,
    const std::vector<std::tuple<const api::KindInfo*, std::string, std::string, std::string>>&
        gone,
    int timeout_seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  for (const auto& [kind, ns, name, uid] : gone) {
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

// One object to delete.
struct Target {
  const api::KindInfo* kind;
  std::string ns;
  std::string name;
};

// The objects the manifests name, in reverse dependency order (claims before their pools).
Status TargetsFromFiles(App& app, const DeleteFlags& f, std::vector<Target>& out) {
  std::vector<Manifest> manifests;
  for (const auto& arg : f.files) RETURN_IF_ERROR(CollectManifests(arg, f.recursive, manifests));
  std::stable_sort(manifests.begin(), manifests.end(), [](const Manifest& a, const Manifest& b) {
    return DependencyRank(a.doc) > DependencyRank(b.doc);
  });
  for (const auto& m : manifests) {
    auto obj = api::ObjectFromJson(m.doc);
    if (!obj.ok()) return obj.status().WithPrefix(fmt::format("error in {}", m.source));
    const api::KindInfo* kind = app.kinds().ForObject(obj->api_version, obj->kind);
    if (kind == nullptr) {
      return InvalidArgumentError(
          fmt::format("resource mapping not found for name: \"{}\" from \"{}\": no matches for "
                      "kind \"{}\" in version \"{}\"",
                      obj->metadata.name, m.source, obj->kind, obj->api_version));
    }
    if (obj->metadata.name.empty()) {
      return InvalidArgumentError(fmt::format("error in {}: metadata.name is required", m.source));
    }
    std::string ns = kind->namespaced ? obj->metadata.namespace_ : "";
    if (kind->namespaced && ns.empty()) ns = app.Namespace();
    out.push_back({kind, ns, obj->metadata.name});
  }
  return Status::Ok();
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
  if (f.files.empty() == f.args.empty()) {
    return app.Fail(InvalidArgumentError(
        f.files.empty() ? "you must provide one or more resources by argument or filename "
                          "(warren delete KIND NAME, or -f FILE)"
                        : "cannot delete resources named both by argument and by -f"));
  }
  std::vector<Target> targets;
  if (!f.files.empty()) {
    Status s = TargetsFromFiles(app, f, targets);
    if (!s.ok()) return app.Fail(s);
  }
  Result<std::vector<ResourceRef>> refs = std::vector<ResourceRef>{};
  if (!f.args.empty()) refs = ParseResourceArgs(app.kinds(), f.args);
  if (!refs.ok()) return app.Fail(refs.status());
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  const std::string ns = app.Namespace();
  for (const auto& ref : *refs) {
    const std::string ref_ns = ref.kind->namespaced ? ns : "";
    if (!ref.name.empty()) {
      targets.push_back({ref.kind, ref_ns, ref.name});
    } else if (!f.selector.empty() || f.all) {
      std::string query =
          f.selector.empty() ? "" : "labelSelector=" + base::PercentEncode(f.selector);
      auto list = (*client)->List(*ref.kind, ref_ns, query);
      if (!list.ok()) {
        app.FailFromServer(list.status());
        continue;
      }
      for (const auto& item : (*list)["items"]) {
        targets.push_back({ref.kind, ref_ns, api::JsonPathText(item, ".metadata.name")});
      }
    } else {
      return app.Fail(InvalidArgumentError(
          "resource(s) were provided, but no name, label selector, or --all flag specified"));
    }
  }
  std::vector<std::tuple<const api::KindInfo*, std::string, std::string, std::string>> deleting;
  for (const auto& t : targets) {
    auto deleted = (*client)->Delete(*t.kind, t.ns, t.name, options);
    if (!deleted.ok()) {
      // kubectl's rule: --all implies --ignore-not-found (what it listed may go meanwhile, a
      // pool's members with their pool).
      if ((f.ignore_not_found || f.all) && deleted.status().code() == StatusCode::kNotFound) {
        continue;
      }
      app.FailFromServer(deleted.status());
      continue;
    }
    app.out() << fmt::format("{}.{} \"{}\" deleted\n", t.kind->singular, t.kind->group, t.name);
    if (deleted->is_object() && deleted->contains("metadata") &&
        !api::JsonPathText(*deleted, ".metadata.deletionTimestamp").empty()) {
      deleting.emplace_back(t.kind, t.ns, t.name, api::JsonPathText(*deleted, ".metadata.uid"));
    }
  }
  if (f.wait) WaitGone(app, **client, deleting, f.timeout_seconds);
}

}  // namespace

void AddDeleteCommand(App& app) {
  auto flags = std::make_shared<DeleteFlags>();
  auto* cmd = app.cli().add_subcommand(
      "delete", "Delete resources: warren delete sbx NAME..., or -f FILE|DIR|-");
  cmd->add_option("resources", flags->args, "KIND NAME... or KIND/NAME...");
  cmd->add_option("--filename,-f", flags->files,
                  "delete what these files name: file, directory or - for stdin (repeatable)");
  cmd->add_flag("--recursive,-R", flags->recursive, "read directories recursively");
  cmd->add_flag("--all", flags->all, "delete every object of the kinds in the namespace");
  cmd->add_option("--selector,-l", flags->selector, "delete what matches this label selector");
  cmd->add_option("--cascade", flags->cascade,
                  "background (dependents are garbage-collected) or orphan");
  cmd->add_flag("--ignore-not-found", flags->ignore_not_found,
                "treat a missing object as success (always so with --all)");
  cmd->add_flag("--wait,!--no-wait", flags->wait,
                "wait until the objects are gone (their finalizers done); default true");
  cmd->add_option("--timeout", flags->timeout_seconds, "seconds to wait for deletion");
  cmd->callback([&app, flags] { RunDelete(app, *flags); });
}

}  // namespace warren::cli
