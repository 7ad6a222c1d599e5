#include "controller/recycle_controller.h"

#include <fmt/format.h>

#include "api/kinds.h"
#include "api/types/labels.h"
#include "base/ids.h"
#include "base/log.h"
#include "base/time_format.h"
#include "controller/claim/claim_metadata.h"
#include "controller/sandboxset_member.h"
#include "obs/sandbox_metric_help.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;
namespace labels = api::labels;
namespace annotations = api::annotations;

std::string KeyOf(std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}", ns, name);
}

std::string Annotation(const api::Object& o, const char* key) {
  auto it = o.metadata.annotations.find(key);
  return it == o.metadata.annotations.end() ? std::string() : it->second;
}

std::string Label(const api::Object& o, const char* key) {
  auto it = o.metadata.labels.find(key);
  return it == o.metadata.labels.end() ? std::string() : it->second;
}

std::string PhaseOf(const api::Object& o) {
  const api::Json& st = o.status();
  return st.is_object() ? st.value("phase", "") : "";
}

bool CleanupEnabled(const api::Object& sandbox, const api::Object* set) {
  if (Annotation(sandbox, annotations::kCleanupEnabled) == "true") return true;
  return set != nullptr && Annotation(*set, annotations::kCleanupEnabled) == "true";
}

// Pool members are made with a templateRef to their pool's revision; an inline template means
// the member was changed since (a claim-time or later in-place update): it runs something the
// pool does not offer, so it is deleted rather than recycled.
bool ChangedSinceClaim(const api::Object& sandbox) {
  const api::Json& spec = sandbox.spec();
  return spec.is_object() && spec.contains("template") && !spec["template"].is_null();
}

std::string SandboxIdOf(const api::Object& sandbox) {
  std::string id = Label(sandbox, labels::kSandboxId);
  return id.empty() ? Annotation(sandbox, annotations::kSandboxId) : id;
}

}  // namespace

RecycleController::RecycleController(PoolInformers& informers, SandboxResetter* resetter,
                                     claim::SandboxConnector* connector, obs::EventRecorder* events,
                                     RecycleControllerOptions options, base::Clock& clock)
    : informers_(informers),
      store_(informers.store()),
      resetter_(resetter),
      connector_(connector),
      events_(events),
      options_(options),
      clock_(clock),
      total_(obs::Metrics::Default().Counter("sandbox_recycle_total",
                                             "Sandboxes recycled into their pool, by result.",
                                             {{"source", "k8s"}})),
      duration_(obs::Metrics::Default().Histogram(
          "sandbox_recycle_duration_seconds", obs::help::kRecycleDuration, {{"source", "k8s"}})) {
  informers_.sandboxes().AddHandler([this](const Informer::Change& c) {
    if (c.type == store::EventType::kDeleted) return;
    if (Annotation(*c.object, annotations::kCleanup) == "true") {
      queue_.Add(KeyOf(c.object->metadata.namespace_, c.object->metadata.name));
    }
  });
}

RecycleController::~RecycleController() { Stop(); }

Status RecycleController::Start() {
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Worker(); });
  }
  started_ = true;
  return Status::Ok();
}

