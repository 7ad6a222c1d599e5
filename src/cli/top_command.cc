// `warren top [sbx] [NAME] [-n NS | -A] [--sort cpu|memory] [-w]`: CPU and memory per sandbox,
// as `kubectl top pod`. The sandboxes come from the resource API, their newest samples (the node
// takes one every 5 s) from E2B's `GET /sandboxes/metrics`, which shows a key only its own
// team's sandboxes — so a team key cannot see another team's usage through this verb either.

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <thread>

#include "api/json_path.h"
#include "api/kinds.h"
#include "base/strings.h"
#include "cli/app.h"
#include "cli/top_usage.h"

namespace warren::cli {
namespace {

// The server's limit on ids per metrics call (server/e2b/requests.h, kMaxMetricsSandboxes).
constexpr size_t kIdsPerCall = 100;
constexpr char kSandboxIdLabel[] = "agents.kruise.io/sandbox-id";

struct TopFlags {
  std::vector<std::string> args;
  bool all_namespaces = false;
  std::string sort;
  bool watch = false;
  int interval_seconds = 5;
};

// The Sandbox name asked for ("" = all): `top`, `top NAME`, `top sbx [NAME]`, `top sbx/NAME`.
Result<std::string> SandboxNameOf(const App& app, std::vector<std::string> args) {
  if (!args.empty()) {
    std::string_view first = args[0];
    std::string_view kind = first.substr(0, first.find('/'));
    const api::KindInfo* k = app.kinds().Resolve(kind);
    if (k != nullptr && k != &api::SandboxKind()) {
      return InvalidArgumentError(fmt::format(
          "warren top shows sandboxes only, not {} (warren top [sbx] [NAME])", k->plural));
    }
    if (k != nullptr && first.find('/') != std::string_view::npos) {
      args[0] = std::string(first.substr(first.find('/') + 1));
    } else if (k != nullptr && (args.size() > 1 || first == kind)) {
      // `sbx` alone or `sbx NAME` (a Sandbox named like a kind needs `sbx/NAME`).
      args.erase(args.begin());
    }
  }
  if (args.size() > 1) {
    return InvalidArgumentError("warren top takes at most one sandbox: warren top [sbx] [NAME]");
  }
  return args.empty() ? "" : args[0];
}

// The Sandboxes asked for, with their E2B ids.
Result<std::vector<SandboxUsage>> ListSandboxes(App& app, const TopFlags& f,
                                                const std::string& name) {
  ASSIGN_OR_RETURN(ApiClient * client, app.Client());
  std::vector<api::Json> objects;
  if (!name.empty()) {
    ASSIGN_OR_RETURN(api::Json obj, client->Get(api::SandboxKind(), app.Namespace(), name));
    objects.push_back(std::move(obj));
  } else {
    ASSIGN_OR_RETURN(api::Json list,
                     client->List(api::SandboxKind(), f.all_namespaces ? "" : app.Namespace(), ""));
    for (auto& item : list["items"]) objects.push_back(std::move(item));
  }
  std::vector<SandboxUsage> rows;
  for (const api::Json& o : objects) {
    SandboxUsage row;
    row.ns = api::JsonPathText(o, ".metadata.namespace");
    row.name = api::JsonPathText(o, ".metadata.name");
    const api::Json labels = o["metadata"].value("labels", api::Json::object());
    row.sandbox_id = labels.value(kSandboxIdLabel, "");
    rows.push_back(std::move(row));
  }
  return rows;
}

// Fills in each row's newest sample; rows the node has not sampled yet keep none.
Status AddSamples(App& app, std::vector<SandboxUsage>& rows) {
  ASSIGN_OR_RETURN(ApiClient * client, app.Client());
  std::map<std::string, UsageSample> samples;
  std::vector<std::string> ids;
  auto flush = [&]() -> Status {
    if (ids.empty()) return Status::Ok();
    ASSIGN_OR_RETURN(api::Json got,
                     client->GetPath("/sandboxes/metrics?sandbox_ids=" + base::Join(ids, ",")));
    ids.clear();
    const api::Json& by_id = got["sandboxes"];
    if (!by_id.is_object()) {
      return InternalError("the server's metrics answer has no \"sandboxes\" object");
    }
    for (const auto& [id, metric] : by_id.items()) samples[id] = ParseUsageSample(metric);
    return Status::Ok();
  };
  for (const SandboxUsage& r : rows) {
    if (r.sandbox_id.empty()) continue;
    ids.push_back(base::PercentEncode(r.sandbox_id));
    if (ids.size() == kIdsPerCall) RETURN_IF_ERROR(flush());
  }
  RETURN_IF_ERROR(flush());
  for (SandboxUsage& r : rows) {
    if (auto it = samples.find(r.sandbox_id); it != samples.end()) r.sample = it->second;
  }
  return Status::Ok();
}

// One listing; false when it failed (reported) and a watch should stop.
bool PrintOnce(App& app, const TopFlags& f, const std::string& name, bool first) {
  auto rows = ListSandboxes(app, f, name);
  if (!rows.ok()) {
    app.FailFromServer(rows.status());
    return false;
  }
  if (Status s = AddSamples(app, *rows); !s.ok()) {
    app.FailFromServer(s);
    return false;
  }
  SortUsage(*rows, f.sort == "cpu"      ? UsageSort::kCpu
                   : f.sort == "memory" ? UsageSort::kMemory
                                        : UsageSort::kNone);
  if (!first) app.out() << "\n";
  if (rows->empty()) {
    if (f.all_namespaces) {
      app.err() << "No resources found\n";
    } else {
      app.err() << "No resources found in " << app.Namespace() << " namespace.\n";
    }
  } else {
    UsageTable(*rows, f.all_namespaces).Print(app.out());
  }
  app.out().flush();
  return true;
}

void RunTop(App& app, const TopFlags& f) {
  auto name = SandboxNameOf(app, f.args);
  if (!name.ok()) return app.Fail(name.status());
  if (f.all_namespaces && !name->empty()) {
    return app.Fail(InvalidArgumentError("a sandbox name cannot be given with -A"));
  }
  if (!PrintOnce(app, f, *name, true) || !f.watch) return;
  // -w: a fresh listing every interval, until interrupted (the node samples every 5 s, so a
  // shorter interval mostly repeats the same figures).
  for (;;) {
    std::this_thread::sleep_for(std::chrono::seconds(f.interval_seconds));
    if (!PrintOnce(app, f, *name, false)) return;
  }
}

}  // namespace

void AddTopCommand(App& app) {
  auto flags = std::make_shared<TopFlags>();
  auto* cmd = app.cli().add_subcommand(
      "top", "Display CPU and memory per sandbox: warren top [sbx] [NAME] [--sort cpu|memory]");
  cmd->add_option("sandbox", flags->args, "[sbx] [NAME]: one Sandbox (default: all)");
  cmd->add_flag("--all-namespaces,-A", flags->all_namespaces, "across all namespaces");
  cmd->add_option("--sort", flags->sort, "heaviest first by cpu or memory")
      ->check(CLI::IsMember({"cpu", "memory"}));
  cmd->add_flag("--watch,-w", flags->watch, "print again every --interval seconds");
  cmd->add_option("--interval", flags->interval_seconds, "seconds between listings with -w")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  cmd->callback([&app, flags] { RunTop(app, *flags); });
}

}  // namespace warren::cli
