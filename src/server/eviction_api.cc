#include "server/eviction_api.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "api/json.h"
#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/policy_kinds.h"
#include "api/status_object.h"
#include "api/typed_codec.h"
#include "api/types/node.h"
#include "api/types/pod_unavailable_budget.h"
#include "api/types/sandbox.h"
#include "api/types/sandbox_set.h"
#include "base/log.h"
#include "base/strings.h"
#include "controller/disruption_budget.h"
#include "controller/pub_controller.h"
#include "server/auth/route_guard.h"
#include "server/auth/tenant_policy.h"

namespace warren::server {
namespace {

using api::Json;

auto Log() {
  static auto logger = base::Logger("eviction");
  return logger;
}

// Judging again after a budget moved under the write; more than this and the caller retries.
constexpr int kAttempts = 8;
// An Event repeated with the same words goes out again after this (the recorder folds it into a
// count), so a drain retrying every second does not write every second.
constexpr std::chrono::seconds kRetell{60};
constexpr size_t kMaxTold = 4096;

bool IsDryRun(const Json& list) {
  if (!list.is_array()) return false;
  for (const auto& v : list) {
    if (v.is_string() && v.get<std::string>() == "All") return true;
  }
  return false;
}

// A budget the eviction must be written into before the delete, with the view that judged it.
struct ToRecord {
  api::Object budget;
  controller::BudgetView view;
};

}  // namespace

EvictionApi::EvictionApi(store::Store& store, base::Clock& clock)
    : store_(store), clock_(clock), events_(store, {.component = "eviction"}, clock) {}

void EvictionApi::Register(net::Router& router) {
  auto handler = [this](net::Request&& req, net::Responder r) {
    Handle(std::move(req), std::move(r));
  };
  router.Add("POST", "/apis/agents.kruise.io/v1alpha1/namespaces/{ns}/sandboxes/{name}/eviction",
             handler, {.blocking = true});
  router.Add("POST", "/api/v1/namespaces/{ns}/sandboxes/{name}/eviction", handler,
             {.blocking = true});
}

void EvictionApi::Handle(net::Request&& req, net::Responder r) {
  api::StatusDetails details{
      .name = std::string(req.PathParam("name")), .group = api::kAgentsGroup, .kind = "sandboxes"};
  auto send = [&](int code, std::string_view reason, std::string_view message) {
    Json status = api::MakeStatusObject(code, reason, message, details);
    if (code == 429) {
      status["details"]["causes"] =
          Json::array({{{"reason", "DisruptionBudget"}, {"message", std::string(message)}}});
    }
    r.Send(net::Response::Json(code, api::DumpJson(status)));
  };
  Request request;
  request.namespace_ = std::string(req.PathParam("ns"));
  request.name = details.name;
  request.dry_run = req.Query("dryRun").value_or("") == "All";
  if (!base::TrimSpace(req.body).empty()) {
    auto body = api::ParseJson(req.body);
    if (!body.ok() || !body->is_object()) {
      return send(400, "BadRequest",
                  body.ok() ? "the body must be a policy/v1 Eviction object"
                            : std::string(body.status().message()));
    }
    const Json& meta = (*body)["metadata"];
    if (meta.is_object()) {
      std::string name = meta.value("name", "");
      std::string ns = meta.value("namespace", "");
      if ((!name.empty() && name != request.name) || (!ns.empty() && ns != request.namespace_)) {
        return send(400, "BadRequest",
                    fmt::format("name in URL does not match name in Eviction object ({}/{} vs "
                                "{}/{})",
                                request.namespace_, request.name, ns, name));
      }
    }
    const Json& options = (*body)["deleteOptions"];
    if (options.is_object()) {
      if (IsDryRun(options.value("dryRun", Json()))) request.dry_run = true;
      const Json& pre = options.value("preconditions", Json());
      if (pre.is_object()) {
        request.preconditions.uid = pre.value("uid", "");
        if (pre.contains("resourceVersion") && pre["resourceVersion"].is_string()) {
          auto rv = base::ParseInt64(pre["resourceVersion"].get<std::string>());
          if (!rv || *rv < 0) {
            return send(400, "BadRequest", "deleteOptions.preconditions.resourceVersion: invalid");
          }
          request.preconditions.resource_version = *rv;
        }
      }
    }
  }
  Outcome outcome = Evict(auth::CallerOf(req), request);
  if (outcome.code == 201) {
    return r.Send(net::Response::Json(201, api::DumpJson(Json{{"kind", "Status"},
                                                              {"apiVersion", "v1"},
                                                              {"metadata", Json::object()},
                                                              {"status", "Success"},
                                                              {"message", outcome.message},
                                                              {"code", 201}})));
  }
  send(outcome.code, outcome.reason, outcome.message);
}

EvictionApi::Outcome EvictionApi::Evict(const base::Principal& who, const Request& request) {
  const std::string& ns = request.namespace_;
  const std::string sandbox_key = fmt::format("{}/{}", ns, request.name);
  auto fail = [](const Status& s) {
    api::HttpError e = api::ToHttpError(s);
    return Outcome{e.code, e.reason, std::string(s.message())};
  };
  if (Status s =
          auth::CheckTenantScope(who, api::SandboxKind(), ns, request.name, auth::Verb::kWrite);
      !s.ok()) {
    return fail(s);
  }
  std::vector<std::string> recorded;  // budgets this request wrote the sandbox into
  auto undo = [&] {
    for (const std::string& b : recorded) Unrecord(ns, b, request.name);
  };
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    auto sandbox = store_.Get(api::SandboxKind(), ns, request.name);
    if (!sandbox.ok()) {
      undo();
      return fail(sandbox.status());
    }
    if (!request.preconditions.uid.empty() && request.preconditions.uid != sandbox->metadata.uid) {
      undo();
      return fail(AbortedError(
          fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}",
                      request.preconditions.uid, sandbox->metadata.uid)));
    }
    if (sandbox->metadata.deletion_timestamp) {
      return Outcome{201, "", fmt::format("sandbox {} is already being deleted", sandbox_key)};
    }
    // The budgets first, then the sandboxes: the list is at least as new as what it judges.
    store::ListOptions in_ns;
    in_ns.namespace_ = ns;
    auto budgets = store_.List(api::PodUnavailableBudgetKind(), in_ns);
    if (!budgets.ok()) return fail(budgets.status());
    auto listed = store_.List(api::SandboxKind(), in_ns);
    if (!listed.ok()) return fail(listed.status());
    std::vector<const api::Object*> sandboxes;
    for (const auto& s : listed->items) sandboxes.push_back(&s);
    const base::WallTime now = clock_.Now();

    std::vector<ToRecord> to_record;
    std::vector<std::string> notes;
    for (const api::Object& budget : budgets->items) {
      if (budget.metadata.deletion_timestamp) continue;
      auto selects = controller::BudgetSelects(budget, *sandbox);
      if (!selects.ok()) {
        Log()->warn("budget={}/{} cannot be judged: {}", ns, budget.metadata.name,
                    selects.status().ToString());
        continue;
      }
      if (!*selects) continue;
      std::optional<int32_t> replicas;
      auto spec = api::DecodeSpec<api::PodUnavailableBudgetSpec>(budget);
      if (spec.ok() && spec->target_ref) {
        auto set = store_.Get(api::SandboxSetKind(), ns, spec->target_ref->name);
        if (set.ok()) {
          auto set_spec = api::DecodeSpec<api::SandboxSetSpec>(*set);
          if (set_spec.ok() && set_spec->replicas) replicas = *set_spec->replicas;
        }
      }
      auto view = controller::EvaluateBudget(budget, sandboxes, replicas, now, /*prune=*/false);
      if (!view.ok()) {
        Log()->warn("budget={}/{} cannot be judged: {}", ns, budget.metadata.name,
                    view.status().ToString());
        continue;
      }
      controller::EvictionVerdict verdict = controller::JudgeEviction(*view, *sandbox);
      if (!verdict.allowed) {
        undo();
        if (!request.dry_run) {
          Tell(budget, obs::EventType::kWarning, "PubPreventPodDeletion", sandbox_key,
               fmt::format("Eviction of sandbox {} refused: {}", request.name, verdict.message));
          TellNode(*sandbox, obs::EventType::kWarning, "DrainWaiting",
                   fmt::format("Sandbox {} waits: {}", sandbox_key, verdict.message));
        }
        return Outcome{429, "TooManyRequests", verdict.message};
      }
      if (!verdict.message.empty()) notes.push_back(verdict.message);
      if (verdict.record) to_record.push_back({budget, std::move(*view)});
    }
    if (request.dry_run) {
      return Outcome{201, "",
                     fmt::format("sandbox {} would be evicted (dry run){}", sandbox_key,
                                 notes.empty() ? "" : ": " + base::Join(notes, "; "))};
    }
    bool moved = false;
    for (ToRecord& t : to_record) {
      api::Object updated = t.budget;  // its resourceVersion is the precondition
      controller::EncodeBudgetStatus(controller::EvictionStatus(t.view, *sandbox, now), updated);
      auto written = store_.UpdateStatus(std::move(updated));
      if (written.ok()) {
        recorded.push_back(t.budget.metadata.name);
        continue;
      }
      if (written.status().code() != StatusCode::kAborted) {
        undo();
        return fail(written.status());
      }
      moved = true;  // another eviction or the controller wrote it: judge again
      break;
    }
    if (moved) continue;
    store::DeleteOptions options;
    options.preconditions = request.preconditions;
    options.preconditions.uid = sandbox->metadata.uid;
    auto deleted = store_.Delete(api::SandboxKind(), ns, request.name, options);
    if (!deleted.ok()) {
      undo();
      return fail(deleted.status());
    }
    Log()->info("sandbox={} evicted budgets={}", sandbox_key, base::Join(recorded, ","));
    TellNode(*sandbox, obs::EventType::kNormal, "DrainEvicted",
             fmt::format("Sandbox {} evicted", sandbox_key));
    return Outcome{201, "", fmt::format("sandbox {} evicted", sandbox_key)};
  }
  undo();
  return fail(AbortedError(fmt::format(
      "the disruption budgets of sandbox {} kept changing while it was judged; try again",
      sandbox_key)));
}

