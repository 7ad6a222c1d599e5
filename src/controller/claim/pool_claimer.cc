#include "controller/claim/pool_claimer.h"

#include <fmt/format.h>

#include <optional>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox_set.h"
#include "base/ids.h"
#include "base/log.h"
#include "base/scope_guard.h"
#include "base/time_format.h"
#include "controller/claim/claim_metadata.h"
#include "controller/sandboxset_member.h"
#include "controller/sandboxset_revision.h"
#include "trace/span.h"

namespace warren::controller::claim {
namespace {

using Steady = std::chrono::steady_clock;
namespace labels = api::labels;
namespace annotations = api::annotations;

std::chrono::milliseconds Remaining(Steady::time_point deadline) {
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()));
}

std::string SandboxIdOf(const api::Object& sandbox) {
  auto it = sandbox.metadata.labels.find(labels::kSandboxId);
  if (it != sandbox.metadata.labels.end()) return it->second;
  auto a = sandbox.metadata.annotations.find(annotations::kSandboxId);
  return a == sandbox.metadata.annotations.end() ? std::string() : a->second;
}

std::string Annotation(const api::Object& o, const char* key) {
  auto it = o.metadata.annotations.find(key);
  return it == o.metadata.annotations.end() ? std::string() : it->second;
}

// The status message a failed sandbox carries, for the caller's error.
std::string FailureOf(const api::Object& sandbox) {
  const api::Json& st = sandbox.status();
  std::string phase = st.is_object() ? st.value("phase", "") : "";
  std::string message = st.is_object() ? st.value("message", "") : "";
  if (phase.empty()) phase = "Pending";
  return message.empty() ? fmt::format("phase {}", phase)
                         : fmt::format("phase {}: {}", phase, message);
}

// What the node said of a sandbox's in-place update (its InplaceUpdate condition), else its
// failure.
std::string InplaceUpdateMessage(const api::Object& sandbox) {
  const api::Json& st = sandbox.status();
  if (st.is_object() && st.contains("conditions") && st["conditions"].is_array()) {
    for (const api::Json& c : st["conditions"]) {
      if (c.is_object() && c.value("type", "") == "InplaceUpdate" &&
          !c.value("message", "").empty()) {
        return c.value("message", "");
      }
    }
  }
  return FailureOf(sandbox);
}

}  // namespace

PoolClaimer::PoolClaimer(PoolInformers& informers, SandboxConnector* connector,
                         RouteHook on_claimed, PoolClaimerOptions options, base::Clock& clock)
    : informers_(informers),
      store_(informers.store()),
      connector_(connector),
      on_claimed_(std::move(on_claimed)),
      options_(options),
      clock_(clock),
      index_(informers.sandboxes(), &informers.nodes()),
      started_at_(clock.Now()) {}

PoolClaimer::~PoolClaimer() { Stop(); }

Result<ClaimResult> PoolClaimer::Claim(const ClaimRequest& request) {
  auto start = Steady::now();
  if (request.namespace_.empty() || request.pool.empty()) {
    return InvalidArgumentError("a claim needs a namespace and a pool (SandboxSet name)");
  }
  if (request.timeout <= std::chrono::milliseconds(0)) {
    return InvalidArgumentError(
        fmt::format("claim timeout must be positive, got {} ms", request.timeout.count()));
  }
  Deadline deadline = start + request.timeout;
  base::WallTime pending_deadline = clock_.Now() + request.timeout + options_.pending_grace;
  std::string lock = NewClaimLock(options_.replica);
  {
    std::lock_guard guard(mu_);
    in_flight_.insert(lock);
  }
  // The lock stays "in flight" until the claim is committed (by us, or by the committer).
  bool deferred = false;
  auto forget = base::ScopeGuard([&] {
    if (deferred) return;
    std::lock_guard guard(mu_);
    in_flight_.erase(lock);
  });
  auto result = DoClaim(request, deadline, pending_deadline, lock, &deferred);
  double seconds = std::chrono::duration<double>(Steady::now() - start).count();
  if (result.ok()) {
    metrics_.Record(request.source, request.namespace_, request.pool, true, result->lock_type,
                    seconds, result->retries);
  } else {
    metrics_.Record(request.source, request.namespace_, request.pool, false,
                    result.status().code() == StatusCode::kNotFound ? "none" : lock_type::kUpdate,
                    seconds, 0);
  }
  return result;
}