void RecycleController::Stop() {
  if (!started_) return;
  started_ = false;
  queue_.ShutDown();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void RecycleController::Worker() {
  while (auto key = queue_.Get()) {
    auto slash = key->find('/');
    Status s = Reconcile(key->substr(0, slash), key->substr(slash + 1));
    if (s.ok()) {
      queue_.Forget(*key);
    } else {
      base::Logger("controller")->warn("recycle failed key={} error={}", *key, s.ToString());
      queue_.AddWithBackoff(*key);
    }
    queue_.Done(*key);
  }
}

Status RecycleController::Reconcile(std::string_view ns, std::string_view name) {
  ObjectPtr cached = informers_.sandboxes().Get(ns, name);
  if (!cached || cached->metadata.deletion_timestamp) return Status::Ok();
  if (Annotation(*cached, annotations::kCleanup) != "true") return Status::Ok();
  // Work from the store's copy: the cache may lag a step this controller just wrote.
  ASSIGN_OR_RETURN(api::Object sandbox, store_.Get(api::SandboxKind(), ns, name));
  if (sandbox.metadata.deletion_timestamp || Annotation(sandbox, annotations::kCleanup) != "true") {
    return Status::Ok();
  }
  base::WallTime now = clock_.Now();
  auto marked_at = base::ParseRfc3339(Annotation(sandbox, pool_annotations::kRecycling));
  base::WallTime started = marked_at.value_or(now);
  if (now - started > options_.timeout) {
    return Fail(sandbox,
                fmt::format("recycling did not finish within {} ms", options_.timeout.count()));
  }

  std::string pool = Label(sandbox, labels::kSandboxPool);
  ObjectPtr set = pool.empty() ? nullptr : informers_.sets().Get(ns, pool);
  if (pool.empty()) return Fail(sandbox, "it belongs to no pool (no sandbox-pool label)");
  if (!set || set->metadata.deletion_timestamp) {
    return Fail(sandbox, fmt::format("its SandboxSet {} is gone", pool));
  }
  if (!CleanupEnabled(sandbox, set.get())) {
    return Fail(sandbox, fmt::format("recycling is not enabled ({}) on it or on SandboxSet {}",
                                     annotations::kCleanupEnabled, pool));
  }
  std::string revision =
      set->status().is_object() ? set->status().value("updateRevision", "") : std::string();
  if (Label(sandbox, labels::kTemplateHash) != revision) {
    return Fail(sandbox, fmt::format("its template revision {} is not the pool's current {}",
                                     Label(sandbox, labels::kTemplateHash), revision));
  }
  if (ChangedSinceClaim(sandbox)) {
    return Fail(sandbox, "its template was changed after its claim (an in-place update)");
  }
  std::string phase = PhaseOf(sandbox);
  if (phase == "Failed" || phase == "Succeeded") {
    return Fail(sandbox, fmt::format("it is {}", phase));
  }
  if (resetter_ == nullptr) return Fail(sandbox, "no node agent is available to reset it");

  std::string token;
  if (!marked_at) {
    // From here on the previous user is locked out: their token is replaced by a secret.
    token = base::RandomHex(32);
    claim::SetPoolToken(sandbox, token, informers_.secrets());
    sandbox.metadata.annotations[pool_annotations::kRecycling] = base::FormatRfc3339Millis(now);
    ASSIGN_OR_RETURN(sandbox, store_.Update(std::move(sandbox)));
  } else {
    // Never an empty token (that would open envd to everyone): a fresh secret if the sealed
    // one is missing or does not open; the write back into the pool seals whichever is used.
    token = informers_.secrets().AccessToken(sandbox).value_or("");
    if (token.empty()) token = base::RandomHex(32);
  }

  auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(options_.timeout -
                                                                         (clock_.Now() - started));
  Status reset = resetter_->Reset(sandbox, std::max(remaining, 1ms));
  if (!reset.ok()) return Fail(sandbox, fmt::format("reset failed: {}", reset.message()));
  if (connector_ != nullptr) {
    Status init = claim::EnvdInit(*connector_, SandboxIdOf(sandbox),
                                  api::DumpJson({{"accessToken", token}}), 2000ms, token);
    if (!init.ok()) return Fail(sandbox, fmt::format("envd after the reset: {}", init.message()));
  }

  // Back into the pool.
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(api::Object latest, store_.Get(api::SandboxKind(), ns, name));
    if (latest.metadata.uid != sandbox.metadata.uid || latest.metadata.deletion_timestamp) {
      return Status::Ok();
    }
    claim::ResetForPool(latest, *set, token, informers_.secrets());
    auto written = store_.Update(std::move(latest));
    if (written.ok()) break;
    if (written.status().code() != StatusCode::kAborted || attempt >= 8) return written.status();
  }
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(api::Object latest, store_.Get(api::SandboxKind(), ns, name));
    api::Json& st = latest.status();
    int64_t count = st.contains("recycledCount") && st["recycledCount"].is_number_integer()
                        ? st["recycledCount"].get<int64_t>()
                        : 0;
    st["recycledCount"] = count + 1;
    auto written = store_.UpdateStatus(std::move(latest));
    if (written.ok()) break;
    if (written.status().code() != StatusCode::kAborted || attempt >= 8) return written.status();
  }
  double seconds = std::chrono::duration<double>(clock_.Now() - started).count();
  total_.Add({{"namespace", std::string(ns)}, {"result", "success"}}).Increment();
  duration_.Add({{"namespace", std::string(ns)}}, obs::RecycleDurationBuckets()).Observe(seconds);
  if (events_) {
    events_->Normal(sandbox, "Recycled", fmt::format("reset and returned to pool {}", pool))
        .IgnoreError();
  }
  base::Logger("controller")
      ->info("recycled sandbox={}/{} pool={} seconds={:.3f}", ns, name, pool, seconds);
  return Status::Ok();
}

