#include "controller/quota_gate.h"

#include <utility>

namespace warren::controller {

Result<QuotaReservation> QuotaReservation::Take(QuotaGate* gate, const api::Object& sandbox) {
  if (gate != nullptr) RETURN_IF_ERROR(gate->Reserve(sandbox));
  return QuotaReservation(gate, sandbox.metadata.namespace_, sandbox.metadata.name);
}

QuotaReservation::QuotaReservation(QuotaReservation&& other) noexcept
    : gate_(std::exchange(other.gate_, nullptr)),
      ns_(std::move(other.ns_)),
      name_(std::move(other.name_)) {}

QuotaReservation::~QuotaReservation() {
  if (gate_ != nullptr) gate_->Release(ns_, name_);
}

}  // namespace warren::controller