Result<ClaimResult> PoolClaimer::DoClaim(const ClaimRequest& request, Deadline deadline,
                                         base::WallTime pending_deadline, const std::string& lock,
                                         bool* deferred) {
  ObjectPtr set = informers_.sets().Get(request.namespace_, request.pool);
  if (!set) {
    // Maybe created a moment ago and not in the cache yet: ask the store.
    auto stored = store_.Get(api::SandboxSetKind(), request.namespace_, request.pool);
    if (stored.ok()) set = std::make_shared<const api::Object>(std::move(*stored));
  }
  if (!set) {
    return NotFoundError(
        fmt::format("SandboxSet {}/{} not found", request.namespace_, request.pool));
  }
  if (set->metadata.deletion_timestamp) {
    return FailedPreconditionError(
        fmt::format("SandboxSet {}/{} is being deleted", request.namespace_, request.pool));
  }
  std::string revision;
  if (set->status().is_object()) revision = set->status().value("updateRevision", "");

  int conflicts = 0;
  while (true) {
    if (Steady::now() >= deadline) {
      return DeadlineExceededError(fmt::format("claim from pool {}/{} timed out after {} ms",
                                               request.namespace_, request.pool,
                                               request.timeout.count()));
    }
    // One span per attempt: a lost race shows as a failed infra.lock beside the one that won.
    std::optional<trace::Span> lock_span(std::in_place, "infra.lock");
    // An in-place update is not made while a member wakes: such a claim takes running ones.
    const bool may_wake = !request.inplace_update;
    ObjectPtr member = index_.Take(request.namespace_, request.pool, revision, may_wake);
    if (!member) {
      lock_span->SetAttribute("warren.stock", false);
      lock_span.reset();
      if (request.create_on_no_stock) {
        return ColdCreate(request, *set, deadline, pending_deadline, lock, deferred);
      }
      if (!index_.WaitForStock(request.namespace_, request.pool, deadline, may_wake)) {
        if (cancelled_) return UnavailableError("the server is shutting down");
        return ResourceExhaustedError(
            fmt::format("no sandbox available in pool {}/{} within {} ms (createOnNoStock is "
                        "off)",
                        request.namespace_, request.pool, request.timeout.count()));
      }
      continue;
    }
    api::Object claimed = *member;
    const bool wake = ClassifyMember(claimed) == MemberState::kHibernated;
    // A recycled member holds a secret pool token: envd wants it to accept the new one.
    std::string pool_token = informers_.secrets().AccessToken(claimed).value_or("");
    ApplyClaim(claimed, request, lock, clock_.Now(), pending_deadline, informers_.secrets());
    if (wake) claimed.spec()["paused"] = false;
    std::string inplace_revision;
    if (request.inplace_update) {
      const api::Json& spec = claimed.spec();
      api::Json pod_template;
      if (spec.is_object() && spec.contains("template")) {
        pod_template = spec["template"];
      } else if (ObjectPtr t = informers_.templates().Get(
                     request.namespace_, spec.is_object() && spec.contains("templateRef")
                                             ? spec["templateRef"].value("name", "")
                                             : "")) {
        if (t->spec().is_object() && t->spec().contains("template")) {
          pod_template = t->spec()["template"];
        }
      }
      auto revision = ApplyInplaceUpdate(claimed, pod_template, *request.inplace_update);
      if (!revision.ok()) {
        index_.Return(member);
        return revision.status().WithPrefix("claim: in-place update");
      }
      inplace_revision = *revision;
    }
    auto written = store_.Update(std::move(claimed));
    if (!written.ok()) {
      lock_span->SetError(written.status().message());
      StatusCode code = written.status().code();
      if (code == StatusCode::kAborted || code == StatusCode::kNotFound) {
        // Someone else changed it first (another claim, a scale-down, the node): pick again.
        if (++conflicts >= options_.max_conflicts) {
          return AbortedError(fmt::format("claim from pool {}/{} lost {} races in a row",
                                          request.namespace_, request.pool, conflicts));
        }
        continue;
      }
      index_.Return(member);
      return written.status().WithPrefix("claim: update sandbox");
    }
    lock_span->SetAttribute("warren.sandbox", written->metadata.name);
    lock_span.reset();
    api::Object ready = std::move(*written);
    if (wake) {
      trace::Span wake_span("infra.resumeSandbox");
      ASSIGN_OR_RETURN(ready, WaitRunning(ready, request, deadline, "woken for the claim"));
    }
    if (!inplace_revision.empty()) {
      trace::Span update_span("infra.inplaceUpdate");
      ASSIGN_OR_RETURN(ready, WaitInplaceUpdated(ready, inplace_revision, request, deadline));
      pool_token
          .clear();  // envd started afresh on the new image: the node replayed the claim's /init
    }
    ASSIGN_OR_RETURN(auto committed, Finish(ready, request, deadline, lock, pool_token, deferred));
    return ClaimResult{std::move(committed), true, lock_type::kUpdate, conflicts};
  }
}

