#pragma once

#include <string>
#include <string_view>

#include "api/object.h"
#include "base/result.h"

namespace warren::controller {

// Admission of new sandboxes against their namespace's (their team's) ResourceQuota. Every path
// that makes a Sandbox object — the E2B create, a claim that has to create, a SandboxSet
// filling its pool, the resource API — reserves what the sandbox will hold before it writes the
// object, and keeps the reservation only if the write succeeded (QuotaReservation below). A
// claim of an existing pool member changes nothing: the member was counted when it was made,
// because it holds its CPU and memory from then on. What releases a kept reservation is the
// sandbox's end (deleted, or Failed/Succeeded), which the implementation watches for itself.
// The implementation lives in server/quota (embedded ledger or Redis). Thread-safe.
class QuotaGate {
 public:
  virtual ~QuotaGate() = default;

  // Reserves what `sandbox` (namespace and name set) will hold. ResourceExhausted, naming the
  // ResourceQuota and the limit, when it would go over one; OK otherwise — also when the quota
  // backend cannot be reached (fail-open: counted, and said in an Event).
  virtual Status Reserve(const api::Object& sandbox) = 0;
  // Gives back a reservation whose object was never written. Idempotent.
  virtual void Release(std::string_view namespace_, std::string_view name) = 0;
  // Waits (a bounded time) until a ResourceQuota written at store revision `revision` is what
  // Reserve enforces, so a quota is in force once its create or update has answered (the gate
  // reads quotas from a watch-fed cache, which may lag the write by a moment under load).
  virtual void AwaitQuotaRevision(int64_t revision) { (void)revision; }
};

// One reservation, given back when destroyed unless kept: a create that fails on any path after
// reserving cannot leak quota. Movable; not thread-safe.
class QuotaReservation {
 public:
  // Reserves through `gate` (null: no quota in this process, always OK).
  static Result<QuotaReservation> Take(QuotaGate* gate, const api::Object& sandbox);
  QuotaReservation(QuotaReservation&& other) noexcept;
  QuotaReservation& operator=(QuotaReservation&& other) = delete;
  QuotaReservation(const QuotaReservation&) = delete;
  ~QuotaReservation();

  // The object was written: the sandbox's end releases it from now on.
  void Keep() { gate_ = nullptr; }

 private:
  QuotaReservation(QuotaGate* gate, std::string ns, std::string name)
      : gate_(gate), ns_(std::move(ns)), name_(std::move(name)) {}
  QuotaGate* gate_;
  std::string ns_, name_;
};

}  // namespace warren::controller