void EvictionApi::Unrecord(const std::string& ns, const std::string& budget,
                           const std::string& sandbox) {
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto current = store_.Get(api::PodUnavailableBudgetKind(), ns, budget);
    if (!current.ok()) return;
    Json& status = current->status();
    if (!status.is_object() || !status["disruptedPods"].is_object() ||
        !status["disruptedPods"].contains(sandbox)) {
      return;
    }
    status["disruptedPods"].erase(sandbox);
    auto written = store_.UpdateStatus(std::move(*current));
    if (written.ok() || written.status().code() != StatusCode::kAborted) return;
  }
}

void EvictionApi::Tell(const api::Object& involved, obs::EventType type, std::string_view reason,
                       const std::string& sandbox_key, const std::string& message) {
  const base::WallTime now = clock_.Now();
  {
    std::lock_guard lock(mu_);
    auto key = std::make_tuple(involved.metadata.uid, std::string(reason), sandbox_key);
    auto it = told_.find(key);
    if (it != told_.end() && it->second.first == message && now - it->second.second < kRetell) {
      return;
    }
    if (told_.size() >= kMaxTold) told_.clear();  // only the deduplication is lost
    told_[key] = {message, now};
  }
  if (Status s = events_.Record(involved, type, reason, message); !s.ok()) {
    Log()->warn("event reason={} object={}: {}", reason, involved.metadata.name, s.ToString());
  }
}