Result<ClaimResult> PoolClaimer::ColdCreate(const ClaimRequest& request, const api::Object& set,
                                            Deadline deadline, base::WallTime pending_deadline,
                                            const std::string& lock, bool* deferred) {
  ObjectPtr referenced;
  const api::Json& spec = set.spec();
  if (spec.is_object() && spec.contains("templateRef") && spec["templateRef"].is_object()) {
    std::string ref = spec["templateRef"].value("name", "");
    referenced = informers_.templates().Get(set.metadata.namespace_, ref);
    if (!referenced) {
      return FailedPreconditionError(
          fmt::format("SandboxSet {}/{}: SandboxTemplate {} (spec.templateRef) not found",
                      set.metadata.namespace_, set.metadata.name, ref));
    }
  }
  TemplateRevision revision = ComputeRevision(set, referenced.get());
  if (!informers_.templates().Get(set.metadata.namespace_, revision.template_name)) {
    auto t = store_.Create(MakeRevisionTemplate(set, revision));
    if (!t.ok() && t.status().code() != StatusCode::kAlreadyExists) {
      return t.status().WithPrefix("claim: create the pool's SandboxTemplate");
    }
  }
  api::Object fresh = MakeMember(set, revision);
  // Named now: the quota reservation and the sealed secrets are bound to the name.
  fresh.metadata.name = fresh.metadata.generate_name + base::GenerateNameSuffix();
  ApplyClaim(fresh, request, lock, clock_.Now(), pending_deadline, informers_.secrets());
  if (request.inplace_update) {
    // Made with the claim's image and resources from the start: nothing to update in place.
    const api::Json& t = revision.template_spec;
    auto applied = ApplyInplaceUpdate(fresh, t.contains("template") ? t["template"] : api::Json(),
                                      *request.inplace_update);
    if (!applied.ok()) return applied.status().WithPrefix("claim: in-place update");
  }
  std::optional<trace::Span> step(std::in_place, "infra.createSandbox");
  ASSIGN_OR_RETURN(QuotaReservation reservation, QuotaReservation::Take(options_.quota, fresh));
  ASSIGN_OR_RETURN(auto created, store_.Create(std::move(fresh)));
  reservation.Keep();
  step.emplace("infra.waitReady");
  auto ready = WaitRunning(created, request, deadline, "created for the claim");
  step.reset();
  if (!ready.ok()) return ready.status();
  ASSIGN_OR_RETURN(auto committed, Finish(*ready, request, deadline, lock, "", deferred));
  return ClaimResult{std::move(committed), false, lock_type::kCreate, 0};
}

