#include <fmt/format.h>

#include "api/json_path.h"
#include "api/yaml_codec.h"
#include "base/strings.h"
#include "cli/app.h"
#include "cli/printer.h"
#include "cli/resource_args.h"

namespace warren::cli {
namespace {

struct GetFlags {
  std::vector<std::string> args;
  bool all_namespaces = false;
  std::string selector;
  std::string field_selector;
  std::string output;
  bool watch = false;
};

std::string ListQuery(const GetFlags& f) {
  std::vector<std::string> q;
  if (!f.selector.empty()) q.push_back("labelSelector=" + base::PercentEncode(f.selector));
  if (!f.field_selector.empty()) {
    q.push_back("fieldSelector=" + base::PercentEncode(f.field_selector));
  }
  return base::Join(q, "&");
}

void PrintDocument(App& app, const std::string& output, const api::Json& doc) {
  if (output == "json") {
    app.out() << api::DumpJsonPretty(doc);
  } else {
    app.out() << api::DumpYaml(doc);
  }
}

void RunGet(App& app, const GetFlags& f) {
  if (!f.output.empty() && f.output != "wide" && f.output != "json" && f.output != "yaml" &&
      f.output != "name") {
    return app.Fail(InvalidArgumentError(fmt::format(
        "unable to match a printer suitable for the output format \"{}\", the allowed formats "
        "are: json, name, wide, yaml",
        f.output)));
  }
  auto refs = ParseResourceArgs(app.kinds(), f.args);
  if (!refs.ok()) return app.Fail(refs.status());
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  const std::string ns = f.all_namespaces ? "" : app.Namespace();
  const std::string query = ListQuery(f);

  // Objects per kind, in the order asked.
  std::vector<std::pair<const api::KindInfo*, std::vector<api::Json>>> found;
  std::string list_revision;
  auto bucket = [&](const api::KindInfo* k) -> std::vector<api::Json>& {
    for (auto& [kind, objs] : found) {
      if (kind == k) return objs;
    }
    found.emplace_back(k, std::vector<api::Json>{});
    return found.back().second;
  };
  bool single_object = refs->size() == 1 && !(*refs)[0].name.empty();
  bool failed = false;  // some kind could not be listed: "No resources found" would mislead
  for (const ResourceRef& ref : *refs) {
    auto& objs = bucket(ref.kind);
    if (!ref.name.empty()) {
      auto obj = (*client)->Get(*ref.kind, app.Namespace(), ref.name);
      if (!obj.ok()) {
        app.FailFromServer(obj.status());
        if (IsUnreachable(obj.status())) return;
        failed = true;
        continue;
      }
      list_revision = api::JsonPathText(*obj, ".metadata.resourceVersion");
      objs.push_back(std::move(*obj));
    } else {
      auto list = (*client)->List(*ref.kind, ns, query);
      if (!list.ok()) {
        app.FailFromServer(list.status());
        if (IsUnreachable(list.status())) return;
        failed = true;
        continue;
      }
      list_revision = api::JsonPathText(*list, ".metadata.resourceVersion");
      for (auto& item : (*list)["items"]) objs.push_back(std::move(item));
    }
  }

  size_t total = 0;
  for (const auto& [k, objs] : found) total += objs.size();
  const base::WallTime now = base::RealClock().Now();
  TableOptions topts;
  topts.wide = f.output == "wide";
  topts.with_namespace = f.all_namespaces;
  topts.qualified_names = found.size() > 1;

  if (f.output == "json" || f.output == "yaml") {
    if (single_object && total == 1) {
      PrintDocument(app, f.output, found[0].second[0]);
    } else if (total > 0 || !f.watch) {
      api::Json list = {{"apiVersion", "v1"},
                        {"kind", "List"},
                        {"metadata", {{"resourceVersion", ""}}},
                        {"items", api::Json::array()}};
      for (const auto& [k, objs] : found) {
        for (const auto& o : objs) list["items"].push_back(o);
      }
      PrintDocument(app, f.output, list);
    }
  } else if (f.output == "name") {
    for (const auto& [k, objs] : found) {
      for (const auto& o : objs) {
        app.out() << QualifiedName(*k, api::JsonPathText(o, ".metadata.name")) << "\n";
      }
    }
  } else {
    bool first = true;
    for (const auto& [k, objs] : found) {
      if (objs.empty()) continue;
      if (!first) app.out() << "\n";
      first = false;
      Table table(TableHeader(*k, topts));
      for (const auto& o : objs) table.AddRow(TableRow(*k, o, topts, now));
      table.Print(app.out());
    }
  }
  if (total == 0 && !single_object && !failed && !f.watch && f.output != "json" &&
      f.output != "yaml") {
    if (f.all_namespaces || (!found.empty() && !found[0].first->namespaced)) {
      app.err() << "No resources found\n";
    } else {
      app.err() << "No resources found in " << ns << " namespace.\n";
    }
  }
  if (!f.watch) return;

  // -w: follow changes from the revision just listed.
  if (found.size() != 1) {
    return app.Fail(InvalidArgumentError("watch is only supported on one kind at a time"));
  }
  const api::KindInfo& kind = *found[0].first;
  std::string wq = query;
  if (single_object) {
    wq = "fieldSelector=" + base::PercentEncode("metadata.name=" + (*refs)[0].name);
  }
  if (!list_revision.empty()) wq += (wq.empty() ? "" : "&") + ("resourceVersion=" + list_revision);
  bool header = total == 0 && f.output != "json" && f.output != "yaml" && f.output != "name";
  Status s =
      (*client)->Watch(kind, single_object ? app.Namespace() : ns, wq, [&](const api::Json& event) {
        const api::Json& obj = event["object"];
        if (f.output == "json" || f.output == "yaml") {
          PrintDocument(app, f.output, obj);
        } else if (f.output == "name") {
          app.out() << QualifiedName(kind, api::JsonPathText(obj, ".metadata.name")) << "\n";
        } else {
          Table t(TableHeader(kind, topts));
          t.AddRow(TableRow(kind, obj, topts, base::RealClock().Now()));
          t.Print(app.out(), header);
          header = false;
        }
        app.out().flush();
        return true;
      });
  if (!s.ok()) app.FailFromServer(s);
}

}  // namespace

void AddGetCommand(App& app) {
  auto flags = std::make_shared<GetFlags>();
  auto* cmd = app.cli().add_subcommand(
      "get",
      "Display one or many resources: warren get sbs,sbx [NAME...] [-o wide|json|yaml|name]");
  cmd->add_option("resources", flags->args, "KIND[,KIND] [NAME...] or KIND/NAME...")->required();
  cmd->add_flag("--all-namespaces,-A", flags->all_namespaces, "list across all namespaces");
  cmd->add_option("--selector,-l", flags->selector, "label selector, e.g. app=web,tier!=db");
  cmd->add_option("--field-selector", flags->field_selector,
                  "field selector, e.g. status.phase=Running");
  cmd->add_option("--output,-o", flags->output, "wide, json, yaml or name");
  cmd->add_flag("--watch,-w", flags->watch, "after listing, watch for changes");
  cmd->callback([&app, flags] { RunGet(app, *flags); });
}

}  // namespace warren::cli
