#include "controller/leader/leader_elector.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "base/log.h"
#include "base/time_format.h"

namespace warren::controller::leader {
namespace {

using std::chrono::milliseconds;

std::chrono::milliseconds DurationOf(const api::LeaseSpec& spec, milliseconds fallback) {
  if (spec.lease_duration_seconds && *spec.lease_duration_seconds > 0) {
    return std::chrono::seconds(*spec.lease_duration_seconds);
  }
  return fallback;
}

// Kubernetes' MicroTime: RFC 3339 with 6 fractional digits.
std::string MicroTime(base::WallTime t) {
  std::string nanos = base::FormatRfc3339Nanos(t);  // "…:05.123456789Z"
  return nanos.substr(0, nanos.size() - 4) + "Z";
}

// Whole seconds on the wire (leaseDurationSeconds), at least one.
int32_t WholeSeconds(milliseconds d) {
  return static_cast<int32_t>(std::max<int64_t>(1, (d.count() + 999) / 1000));
}

}  // namespace

std::string ReplicaLeaseName(std::string_view replica) {
  std::string out = kReplicaLeasePrefix;
  for (char c : replica) {
    char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '.' || l == '-';
    out.push_back(ok ? l : '-');
  }
  while (!out.empty() && (out.back() == '-' || out.back() == '.')) out.pop_back();
  return out;
}

LeaderElector::LeaderElector(store::Store& store, LeaderElectorOptions options, base::Clock& clock)
    : store_(store),
      options_(std::move(options)),
      renew_deadline_(options_.renew_deadline.count() > 0 ? options_.renew_deadline
                                                          : options_.lease_duration * 2 / 3),
      retry_period_(options_.retry_period.count() > 0 ? options_.retry_period
                                                      : options_.lease_duration / 3),
      clock_(clock) {}

LeaderElector::~LeaderElector() { Stop(); }

bool LeaderElector::IsLeader() const {
  std::lock_guard lock(mu_);
  return leading_ && clock_.Monotonic() < last_renew_ + renew_deadline_;
}

LeaderElector::Outcome LeaderElector::TryOnce() {
  // Taken before the write: the record we write can only be seen after this instant, so a
  // deadline counted from here ends before anyone's view of it does.
  const base::MonoTime start = clock_.Monotonic();
  const std::string now = MicroTime(clock_.Now());
  auto got = store_.Get(api::LeaseKind(), options_.namespace_, options_.name);
  if (!got.ok() && got.status().code() != StatusCode::kNotFound) return Outcome::kFailed;
  api::LeaseSpec old;
  if (got.ok()) {
    auto decoded = api::DecodeSpec<api::LeaseSpec>(*got);
    if (decoded.ok()) old = std::move(decoded).value();
    std::lock_guard lock(mu_);
    if (!observed_ || observed_->metadata.resource_version != got->metadata.resource_version) {
      observed_ = *got;
      observed_at_ = start;
    }
    if (!old.holder_identity.empty() && old.holder_identity != options_.identity &&
        start < observed_at_ + DurationOf(old, options_.lease_duration)) {
      return Outcome::kHeldByOther;
    }
  }
  api::LeaseSpec next;
  next.holder_identity = options_.identity;
  next.lease_duration_seconds = WholeSeconds(options_.lease_duration);
  next.renew_time = now;
  if (got.ok() && old.holder_identity == options_.identity) {
    next.acquire_time = old.acquire_time.empty() ? now : old.acquire_time;
    next.lease_transitions = old.lease_transitions.value_or(0);
  } else {
    next.acquire_time = now;
    next.lease_transitions = got.ok() ? old.lease_transitions.value_or(0) + 1 : 0;
  }
  Result<api::Object> written = InternalError("unreachable");
  if (got.ok()) {
    api::Object lease = *got;  // its resourceVersion is the precondition
    api::EncodeSpec(next, lease);
    written = store_.Update(std::move(lease));
  } else {
    api::Object lease;
    lease.api_version = api::kCoordinationApiVersion;
    lease.kind = "Lease";
    lease.metadata.namespace_ = options_.namespace_;
    lease.metadata.name = options_.name;
    api::EncodeSpec(next, lease);
    written = store_.Create(std::move(lease));
  }
  if (!written.ok()) {
    if (written.status().code() != StatusCode::kAborted &&
        written.status().code() != StatusCode::kAlreadyExists) {
      base::Logger("controller")
          ->warn("lease write failed lease={}/{} identity={} error={}", options_.namespace_,
                 options_.name, options_.identity, written.status().ToString());
    }
    return Outcome::kFailed;
  }
  std::lock_guard lock(mu_);
  observed_ = std::move(written).value();
  observed_at_ = start;
  last_renew_ = start;
  return Outcome::kHeld;
}

bool LeaderElector::TryAcquireOrRenew() {
  switch (TryOnce()) {
    case Outcome::kHeld:
      BecomeLeader();
      return IsLeader();
    case Outcome::kHeldByOther:
      StopLeading("another replica holds the lease");
      return false;
    case Outcome::kFailed:
      CheckRenewDeadline();
      return false;
  }
  return false;
}

bool LeaderElector::CheckRenewDeadline() {
  {
    std::lock_guard lock(mu_);
    if (!leading_ || clock_.Monotonic() < last_renew_ + renew_deadline_) return false;
  }
  StopLeading("no renew succeeded within the renew deadline");
  return true;
}

void LeaderElector::BecomeLeader() {
  std::lock_guard callbacks(callback_mu_);
  {
    std::lock_guard lock(mu_);
    if (leading_ || stopping_) return;
    // A write that took longer than the deadline must not start anything: the watchdog may
    // already have counted it lost.
    if (clock_.Monotonic() >= last_renew_ + renew_deadline_) return;
    leading_ = true;
  }
  cv_.notify_all();
  base::Logger("controller")
      ->info("lease held, started leading lease={}/{} identity={}", options_.namespace_,
             options_.name, options_.identity);
  if (options_.on_started_leading) options_.on_started_leading();
}

void LeaderElector::StopLeading(std::string_view why) {
  std::lock_guard callbacks(callback_mu_);
  {
    std::lock_guard lock(mu_);
    if (!leading_) return;
    leading_ = false;
  }
  cv_.notify_all();
  base::Logger("controller")
      ->warn("lease given up, stopped leading lease={}/{} identity={} reason=\"{}\"",
             options_.namespace_, options_.name, options_.identity, why);
  if (options_.on_stopped_leading) options_.on_stopped_leading();
}

Status LeaderElector::Release() {
  api::Object lease;
  {
    std::lock_guard lock(mu_);
    if (!observed_) return Status::Ok();
    lease = *observed_;
  }
  auto spec = api::DecodeSpec<api::LeaseSpec>(lease);
  if (!spec.ok() || spec->holder_identity != options_.identity) return Status::Ok();
  // As client-go: no holder, a one-second duration, the transitions kept.
  spec->holder_identity.clear();
  spec->lease_duration_seconds = 1;
  spec->renew_time = MicroTime(clock_.Now());
  api::EncodeSpec(*spec, lease);
  auto written = store_.Update(std::move(lease));
  if (!written.ok()) return written.status();
  std::lock_guard lock(mu_);
  observed_ = std::move(written).value();
  return Status::Ok();
}

Status LeaderElector::Start() {
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  loop_ = std::thread([this] { Loop(); });
  watchdog_ = std::thread([this] { Watchdog(); });
  return Status::Ok();
}

void LeaderElector::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  if (watchdog_.joinable()) watchdog_.join();
  // The work stops first, then the lease goes: a successor never overlaps with us.
  bool held = false;
  {
    std::lock_guard lock(mu_);
    held = leading_;
  }
  StopLeading("shutting down");
  if (held) {
    Status released = Release();
    if (!released.ok()) {
      base::Logger("controller")
          ->warn("lease not released lease={}/{} identity={} error={}", options_.namespace_,
                 options_.name, options_.identity, released.ToString());
    }
  }
}

void LeaderElector::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    TryAcquireOrRenew();
    lock.lock();
    cv_.wait_for(lock, retry_period_, [this] { return stopping_; });
  }
}

void LeaderElector::Watchdog() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    milliseconds wait = retry_period_;
    if (leading_) {
      auto left = std::chrono::duration_cast<milliseconds>(last_renew_ + renew_deadline_ -
                                                           clock_.Monotonic());
      if (left <= milliseconds(0)) {
        lock.unlock();
        CheckRenewDeadline();
        lock.lock();
        continue;
      }
      wait = std::min(wait, left + milliseconds(1));
    }
    cv_.wait_for(lock, wait);
  }
}

}  // namespace warren::controller::leader