Result<api::Object> PoolClaimer::WaitRunning(const api::Object& written,
                                             const ClaimRequest& request, Deadline deadline,
                                             std::string_view what) {
  const std::string ns = written.metadata.namespace_, name = written.metadata.name;
  auto wait = std::min(Remaining(deadline), request.wait_ready_timeout);
  Informer& cache = informers_.sandboxes();
  // From here on a sandbox missing from the cache was deleted, not "not seen yet".
  cache.WaitForRevision(written.metadata.resource_version, wait);
  ObjectPtr latest;
  auto settle = [&] {
    latest = cache.Get(ns, name);
    if (!latest || latest->metadata.uid != written.metadata.uid) return true;  // deleted
    if (IsRunningAndReady(*latest)) return true;
    // Dead or being deleted: it will not become ready.
    MemberState state = ClassifyMember(*latest);
    const api::Json& st = latest->status();
    std::string phase = st.is_object() ? st.value("phase", "") : "";
    return state == MemberState::kTerminating || phase == "Failed" || phase == "Succeeded";
  };
  bool settled = WaitSettled(cache, settle, wait);
  if (cancelled_ && !settled) {
    Status why = UnavailableError("the server is shutting down");
    if (latest) DeleteFailed(*latest, "wait_ready", why);
    return why;
  }
  if (!latest || latest->metadata.uid != written.metadata.uid) {
    return UnavailableError(fmt::format("sandbox {}/{} {} was deleted", ns, name, what));
  }
  if (!settled || !IsRunningAndReady(*latest)) {
    Status why =
        settled
            ? UnavailableError(
                  fmt::format("sandbox {}/{} {} failed: {}", ns, name, what, FailureOf(*latest)))
            : DeadlineExceededError(fmt::format("sandbox {}/{} {} was not ready within {} ms "
                                                "({})",
                                                ns, name, what, wait.count(), FailureOf(*latest)));
    DeleteFailed(*latest, "wait_ready", why);
    return why;
  }
  return *latest;
}

bool PoolClaimer::WaitSettled(Informer& cache, const std::function<bool()>& settle,
                              std::chrono::milliseconds wait) {
  const auto wait_end = Steady::now() + wait;
  bool settled = false;
  // In slices, so a shutdown is noticed.
  while (!settled && !cancelled_ && Steady::now() < wait_end) {
    settled = cache.WaitUntil(settle, std::min<std::chrono::milliseconds>(
                                          Remaining(wait_end), std::chrono::milliseconds(100)));
  }
  return settled || settle();
}

Result<api::Object> PoolClaimer::WaitInplaceUpdated(const api::Object& claimed,
                                                    const std::string& revision,
                                                    const ClaimRequest& request,
                                                    Deadline deadline) {
  const std::string ns = claimed.metadata.namespace_, name = claimed.metadata.name;
  Informer& cache = informers_.sandboxes();
  const auto wait = std::min(Remaining(deadline), request.wait_ready_timeout);
  cache.WaitForRevision(claimed.metadata.resource_version, wait);
  ObjectPtr latest;
  enum class Outcome { kWaiting, kDone, kFailed, kGone } outcome = Outcome::kWaiting;
  auto settle = [&] {
    latest = cache.Get(ns, name);
    if (!latest || latest->metadata.uid != claimed.metadata.uid) {
      outcome = Outcome::kGone;
      return true;
    }
    const api::Json& st = latest->status();
    if (!st.is_object()) return false;
    if (st.value("failedUpdateRevision", "") == revision || st.value("phase", "") == "Failed") {
      outcome = Outcome::kFailed;
      return true;
    }
    if (st.value("updateRevision", "") == revision && IsRunningAndReady(*latest)) {
      outcome = Outcome::kDone;
      return true;
    }
    return false;
  };
  WaitSettled(cache, settle, wait);
  if (outcome == Outcome::kDone) return *latest;
  if (outcome == Outcome::kGone) {
    return UnavailableError(
        fmt::format("sandbox {}/{} was deleted during its in-place update", ns, name));
  }
  // The node gave up (a hook, an image that cannot be had): FailedPrecondition, as another
  // member would fail the same way.
  Status why =
      outcome == Outcome::kFailed
          ? FailedPreconditionError(fmt::format("in-place update of sandbox {}/{} failed: {}", ns,
                                                name, InplaceUpdateMessage(*latest)))
          : DeadlineExceededError(
                fmt::format("in-place update of sandbox {}/{} was not done within {} ms ({})", ns,
                            name, wait.count(), FailureOf(*latest)));
  DeleteFailed(*latest, "inplace_update", why);
  return why;
}

