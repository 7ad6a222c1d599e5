#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/json_path.h"
#include "api/object_codec.h"
#include "api/types/labels.h"
#include "api/yaml_codec.h"
#include "cli/app.h"
#include "cli/apply_patch.h"
#include "cli/manifests.h"
#include "cli/printer.h"

namespace warren::cli {
namespace {

struct ApplyFlags {
  std::vector<std::string> files;
  bool recursive = false;
};

void ApplyOne(App& app, ApiClient& client, Manifest& m) {
  auto obj = api::ObjectFromJson(m.doc);
  if (!obj.ok()) return app.Fail(obj.status().WithPrefix(fmt::format("error in {}", m.source)));
  const api::KindInfo* kind = app.kinds().ForObject(obj->api_version, obj->kind);
  if (kind == nullptr) {
    return app.Fail(InvalidArgumentError(fmt::format(
        "resource mapping not found for name: \"{}\" from \"{}\": no matches for kind \"{}\" in "
        "version \"{}\"",
        obj->metadata.name, m.source, obj->kind, obj->api_version)));
  }
  if (obj->metadata.name.empty()) {
    return app.Fail(InvalidArgumentError(fmt::format(
        "error in {}: metadata.name is required to apply (generateName cannot be used with "
        "apply; use the API to create it)",
        m.source)));
  }
  if (kind->namespaced) {
    if (obj->metadata.namespace_.empty()) {
      obj->metadata.namespace_ = app.Namespace();
    } else if (app.namespace_given() && obj->metadata.namespace_ != app.Namespace()) {
      return app.Fail(InvalidArgumentError(fmt::format(
          "the namespace from the provided object \"{}\" does not match the namespace \"{}\". "
          "You must pass '--namespace={}' to perform this operation.",
          obj->metadata.namespace_, app.Namespace(), obj->metadata.namespace_)));
    }
  } else {
    obj->metadata.namespace_.clear();
  }
  obj->metadata.annotations.erase(api::annotations::kLastApplied);
  obj->body.erase("status");
  api::Json desired = api::ObjectToJson(*obj);
  std::string applied = api::DumpJson(desired);
  desired["metadata"]["annotations"][api::annotations::kLastApplied] = applied;
  const std::string ns = obj->metadata.namespace_;
  const std::string& name = obj->metadata.name;
  const std::string qualified = QualifiedName(*kind, name);

  auto live = client.Get(*kind, ns, name);
  if (!live.ok() && live.status().code() == StatusCode::kNotFound) {
    auto created = client.Create(*kind, ns, desired);
    if (!created.ok()) {
      return app.FailFromServer(
          created.status().WithPrefix(fmt::format("error when creating \"{}\"", m.source)));
    }
    app.out() << qualified << " created\n";
    return;
  }
  if (!live.ok()) return app.FailFromServer(live.status());
  api::Json last;
  const api::Json* ann = &(*live)["metadata"]["annotations"];
  if (ann->is_object() && (*ann)[api::annotations::kLastApplied].is_string()) {
    auto parsed = api::ParseJson((*ann)[api::annotations::kLastApplied].get<std::string>());
    if (parsed.ok()) last = std::move(*parsed);
  }
  api::Json patch = ThreeWayMergePatch(last, desired, *live);
  if (patch.empty()) {
    app.out() << qualified << " unchanged\n";
    return;
  }
  auto patched = client.MergePatch(*kind, ns, name, patch);
  if (!patched.ok()) {
    return app.FailFromServer(
        patched.status().WithPrefix(fmt::format("error when applying patch to \"{}\"", m.source)));
  }
  // The server writes nothing when the patch changes nothing (e.g. it only restates defaults).
  bool changed = api::JsonPathText(*patched, ".metadata.resourceVersion") !=
                 api::JsonPathText(*live, ".metadata.resourceVersion");
  app.out() << qualified << (changed ? " configured\n" : " unchanged\n");
}

void RunApply(App& app, const ApplyFlags& f) {
  std::vector<Manifest> manifests;
  for (const auto& arg : f.files) {
    Status s = CollectManifests(arg, f.recursive, manifests);
    if (!s.ok()) return app.Fail(s);
  }
  if (manifests.empty()) return app.Fail(InvalidArgumentError("no objects passed to apply"));
  std::stable_sort(manifests.begin(), manifests.end(), [](const Manifest& a, const Manifest& b) {
    return DependencyRank(a.doc) < DependencyRank(b.doc);
  });
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  for (auto& m : manifests) ApplyOne(app, **client, m);
}

}  // namespace

void AddApplyCommand(App& app) {
  auto flags = std::make_shared<ApplyFlags>();
  auto* cmd = app.cli().add_subcommand(
      "apply", "Create or update resources from files: warren apply -f FILE|DIR|-");
  cmd->add_option("--filename,-f", flags->files, "file, directory or - for stdin (repeatable)")
      ->required();
  cmd->add_flag("--recursive,-R", flags->recursive, "read directories recursively");
  cmd->callback([&app, flags] { RunApply(app, *flags); });
}

}  // namespace warren::cli