void EvictionApi::TellNode(const api::Object& sandbox, obs::EventType type, std::string_view reason,
                           const std::string& message) {
  auto status = api::DecodeStatus<api::SandboxStatus>(sandbox);
  if (!status.ok() || status->node_name.empty()) return;
  auto node = store_.Get(api::NodeKind(), "", status->node_name);
  if (!node.ok()) return;
  auto spec = api::DecodeSpec<api::NodeSpec>(*node);
  // A cordoned node is being drained (or about to be): its evictions are the drain's story.
  if (!spec.ok() || !spec->unschedulable) return;
  Tell(*node, type, reason, sandbox.Key(), message);
}

namespace {

// The eviction route's state as a server component (nothing to start), so it lives as long as
// the server whose router borrows it.
class EvictionComponent final : public Component {
 public:
  explicit EvictionComponent(store::Store& store) : evictions_(store) {}
  std::string_view name() const override { return "evictions"; }
  Status Start() override { return Status::Ok(); }
  void Stop() override {}
  EvictionApi& evictions() { return evictions_; }

 private:
  EvictionApi evictions_;
};

class BudgetControllerComponent final : public Component {
 public:
  explicit BudgetControllerComponent(store::Store& store) : controller_(store, base::RealClock()) {}
  std::string_view name() const override { return "podunavailablebudget"; }
  Status Start() override { return controller_.Start(); }
  void Stop() override { controller_.Stop(); }

 private:
  controller::PubController controller_;
};

}  // namespace

void InstallEvictions(Server& server) {
  auto component = std::make_unique<EvictionComponent>(server.store());
  component->evictions().Register(server.router());
  server.AddComponent(std::move(component));
}

std::unique_ptr<Component> MakeBudgetController(store::Store& store) {
  return std::make_unique<BudgetControllerComponent>(store);
}

void InstallDisruption(Server& server) {
  InstallEvictions(server);
  server.AddComponent(MakeBudgetController(server.store()));
}

}  // namespace warren::server