Result<api::Object> PoolClaimer::Finish(const api::Object& claimed, const ClaimRequest& request,
                                        Deadline deadline, const std::string& lock,
                                        const std::string& pool_token, bool* deferred) {
  if (connector_ != nullptr && !request.skip_init) {
    std::string id = SandboxIdOf(claimed);
    auto timeout = std::min(Remaining(deadline), options_.init_timeout);
    trace::Span span("infra.initRuntime");
    Status init = EnvdInit(*connector_, id, InitBody(request), timeout, pool_token);
    if (!init.ok()) {
      span.SetError(init.message());
      DeleteFailed(claimed, "envd_init", init);
      return UnavailableError(fmt::format("claim of sandbox {}/{}: {}", claimed.metadata.namespace_,
                                          claimed.metadata.name, init.message()));
    }
  }
  if (on_claimed_) {
    trace::Span span("proxy.syncRoute");
    on_claimed_(claimed);
  }
  // The commit leaves the response path when envd can later tell whether this claim was
  // answered (it holds the claim's token after /init): a crash before the commit is then
  // resolved by the janitor from envd, never by guessing.
  if (connector_ != nullptr && !request.skip_init && !request.access_token.empty() &&
      EnqueueCommit(claimed, deadline, lock)) {
    *deferred = true;
    return claimed;
  }
  trace::Span commit_span("infra.commit");
  auto committed = Commit(claimed, deadline, lock);
  if (!committed.ok()) {
    commit_span.SetError(committed.status().message());
    if (committed.status().code() != StatusCode::kAborted)
      DeleteFailed(claimed, "commit", committed.status());
    return committed.status();
  }
  return committed;
}

Result<api::Object> PoolClaimer::Commit(api::Object current, Deadline deadline,
                                        const std::string& lock) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    if (Steady::now() >= deadline) {
      return DeadlineExceededError(fmt::format("claim of sandbox {}/{} ran out of time",
                                               current.metadata.namespace_, current.metadata.name));
    }
    if (Annotation(current, annotations::kLock) != lock ||
        !current.metadata.annotations.contains(pool_annotations::kClaimPending)) {
      return AbortedError(fmt::format("claim of sandbox {}/{} was rolled back",
                                      current.metadata.namespace_, current.metadata.name));
    }
    api::Object next = current;
    next.metadata.annotations.erase(pool_annotations::kClaimPending);
    auto written = store_.Update(std::move(next));
    if (written.ok()) return written;
    if (written.status().code() != StatusCode::kAborted) return written.status();
    // Something else wrote it meanwhile (the node's status): read again and re-check the lock.
    ASSIGN_OR_RETURN(current, store_.Get(api::SandboxKind(), current.metadata.namespace_,
                                         current.metadata.name));
  }
  return AbortedError(fmt::format("claim of sandbox {}/{}: commit kept conflicting",
                                  current.metadata.namespace_, current.metadata.name));
}