Status RecycleController::Fail(const api::Object& sandbox, const std::string& why) {
  const std::string& ns = sandbox.metadata.namespace_;
  const std::string& name = sandbox.metadata.name;
  base::Logger("controller")->warn("recycle failed sandbox={}/{} reason={}", ns, name, why);
  total_.Add({{"namespace", ns}, {"result", "failure"}}).Increment();
  if (events_) {
    events_->Warning(sandbox, "RecycleFailed", fmt::format("not recycled: {}", why)).IgnoreError();
  }
  if (Annotation(sandbox, annotations::kCleanupRetainOnFailure) == "true") {
    api::Json patch = {
        {"metadata",
         {{"annotations",
           {{annotations::kCleanup, nullptr}, {pool_annotations::kRecycling, nullptr}}}}},
        {"spec",
         {{"shutdownTime", base::FormatRfc3339(clock_.Now() + options_.failure_shutdown_grace)}}}};
    auto r = store_.Patch(api::SandboxKind(), ns, name, patch);
    if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
    return Status::Ok();
  }
  store::DeleteOptions options;
  options.preconditions.uid = sandbox.metadata.uid;
  auto r = store_.Delete(api::SandboxKind(), ns, name, options);
  if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
  return Status::Ok();
}

Result<bool> DeleteOrRecycle(store::Store& store, const api::Object& sandbox) {
  ASSIGN_OR_RETURN(bool marked, RequestRecycle(store, sandbox));
  if (marked) return true;
  store::DeleteOptions options;
  options.preconditions.uid = sandbox.metadata.uid;
  auto r =
      store.Delete(api::SandboxKind(), sandbox.metadata.namespace_, sandbox.metadata.name, options);
  if (!r.ok()) return r.status();
  return false;
}

Result<bool> RequestRecycle(store::Store& store, const api::Object& sandbox) {
  const std::string& ns = sandbox.metadata.namespace_;
  std::string pool = Label(sandbox, labels::kSandboxPool);
  bool recycle = false;
  if (!pool.empty() && Label(sandbox, labels::kSandboxClaimed) == "true" &&
      !sandbox.metadata.deletion_timestamp && PhaseOf(sandbox) == "Running" &&
      !ChangedSinceClaim(sandbox)) {
    auto set = store.Get(api::SandboxSetKind(), ns, pool);
    recycle = CleanupEnabled(sandbox, set.ok() ? &*set : nullptr) && set.ok() &&
              !set->metadata.deletion_timestamp;
  }
  if (recycle) {
    api::Json patch = {{"metadata", {{"annotations", {{annotations::kCleanup, "true"}}}}}};
    auto r = store.Patch(api::SandboxKind(), ns, sandbox.metadata.name, patch);
    if (!r.ok()) return r.status();
    return true;
  }
  return false;
}

}  // namespace warren::controller
