// `warren cordon NODE`, `warren uncordon NODE`, `warren drain NODE [--timeout D] [--dry-run]`:
// kubectl's node maintenance verbs, for an operator (an admin key: Nodes are cluster-scoped).
//
// cordon/uncordon set or clear the Node's spec.unschedulable (the scheduler places nothing new
// on a cordoned node). drain cordons, then evicts every sandbox whose status.nodeName is the node
// through the Eviction subresource (server/eviction_api.h), which keeps PodUnavailableBudgets:
// a refused eviction (429) is tried again every second, and the verb prints what waits and why
// (each time the reason changes; the server records the same as DrainWaiting Events on the
// Node). Finished sandboxes (Succeeded, Failed) are left alone. The node is drained once none of
// its sandboxes is left but finished ones; evicted sandboxes still terminating are waited for.
// --timeout defaults to 0, no limit, as kubectl's: what a drain waits for is someone else's to
// give (a group healing, a budget loosened), so a limit is the caller's choice; when one is given
// and passes, the verb exits 1 listing every sandbox left and why. --dry-run changes nothing: it
// says which sandboxes would be evicted now and which would wait (the server judges with
// dryRun=All).

#include <fmt/format.h>

#include <map>
#include <thread>

#include "api/json_path.h"
#include "api/kinds.h"
#include "base/strings.h"
#include "cli/app.h"
#include "cli/printer.h"
#include "cli/wait_flags.h"
#include "controller/disruption_budget.h"

