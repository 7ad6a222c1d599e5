#include "controller/pool_autoscaler_controller.h"

#include <fmt/format.h>

#include "api/json.h"
#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/pool_autoscaler.h"
#include "api/types/sandbox_set.h"
#include "base/log.h"
#include "controller/sandboxset_member.h"

namespace warren::controller {
namespace {

std::shared_ptr<spdlog::logger> Log() { return base::Logger("autoscaler"); }

std::string PoolKey(std::string_view ns, std::string_view pool) {
  return fmt::format("{}/{}", ns, pool);
}

bool IsClaimed(const api::Object& o) {
  auto it = o.metadata.labels.find(api::labels::kSandboxClaimed);
  return it != o.metadata.labels.end() && it->second == "true";
}

api::LabelSelector PoolLabelExists() {
  auto s = api::LabelSelector::Parse(api::labels::kSandboxPool);
  CHECK(s.ok());
  return *s;
}

void SetCond(api::PoolAutoscalerStatus& status, std::string type, bool ok, std::string reason,
             std::string message, int64_t generation, base::WallTime now) {
  api::Condition c;
  c.type = std::move(type);
  c.status = ok ? "True" : "False";
  c.reason = std::move(reason);
  c.message = std::move(message);
  c.observed_generation = generation;
  api::SetCondition(status.conditions, std::move(c), now);
}

}  // namespace

PoolAutoscalerController::PoolAutoscalerController(store::Store& store, obs::EventRecorder* events,
                                                   base::Clock& clock,
                                                   PoolAutoscalerControllerOptions options)
    : store_(store),
      events_(events),
      clock_(clock),
      options_(options),
      autoscalers_(store, {.kind = &api::PoolAutoscalerKind(), .name = "poolautoscalers"}),
      sets_(store, {.kind = &api::SandboxSetKind(), .name = "autoscaler sandboxsets"}),
      sandboxes_(store, {.kind = &api::SandboxKind(),
                         .label_selector = PoolLabelExists(),
                         .name = "autoscaler sandboxes"}) {
  sandboxes_.AddHandler([this](const Informer::Change& c) { OnSandbox(c); });
}

PoolAutoscalerController::~PoolAutoscalerController() { Stop(); }

Status PoolAutoscalerController::Start(bool run_worker) {
  RETURN_IF_ERROR(sets_.Start());
  RETURN_IF_ERROR(sandboxes_.Start());
  RETURN_IF_ERROR(autoscalers_.Start());
  if (run_worker) worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void PoolAutoscalerController::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  autoscalers_.Stop();
  sandboxes_.Stop();
  sets_.Stop();
}

bool PoolAutoscalerController::WaitForCaches(std::chrono::milliseconds timeout) {
  // An informer's revision moves with its own kind's changes, so each waits for the newest
  // object of its kind in the store.
  for (auto [informer, kind] :
       {std::pair{&sets_, &api::SandboxSetKind()}, std::pair{&sandboxes_, &api::SandboxKind()},
        std::pair{&autoscalers_, &api::PoolAutoscalerKind()}}) {
    store::ListOptions options;
    if (kind == &api::SandboxKind()) options.label_selector = PoolLabelExists();
    auto list = store_.List(*kind, options);
    if (!list.ok()) return false;
    int64_t newest = 0;
    for (const auto& o : list->items) newest = std::max(newest, o.metadata.resource_version);
    if (!informer->WaitForRevision(newest, timeout)) return false;
  }
  return true;
}

void PoolAutoscalerController::Run() {
  std::unique_lock lock(stop_mu_);
  while (!stopping_) {
    lock.unlock();
    Tick();
    lock.lock();
    stop_cv_.wait_for(lock, options_.sample_interval, [this] { return stopping_; });
  }
}

void PoolAutoscalerController::OnSandbox(const Informer::Change& c) {
  const api::Object& o = *c.object;
  std::string_view pool = PoolOf(o);
  if (pool.empty()) return;
  const bool deleted = c.type == store::EventType::kDeleted;
  // A hibernated member is stock too: a claim finds it (woken, not made).
  bool was_available = c.old && IsStock(ClassifyMember(*c.old));
  bool is_available = !deleted && IsStock(ClassifyMember(o));
  bool claimed_now = !deleted && IsClaimed(o) && !(c.old && IsClaimed(*c.old));
  std::string key = PoolKey(o.metadata.namespace_, pool);
  int32_t spec_replicas = 0;
  if (claimed_now) {
    if (auto set = sets_.Get(o.metadata.namespace_, pool)) {
      auto spec = api::DecodeSpec<api::SandboxSetSpec>(*set);
      if (spec.ok()) spec_replicas = spec->replicas.value_or(0);
    }
  }
  base::WallTime now = clock_.Now();
  std::lock_guard lock(mu_);
  PoolState& p = pools_[key];
  if (claimed_now) {
    // A member claimed out of the pool found one (it was available until this change); a
    // sandbox that appears claimed was made cold because the pool had none.
    bool found = was_available;
    p.cold_streak = found ? 0 : p.cold_streak + 1;
    int32_t available_before = found ? std::max(p.available, 1) : 0;
    p.demand.AddClaim(now, PoolDemand::Needed(spec_replicas, available_before, p.cold_streak));
  }
  if (is_available && !was_available && !IsClaimed(o) && o.metadata.creation_timestamp) {
    auto took = std::chrono::duration_cast<PoolDemand::Ms>(now - *o.metadata.creation_timestamp);
    // A member back from recycling or one that waited paused is not a refill.
    if (took >= PoolDemand::Ms(0) && took < std::chrono::minutes(10)) p.demand.AddRefill(took);
  }
  p.available += (is_available ? 1 : 0) - (was_available ? 1 : 0);
}

std::string PoolAutoscalerController::OwnerOf(const std::string& ns, const std::string& set) const {
  const api::Object* owner = nullptr;
  auto all = autoscalers_.List();
  for (const auto& a : all) {
    if (a->metadata.namespace_ != ns || a->metadata.deletion_timestamp) continue;
    auto spec = api::DecodeSpec<api::PoolAutoscalerSpec>(*a);
    if (!spec.ok() || spec->scale_target_ref.name != set) continue;
    // Whole seconds, as stored: a freshly created object's cached copy may carry a fraction.
    auto created_at = [](const api::Object& o) {
      return std::chrono::floor<std::chrono::seconds>(
          o.metadata.creation_timestamp.value_or(base::WallTime{}));
    };
    auto created = created_at(*a);
    auto owner_created = owner ? created_at(*owner) : created;
    if (owner == nullptr || created < owner_created ||
        (created == owner_created && a->metadata.name < owner->metadata.name)) {
      owner = a.get();
    }
  }
  return owner ? owner->metadata.name : "";
}

void PoolAutoscalerController::Tick() {
  base::WallTime now = clock_.Now();
  for (const auto& a : autoscalers_.List()) {
    if (a->metadata.deletion_timestamp) continue;
    Status s = Reconcile(*a, now);
    if (!s.ok()) {
      Log()->warn("reconcile failed autoscaler={}/{} error={}", a->metadata.namespace_,
                  a->metadata.name, s.ToString());
    }
  }
  // Forget samplers of autoscalers that are gone.
  std::lock_guard lock(mu_);
  for (auto it = samplers_.begin(); it != samplers_.end();) {
    bool live = false;
    for (const auto& a : autoscalers_.List()) live |= a->metadata.uid == it->first;
    it = live ? std::next(it) : samplers_.erase(it);
  }
}

Status PoolAutoscalerController::Reconcile(const api::Object& pa, base::WallTime now) {
  const std::string& ns = pa.metadata.namespace_;
  ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::PoolAutoscalerSpec>(pa));
  auto old_status = api::DecodeStatus<api::PoolAutoscalerStatus>(pa);
  api::PoolAutoscalerStatus status = old_status.ok() ? *old_status : api::PoolAutoscalerStatus{};
  const int64_t gen = pa.metadata.generation;
  status.observed_generation = gen;
  const std::string& target = spec.scale_target_ref.name;
  auto warn = [&](std::string_view reason, const std::string& message) {
    if (events_) events_->Warning(pa, reason, message).IgnoreError();
  };