void PoolClaimer::DeleteFailed(const api::Object& sandbox, std::string_view step,
                               const Status& why) {
  base::Logger("controller")
      ->warn("claim failed after taking a sandbox; deleting it sandbox={}/{} step={} error={}",
             sandbox.metadata.namespace_, sandbox.metadata.name, step, why.ToString());
  store::DeleteOptions options;
  options.preconditions.uid = sandbox.metadata.uid;
  store_.Delete(api::SandboxKind(), sandbox.metadata.namespace_, sandbox.metadata.name, options)
      .status()
      .IgnoreError();
}

Status PoolClaimer::Start() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = false;
  }
  {
    std::lock_guard lock(commit_mu_);
    committer_running_ = true;
  }
  committer_ = std::thread([this] { CommitterLoop(); });
  janitor_ = std::thread([this] { JanitorLoop(); });
  return Status::Ok();
}

bool PoolClaimer::EnqueueCommit(const api::Object& claimed, Deadline deadline,
                                const std::string& lock) {
  {
    std::lock_guard guard(commit_mu_);
    if (!committer_running_) return false;
    commits_.push_back(QueuedCommit{claimed, deadline, lock});
  }
  commit_cv_.notify_one();
  return true;
}

void PoolClaimer::CommitterLoop() {
  std::unique_lock guard(commit_mu_);
  while (true) {
    commit_cv_.wait(guard, [this] { return !committer_running_ || !commits_.empty(); });
    if (commits_.empty()) return;  // stopped and drained
    QueuedCommit c = std::move(commits_.front());
    commits_.pop_front();
    guard.unlock();
    auto committed = Commit(c.claimed, c.deadline, c.lock);
    if (!committed.ok()) {
      // Left pending: the janitor resolves it from envd (it holds the claim's token).
      base::Logger("controller")
          ->warn("claim commit failed sandbox={}/{} step=commit error={}",
                 c.claimed.metadata.namespace_, c.claimed.metadata.name,
                 committed.status().ToString());
    }
    {
      std::lock_guard in_flight(mu_);
      in_flight_.erase(c.lock);
    }
    guard.lock();
  }
}

void PoolClaimer::Stop() {
  cancelled_ = true;
  index_.Shutdown();
  {
    std::lock_guard guard(commit_mu_);
    committer_running_ = false;  // the committer drains what is queued, then ends
  }
  commit_cv_.notify_all();
  if (committer_.joinable()) committer_.join();
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (janitor_.joinable()) janitor_.join();
}

void PoolClaimer::JanitorLoop() {
  std::unique_lock lock(stop_mu_);
  while (!stopping_) {
    lock.unlock();
    RollBackAbandonedClaims();
    lock.lock();
    stop_cv_.wait_for(lock, options_.janitor_period, [this] { return stopping_; });
  }
}

int PoolClaimer::RollBackAbandonedClaims() {
  auto log = base::Logger("controller");
  base::WallTime now = clock_.Now();
  int rolled = 0;
  for (const auto& s : informers_.sandboxes().List()) {
    std::string pending = Annotation(*s, pool_annotations::kClaimPending);
    if (pending.empty() || s->metadata.deletion_timestamp) continue;
    std::string lock = Annotation(*s, annotations::kLock);
    {
      std::lock_guard guard(mu_);
      if (in_flight_.contains(lock)) continue;
    }
    auto deadline = base::ParseRfc3339(pending);
    auto claimed_at = base::ParseRfc3339(Annotation(*s, annotations::kClaimTimestamp));
    bool expired = !deadline || *deadline <= now;
    std::string_view maker = ReplicaOfLock(lock);
    // The only writer made every claim there is, whatever name it ran under.
    bool ours = options_.liveness == nullptr || (!maker.empty() && maker == options_.replica);
    if (ours) {
      // Claimed by an earlier run of this replica: nobody will finish it.
      bool orphaned = claimed_at && *claimed_at < started_at_;
      if (!expired && !orphaned) continue;
    } else if (!expired) {
      continue;
    } else if (!maker.empty() && options_.liveness->IsAlive(maker)) {
      // Past its deadline, but its replica is alive: it may yet commit or roll it back (a
      // commit queued behind a slow store), and envd is asked only by the one that made it.
      continue;
    }
    Status resolved = ResolveAbandoned(*s, now);
    if (resolved.ok()) {
      ++rolled;
    } else {
      log->warn("an abandoned claim is not resolved yet sandbox={}/{} error={}",
                s->metadata.namespace_, s->metadata.name, resolved.ToString());
    }
  }
  return rolled;
}

