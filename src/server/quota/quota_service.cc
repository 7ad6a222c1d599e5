#include "server/quota/quota_service.h"

#include <fmt/format.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/resource_quota.h"
#include "api/types/sandbox.h"
#include "api/types/sandbox_template.h"
#include "base/log.h"
#include "server/quota/memory_ledger.h"
#include "server/quota/redis_ledger.h"

namespace warren::server::quota {
namespace {

std::shared_ptr<spdlog::logger> Log() { return base::Logger("quota"); }

std::string Lock(std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}", ns, name);
}

int64_t UnixMillis(base::WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string PhaseOf(const api::Object& sandbox) {
  const api::Json& status = sandbox.status();
  if (!status.is_object()) return "";
  auto it = status.find("phase");
  return it != status.end() && it->is_string() ? it->get<std::string>() : "";
}

// Whether the sandbox still holds what it was counted for.
bool Live(const api::Object& sandbox) {
  std::string phase = PhaseOf(sandbox);
  return phase != api::sandbox_phase::kSucceeded && phase != api::sandbox_phase::kFailed;
}

}  // namespace

Result<std::unique_ptr<QuotaService>> QuotaService::Create(store::Store& store,
                                                           QuotaOptions options,
                                                           base::Clock& clock) {
  std::unique_ptr<Ledger> ledger;
  if (options.redis_address.empty()) {
    ledger = std::make_unique<MemoryLedger>();
  } else {
    ASSIGN_OR_RETURN(ledger, RedisLedger::Create(options.redis_address, options.redis_timeout));
  }
  return std::unique_ptr<QuotaService>(
      new QuotaService(store, std::move(options), clock, std::move(ledger)));
}

QuotaService::QuotaService(store::Store& store, QuotaOptions options, base::Clock& clock,
                           std::unique_ptr<Ledger> ledger)
    : store_(store),
      options_(std::move(options)),
      clock_(clock),
      ledger_(std::move(ledger)),
      breaker_(options_.breaker, clock),
      events_(store, obs::EventRecorder::Options{.component = "quota"}, clock),
      decisions_(obs::Metrics::Default().Counter(
          "warren_quota_decisions_total",
          "Sandbox creates judged against a team's quota, by result: allowed, rejected, or "
          "fail_open (the quota backend could not be asked; the create went on).")),
      backend_errors_(obs::Metrics::Default().Counter(
          "warren_quota_backend_errors_total",
          "Calls to the quota ledger that failed (the circuit breaker counts them).")) {
  quotas_ = std::make_unique<controller::Informer>(
      store, controller::Informer::Options{.kind = &api::ResourceQuotaKind(), .name = "quotas"});
  sandboxes_ = std::make_unique<controller::Informer>(
      store, controller::Informer::Options{.kind = &api::SandboxKind(), .name = "quota-sandboxes"});
  quotas_->AddHandler([this](const controller::Informer::Change& c) { OnQuotaChange(c); });
  sandboxes_->AddHandler([this](const controller::Informer::Change& c) { OnSandboxChange(c); });
}

QuotaService::~QuotaService() { Stop(); }

Status QuotaService::Start() {
  RETURN_IF_ERROR(quotas_->Start());
  RETURN_IF_ERROR(sandboxes_->Start());
  // The ledger matches the store before the first create is judged (crash recovery).
  if (Status s = ReconcileNow(); !s.ok()) {
    Log()->warn(
        "quota ledger not reconciled at start (retrying in the background) ledger={} "
        "error={}",
        ledger_->Describe(), s.ToString());
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  worker_ = std::thread([this] { Worker(); });
  Log()->info("quota ledger={}", ledger_->Describe());
  return Status::Ok();
}

void QuotaService::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (sandboxes_) sandboxes_->Stop();
  if (quotas_) quotas_->Stop();
}

Limits QuotaService::LimitsFor(std::string_view ns) const {
  std::vector<controller::ObjectPtr> all = quotas_->List();
  std::vector<const api::Object*> mine;
  for (const auto& q : all) {
    if (q->metadata.namespace_ == ns && !q->metadata.deletion_timestamp) mine.push_back(q.get());
  }
  return LimitsOf(mine);
}

api::SandboxFootprint QuotaService::FootprintOf(const api::Object& sandbox) const {
  auto spec = api::DecodeSpec<api::SandboxSpec>(sandbox);
  if (!spec.ok()) return {};
  if (spec->pod_template) return api::FootprintOf(*spec->pod_template);
  if (spec->template_ref && !spec->template_ref->name.empty()) {
    auto tpl = store_.Get(api::SandboxTemplateKind(), sandbox.metadata.namespace_,
                          spec->template_ref->name);
    if (tpl.ok()) {
      auto tpl_spec = api::DecodeSpec<api::SandboxTemplateSpec>(*tpl);
      if (tpl_spec.ok() && tpl_spec->pod_template) return api::FootprintOf(*tpl_spec->pod_template);
    }
  }
  return {};
}

bool QuotaService::CallLedger(const std::function<Status()>& call, std::string_view ns) {
  if (!breaker_.Allow()) return false;
  Status s = call();
  if (s.ok()) {
    breaker_.Success();
    std::lock_guard lock(mu_);
    if (!failed_open_.empty()) {
      // The backend is back: what happened meanwhile is put right at once.
      failed_open_.clear();
      reconcile_due_ = true;
      wake_.notify_all();
    }
    return true;
  }
  breaker_.Failure();
  backend_errors_.Add({}).Increment();
  Log()->warn("quota ledger call failed namespace={} ledger={} error={}", ns, ledger_->Describe(),
              s.ToString());
  return false;
}

void QuotaService::FailedOpen(std::string_view ns, const Status& why) {
  decisions_.Add({{"result", "fail_open"}}).Increment();
  {
    std::lock_guard lock(mu_);
    if (!failed_open_.insert(std::string(ns)).second) return;  // said once per outage
  }
  std::string message = fmt::format(
      "quota not enforced: the ledger ({}) cannot be reached ({}); sandboxes are created "
      "without a reservation until it answers again, then counted",
      ledger_->Describe(), why.message());
  Log()->warn("failing open namespace={} {}", ns, message);
  for (const auto& q : quotas_->List()) {
    if (q->metadata.namespace_ != ns) continue;
    events_.Warning(*q, "QuotaNotEnforced", message).IgnoreError();
  }
}

Status QuotaService::Reserve(const api::Object& sandbox) {
  const std::string& ns = sandbox.metadata.namespace_;
  Limits limits = LimitsFor(ns);
  if (!limits.any()) return Status::Ok();
  Entry entry{Lock(ns, sandbox.metadata.name), FootprintOf(sandbox), UnixMillis(clock_.Now())};
  Result<ReserveOutcome> outcome = UnavailableError("the circuit breaker is open");
  bool answered = CallLedger(
      [&] {
        outcome = ledger_->Reserve(ns, entry, limits);
        return outcome.status();
      },
      ns);
  if (!answered) {
    FailedOpen(ns, outcome.status());
    return Status::Ok();
  }
  if (!outcome->admitted) {
    decisions_.Add({{"result", "rejected"}}).Increment();
    std::string why = Exceeds(limits, outcome->used, entry.footprint)
                          .value_or(fmt::format("exceeded the quota of namespace {}", ns));
    return ResourceExhaustedError(why);
  }
  decisions_.Add({{"result", "allowed"}}).Increment();
  {
    std::lock_guard lock(mu_);
    status_due_ = true;
  }
  return Status::Ok();
}

void QuotaService::AwaitQuotaRevision(int64_t revision) {
  if (!quotas_->WaitForRevision(revision, std::chrono::seconds(5))) {
    Log()->warn(
        "a ResourceQuota written at revision {} was not seen within 5 s; it is enforced "
        "once it is",
        revision);
  }
}

void QuotaService::Release(std::string_view ns, std::string_view name) {
  if (!LimitsFor(ns).any()) return;
  ReleaseLock(std::string(ns), Lock(ns, name));
}

void QuotaService::ReleaseLock(const std::string& ns, const std::string& lock) {
  bool released = CallLedger([&] { return ledger_->Release(ns, lock); }, ns);
  std::lock_guard guard(mu_);
  if (!released) {
    // Put right by the next reconcile, which the store alone could not tell to drop it yet.
    unreleased_[ns].insert(lock);
    reconcile_due_ = true;
    return;
  }
  status_due_ = true;
}

void QuotaService::OnSandboxChange(const controller::Informer::Change& change) {
  const api::Object& o = *change.object;
  bool ended = change.type == store::EventType::kDeleted ||
               (change.type == store::EventType::kModified && !Live(o) &&
                (change.old == nullptr || Live(*change.old)));
  if (!ended) return;
  {
    std::lock_guard lock(mu_);
    releases_.emplace_back(o.metadata.namespace_, o.metadata.name);
  }
  wake_.notify_all();
}

void QuotaService::OnQuotaChange(const controller::Informer::Change&) {
  {
    std::lock_guard lock(mu_);
    reconcile_due_ = true;
    status_due_ = true;
  }
  wake_.notify_all();
}

Status QuotaService::ReconcileNow() {
  std::map<std::string, std::vector<Entry>> live;
  std::set<std::string> limited;
  for (const auto& q : quotas_->List()) limited.insert(q->metadata.namespace_);
  for (const auto& s : sandboxes_->List()) {
    if (!limited.contains(s->metadata.namespace_) || !Live(*s)) continue;
    Entry e{Lock(s->metadata.namespace_, s->metadata.name), FootprintOf(*s),
            s->metadata.creation_timestamp ? UnixMillis(*s->metadata.creation_timestamp) : 0};
    live[s->metadata.namespace_].push_back(std::move(e));
  }
  int64_t keep_since = UnixMillis(clock_.Now()) - options_.grace.count();
  std::map<std::string, std::set<std::string>> ended;
  {
    std::lock_guard lock(mu_);
    ended.swap(unreleased_);
  }
  Status result;
  for (const std::string& ns : limited) {
    Status s;
    if (!CallLedger([&] { return s = ledger_->Reconcile(ns, live[ns], keep_since, ended[ns]); },
                    ns)) {
      result = s.ok() ? UnavailableError("the quota ledger's circuit breaker is open") : s;
      std::lock_guard lock(mu_);
      unreleased_[ns].merge(ended[ns]);
    }
  }
  std::lock_guard lock(mu_);
  status_due_ = true;
  return result;
}

void QuotaService::WriteStatuses() {
  std::map<std::string, Usage> usage;
  for (const auto& q : quotas_->List()) {
    const std::string& ns = q->metadata.namespace_;
    if (!usage.contains(ns)) {
      Result<Usage> u = Usage{};
      if (!CallLedger([&] { return (u = ledger_->UsageOf(ns)).status(); }, ns)) return;
      usage[ns] = *u;
    }
    auto spec = api::DecodeSpec<api::ResourceQuotaSpec>(*q);
    if (!spec.ok()) continue;
    api::Json status = {{"hard", LimitsJson(LimitsOf({q.get()}))}, {"used", UsageJson(usage[ns])}};
    std::string key = Lock(ns, q->metadata.name) + "/" + q->metadata.uid;
    std::string text = api::DumpJson(status);
    if (written_status_[key] == text) continue;
    api::Object next = *q;
    next.status() = status;
    auto written = store_.UpdateStatus(std::move(next));
    if (written.ok()) {
      written_status_[key] = text;
    } else if (written.status().code() != StatusCode::kAborted &&
               written.status().code() != StatusCode::kNotFound) {
      Log()->warn("ResourceQuota status not written quota={} error={}", key,
                  written.status().ToString());
    }
  }
}

void QuotaService::Worker() {
  constexpr auto kReconcileRetry = std::chrono::milliseconds(250);
  auto next_reconcile = clock_.Monotonic() + options_.reconcile_interval;
  auto retry_reconcile_at = clock_.Monotonic();
  auto next_status = clock_.Monotonic();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, options_.status_interval, [&] {
      return stopping_ || !releases_.empty() ||
             (reconcile_due_ && clock_.Monotonic() >= retry_reconcile_at);
    });
    if (stopping_) break;
    auto releases = std::move(releases_);
    releases_.clear();
    bool reconcile = (reconcile_due_ && clock_.Monotonic() >= retry_reconcile_at) ||
                     clock_.Monotonic() >= next_reconcile;
    if (reconcile) reconcile_due_ = false;
    bool status = status_due_ && clock_.Monotonic() >= next_status;
    if (status) status_due_ = false;
    lock.unlock();
    for (const auto& [ns, name] : releases) {
      if (LimitsFor(ns).any()) ReleaseLock(ns, Lock(ns, name));
    }
    if (reconcile) {
      next_reconcile = clock_.Monotonic() + options_.reconcile_interval;
      if (Status s = ReconcileNow(); !s.ok()) {
        // Tried again soon (not in a loop: the breaker may stay open for a while).
        retry_reconcile_at = clock_.Monotonic() + kReconcileRetry;
        std::lock_guard guard(mu_);
        reconcile_due_ = true;
        if (breaker_.state() == CircuitBreaker::State::kClosed) {
          Log()->warn("quota reconcile failed ledger={} error={}", ledger_->Describe(),
                      s.ToString());
        }
      }
    }
    if (status) {
      next_status = clock_.Monotonic() + options_.status_interval;
      WriteStatuses();
    }
    lock.lock();
  }
}

}  // namespace warren::server::quota