  auto write_status = [&]() -> Status {
    api::Object o = pa;
    api::EncodeStatus(status, o);
    if (o.status() == pa.status()) return Status::Ok();
    api::Json patch = {{"status", o.status()}};
    auto written = store_.Patch(api::PoolAutoscalerKind(), ns, pa.metadata.name, patch,
                                store::Subresource::kStatus);
    if (!written.ok() && written.status().code() != StatusCode::kNotFound) return written.status();
    return Status::Ok();
  };

  if (std::string owner = OwnerOf(ns, target); owner != pa.metadata.name) {
    SetCond(status, "ScalingActive", false, "ConflictingAutoscaler",
            fmt::format("SandboxSet \"{}\" is scaled by PoolAutoscaler \"{}\"", target, owner), gen,
            now);
    return write_status();
  }
  status.suspended = spec.suspend;
  if (spec.suspend) {
    SetCond(status, "ScalingActive", false, "Suspended", "spec.suspend is true", gen, now);
    return write_status();
  }
  auto set = sets_.Get(ns, target);
  if (!set) {
    std::string m = fmt::format("SandboxSet \"{}\" not found in namespace \"{}\"", target, ns);
    SetCond(status, "AbleToScale", false, "FailedGetScale", m, gen, now);
    SetCond(status, "ScalingActive", false, "FailedGetScale", m, gen, now);
    warn("FailedGetScale", m);
    return write_status();
  }
  auto policy = autoscale::CompilePolicy(spec);
  if (!policy.ok()) {
    SetCond(status, "ScalingActive", false, "InvalidPolicy", policy.status().message(), gen, now);
    warn("InvalidPolicy", policy.status().message());
    return write_status();
  }
  auto set_spec = api::DecodeSpec<api::SandboxSetSpec>(*set);
  auto set_status = api::DecodeStatus<api::SandboxSetStatus>(*set);
  if (!set_spec.ok() || !set_status.ok()) return InternalError("undecodable SandboxSet");