Status PoolClaimer::ResolveAbandoned(const api::Object& sandbox, base::WallTime now) {
  auto log = base::Logger("controller");
  std::string token = informers_.secrets().AccessToken(sandbox).value_or("");
  std::string init = informers_.secrets().InitRequest(sandbox).value_or("");
  // Only claims whose commit was taken off the response path can have been answered while
  // pending; they carry their token in the /init body, and envd holds it once /init ran.
  bool answerable =
      connector_ != nullptr && !token.empty() && init.find(token) != std::string::npos;
  if (answerable) {
    auto holds = connector_->HoldsToken(SandboxIdOf(sandbox), token, options_.init_timeout);
    if (!holds.ok()) {
      auto pending = base::ParseRfc3339(Annotation(sandbox, pool_annotations::kClaimPending));
      if (pending && now - *pending < std::chrono::minutes(1)) return holds.status();
      // Unreachable for a minute past its deadline: nobody can use it either way.
      log->warn("abandoned claim with an unreachable envd; deleting sandbox={}/{} error={}",
                sandbox.metadata.namespace_, sandbox.metadata.name, holds.status().ToString());
      store::DeleteOptions options;
      options.preconditions.uid = sandbox.metadata.uid;
      return store_
          .Delete(api::SandboxKind(), sandbox.metadata.namespace_, sandbox.metadata.name, options)
          .status();
    }
    if (*holds) {
      api::Object done = sandbox;
      done.metadata.annotations.erase(pool_annotations::kClaimPending);
      RETURN_IF_ERROR(store_.Update(std::move(done)).status());
      log->info(
          "abandoned claim had reached envd (it may have been answered): committed "
          "sandbox={}/{}",
          sandbox.metadata.namespace_, sandbox.metadata.name);
      return Status::Ok();
    }
  }
  RETURN_IF_ERROR(RollBack(sandbox));
  log->info("rolled back an abandoned claim sandbox={}/{}", sandbox.metadata.namespace_,
            sandbox.metadata.name);
  return Status::Ok();
}

Status PoolClaimer::RollBack(const api::Object& sandbox) {
  // No caller ever saw this sandbox (its claim never committed), so nobody ran anything in it:
  // clearing what /init set (token, env) is a complete reset.
  ObjectPtr set = informers_.sets().Get(sandbox.metadata.namespace_, std::string(PoolOf(sandbox)));
  std::string revision;
  if (set && set->status().is_object()) revision = set->status().value("updateRevision", "");
  auto hash = sandbox.metadata.labels.find(labels::kTemplateHash);
  bool can_return = set && !set->metadata.deletion_timestamp && IsRunningAndReady(sandbox) &&
                    hash != sandbox.metadata.labels.end() && hash->second == revision;
  if (can_return && connector_ != nullptr) {
    Status reset = EnvdReset(*connector_, SandboxIdOf(sandbox), options_.init_timeout);
    if (!reset.ok()) can_return = false;
  }
  if (can_return) {
    api::Object back = sandbox;
    ResetForPool(back, *set, "", informers_.secrets());
    auto written = store_.Update(std::move(back));
    if (written.ok()) return Status::Ok();
    if (written.status().code() == StatusCode::kAborted) return written.status();  // next pass
  }
  store::DeleteOptions options;
  options.preconditions.uid = sandbox.metadata.uid;
  options.preconditions.resource_version = sandbox.metadata.resource_version;
  return store_
      .Delete(api::SandboxKind(), sandbox.metadata.namespace_, sandbox.metadata.name, options)
      .status();
}

}  // namespace warren::controller::claim