namespace warren::cli {
namespace {

constexpr std::chrono::seconds kRetryInterval{1};

struct NodeFlags {
  std::string node;
};

struct DrainFlags {
  std::string node;
  std::string timeout = "0";
  bool dry_run = false;
};

// Sets spec.unschedulable; prints what it did. False when it failed (already reported).
bool SetUnschedulable(App& app, ApiClient& client, const std::string& node, bool cordon) {
  const api::KindInfo& kind = api::NodeKind();
  auto current = client.Get(kind, "", node);
  if (!current.ok()) {
    app.FailFromServer(current.status());
    return false;
  }
  const bool now = api::JsonPathText(*current, ".spec.unschedulable") == "true";
  const char* done = cordon ? "cordoned" : "uncordoned";
  if (now == cordon) {
    app.out() << QualifiedName(kind, node) << " already " << done << "\n";
    return true;
  }
  api::Json patch = {{"spec", {{"unschedulable", cordon ? api::Json(true) : api::Json(nullptr)}}}};
  auto patched = client.MergePatch(kind, "", node, patch);
  if (!patched.ok()) {
    app.FailFromServer(patched.status());
    return false;
  }
  app.out() << QualifiedName(kind, node) << " " << done << "\n";
  return true;
}

void RunCordon(App& app, const NodeFlags& f, bool cordon) {
  auto client = app.Client();
  if (!client.ok()) return app.Fail(client.status());
  SetUnschedulable(app, **client, f.node, cordon);
}

// One sandbox of the node.
struct OnNode {
  std::string ns, name;
  std::string phase;
  bool deleting = false;
  std::string Key() const { return ns + "/" + name; }
};

Result<std::vector<OnNode>> SandboxesOn(ApiClient& client, const std::string& node) {
  // Every namespace (an admin key sees them all); the field selector is the node's.
  std::string query = "fieldSelector=" + base::PercentEncode("status.nodeName=" + node);
  ASSIGN_OR_RETURN(api::Json list, client.List(api::SandboxKind(), "", query));
  std::vector<OnNode> out;
  if (!list.contains("items") || !list["items"].is_array()) return out;
  for (const auto& item : list["items"]) {
    OnNode s;
    s.ns = api::JsonPathText(item, ".metadata.namespace");
    s.name = api::JsonPathText(item, ".metadata.name");
    s.phase = api::JsonPathText(item, ".status.phase");
    s.deleting = !api::JsonPathText(item, ".metadata.deletionTimestamp").empty();
    out.push_back(std::move(s));
  }
  return out;
}

api::Json EvictionBody(const OnNode& s, bool dry_run) {
  api::Json body = {{"apiVersion", "policy/v1"},
                    {"kind", "Eviction"},
                    {"metadata", {{"name", s.name}, {"namespace", s.ns}}}};
  if (dry_run) body["deleteOptions"] = {{"dryRun", {"All"}}};
  return body;
}

void RunDrain(App& app, const DrainFlags& f) {
  auto timeout = ParseTimeout(f.timeout);
  if (!timeout.ok()) return app.Fail(timeout.status());
  auto client_or = app.Client();
  if (!client_or.ok()) return app.Fail(client_or.status());
  ApiClient& client = **client_or;
  const api::KindInfo& node_kind = api::NodeKind();
  const std::string node_name = QualifiedName(node_kind, f.node);

  if (f.dry_run) {
    auto node = client.Get(node_kind, "", f.node);
    if (!node.ok()) return app.FailFromServer(node.status());
    app.out() << node_name << " cordoned (dry run)\n";
    auto sandboxes = SandboxesOn(client, f.node);
    if (!sandboxes.ok()) return app.FailFromServer(sandboxes.status());
    for (const OnNode& s : *sandboxes) {
      if (controller::IsFinishedPhase(s.phase) || s.deleting) continue;
      auto r = client.PostSubresource(api::SandboxKind(), s.ns, s.name, "eviction",
                                      EvictionBody(s, true));
      if (r.ok()) {
        app.out() << "sandbox " << s.Key() << " would be evicted (dry run)\n";
      } else if (r.status().code() == StatusCode::kResourceExhausted) {
        app.out() << "sandbox " << s.Key() << " would wait (dry run): " << r.status().message()
                  << "\n";
      } else if (r.status().code() != StatusCode::kNotFound) {
        app.FailFromServer(r.status());
      }
    }
    return;
  }

  if (!SetUnschedulable(app, client, f.node, /*cordon=*/true)) return;
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, std::string> said;  // sandbox → the last reason printed for it
  while (true) {
    auto sandboxes = SandboxesOn(client, f.node);
    if (!sandboxes.ok()) return app.FailFromServer(sandboxes.status());
    std::map<std::string, std::string> left;  // sandbox → why it is still there
    bool evicted = false;  // this round: the next listing says whether they are gone yet
    for (const OnNode& s : *sandboxes) {
      if (controller::IsFinishedPhase(s.phase)) continue;
      const std::string key = s.Key();
      std::string why;
      if (s.deleting) {
        why = "terminating";
      } else {
        auto r = client.PostSubresource(api::SandboxKind(), s.ns, s.name, "eviction",
                                        EvictionBody(s, false));
        if (r.ok()) {
          app.out() << "sandbox " << key << " evicted\n";
          said.erase(key);
          evicted = true;
          continue;  // deleted, or terminating: the next listing says which
        }
        if (r.status().code() == StatusCode::kNotFound) continue;  // gone meanwhile
        // A budget (429) or budgets changing under us (409) is worth waiting for; anything
        // else (a team key, a server error) would fail the same way forever.
        if (r.status().code() != StatusCode::kResourceExhausted &&
            r.status().code() != StatusCode::kAborted) {
          return app.FailFromServer(r.status());
        }
        why = std::string(r.status().message());
      }
      if (said[key] != why) {
        app.out() << "sandbox " << key << " waits: " << why << "\n";
        said[key] = why;
      }
      left.emplace(key, why);
    }
    if (left.empty() && !evicted) {
      app.out() << node_name << " drained\n";
      return;
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    if (!left.empty() && *timeout && waited + kRetryInterval > **timeout) {
      std::vector<std::string> lines;
      for (const auto& [key, why] : left)
        lines.push_back(fmt::format("  sandbox {}: {}", key, why));
      app.Fail(DeadlineExceededError(
          fmt::format("timed out after {}s draining node \"{}\"; {} sandbox(es) left:\n{}",
                      std::chrono::duration_cast<std::chrono::seconds>(**timeout).count(), f.node,
                      left.size(), base::Join(lines, "\n"))));
      return;
    }
    std::this_thread::sleep_for(kRetryInterval);
  }
}

}  // namespace

void AddDrainCommands(App& app) {
  {
    auto flags = std::make_shared<NodeFlags>();
    auto* cmd = app.cli().add_subcommand(
        "cordon", "Mark a node unschedulable (new sandboxes go elsewhere): warren cordon NODE");
    cmd->add_option("node", flags->node, "the Node's name")->required();
    cmd->callback([&app, flags] { RunCordon(app, *flags, true); });
  }
  {
    auto flags = std::make_shared<NodeFlags>();
    auto* cmd =
        app.cli().add_subcommand("uncordon", "Mark a node schedulable again: warren uncordon NODE");
    cmd->add_option("node", flags->node, "the Node's name")->required();
    cmd->callback([&app, flags] { RunCordon(app, *flags, false); });
  }
  {
    auto flags = std::make_shared<DrainFlags>();
    auto* cmd = app.cli().add_subcommand(
        "drain",
        "Cordon a node and evict its sandboxes, keeping their disruption budgets: warren drain "
        "NODE");
    cmd->add_option("node", flags->node, "the Node's name")->required();
    cmd->add_option("--timeout", flags->timeout,
                    "give up after this long, exiting 1 with what is left (default 0: no limit, "
                    "as kubectl)");
    cmd->add_flag("--dry-run", flags->dry_run,
                  "change nothing: say which sandboxes would be evicted now and which would wait");
    cmd->callback([&app, flags] { RunDrain(app, *flags); });
  }
}

}  // namespace warren::cli