  autoscale::Observation o;
  o.now = now;
  o.spec_replicas = set_spec->replicas.value_or(0);
  {
    std::lock_guard lock(mu_);
    auto [it, fresh] = samplers_.try_emplace(pa.metadata.uid, options_.sample_interval,
                                             options_.observation_window);
    it->second.Observe(now, set_status->available_replicas, set_status->replicas);
    o.capacity = it->second.Get();
    o.full_window = it->second.full_window();
    o.forecast = autoscale::ForecastFor(*policy, pools_[PoolKey(ns, target)].demand, now);
  }
  autoscale::Memory memory;
  memory.created = pa.metadata.creation_timestamp.value_or(now);
  for (const auto& c : status.applied_cron_policies) {
    if (c.last_schedule_time) memory.cron_last[c.name] = *c.last_schedule_time;
  }
  memory.last_scale = status.last_scale_time;
  autoscale::Decision d = autoscale::Decide(*policy, o, memory);

  if (d.replicas != o.spec_replicas) {
    // The set's own controller writes its status often, so a stale version is retried on a
    // fresh read, as long as the replicas we decided from are still the ones stored.
    Result<api::Object> scaled = AbortedError("not tried");
    int64_t version = set->metadata.resource_version;
    for (int attempt = 0; attempt < 3 && !scaled.ok(); ++attempt) {
      api::Json patch = {{"metadata", {{"resourceVersion", std::to_string(version)}}},
                         {"spec", {{"replicas", d.replicas}}}};
      scaled = store_.Patch(api::SandboxSetKind(), ns, target, patch);
      if (scaled.ok() || scaled.status().code() != StatusCode::kAborted) break;
      auto fresh = store_.Get(api::SandboxSetKind(), ns, target);
      if (!fresh.ok()) break;
      auto fresh_spec = api::DecodeSpec<api::SandboxSetSpec>(*fresh);
      if (!fresh_spec.ok() || fresh_spec->replicas.value_or(0) != o.spec_replicas) break;
      version = fresh->metadata.resource_version;
    }
    if (!scaled.ok()) {
      std::string m = fmt::format("failed to scale SandboxSet \"{}\" from {} to {}: {}", target,
                                  o.spec_replicas, d.replicas, scaled.status().message());
      SetCond(status, "AbleToScale", false, "FailedUpdateScale", m, gen, now);
      if (scaled.status().code() != StatusCode::kAborted) warn("FailedRescale", m);
      write_status().IgnoreError();
      return scaled.status().code() == StatusCode::kAborted ? Status::Ok() : scaled.status();
    }
    status.last_scale_time = now;
    std::string m = fmt::format("New size: {} (from {}); {}: {}", d.replicas, o.spec_replicas,
                                autoscale::SourceName(d.source), d.reason);
    Log()->info("scaled autoscaler={}/{} set={} from={} to={} source={} reason=\"{}\"", ns,
                pa.metadata.name, target, o.spec_replicas, d.replicas,
                autoscale::SourceName(d.source), d.reason);
    if (events_) events_->Normal(pa, "SuccessfulRescale", m).IgnoreError();
    SetCond(status, "AbleToScale", true, "SucceededRescale", m, gen, now);
  } else if (d.cooldown_remaining) {
    SetCond(status, "AbleToScale", true, "ScaleDownStabilized", d.reason, gen, now);
  } else {
    SetCond(status, "AbleToScale", true, "ReadyForNewScale",
            "the SandboxSet can be scaled; nothing to change", gen, now);
  }
  SetCond(status, "ScalingActive", true, "ValidPolicy",
          fmt::format("{}: {}", autoscale::SourceName(d.source), d.reason), gen, now);
  SetCond(
      status, "ScalingLimited", !d.limit.empty(), d.limit.empty() ? "DesiredWithinRange" : d.limit,
      d.limit.empty() ? "the desired count is within the acceptable range"
                      : fmt::format("the desired replica count is {} the {} bound",
                                    d.limit == "TooFewReplicas" ? "below" : "above",
                                    d.limit == "TooFewReplicas" ? "minReplicas" : "maxReplicas"),
      gen, now);
  status.current_replicas = set_status->replicas;
  status.desired_replicas = d.replicas;
  status.current_capacity.available = set_status->available_replicas;
  status.applied_cron_policies.clear();
  for (const auto& c : spec.cron_policies) {
    api::CronScalingPolicyStatus cs;
    cs.name = c.name;
    if (auto it = d.cron_last.find(c.name); it != d.cron_last.end())
      cs.last_schedule_time = it->second;
    status.applied_cron_policies.push_back(cs);
  }
  if (o.forecast) {
    api::PredictionStatus p;
    p.horizon_seconds =
        static_cast<int32_t>(std::chrono::ceil<std::chrono::seconds>(o.forecast->horizon).count());
    p.claims_in_lookback = o.forecast->claims_in_lookback;
    p.replicas = o.forecast->replicas;
    status.prediction = p;
  } else {
    status.prediction.reset();
  }
  return write_status();
}

}  // namespace warren::controller
