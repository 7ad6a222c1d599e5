#include "net/connection_limits.h"

namespace warren::net {

Admission ConnectionLimits::TryAdmit(std::string_view address) {
  std::lock_guard lock(mu_);
  if (max_connections_ > 0 && open_ >= max_connections_) return Admission::kListenerFull;
  auto it = per_address_.find(std::string(address));
  size_t from = it == per_address_.end() ? 0 : it->second;
  if (max_per_address_ > 0 && from >= max_per_address_) return Admission::kAddressFull;
  ++open_;
  if (it == per_address_.end()) {
    per_address_.emplace(address, 1);
  } else {
    ++it->second;
  }
  return Admission::kAdmitted;
}

void ConnectionLimits::Release(std::string_view address) {
  std::lock_guard lock(mu_);
  --open_;
  auto it = per_address_.find(std::string(address));
  if (it != per_address_.end() && --it->second == 0) per_address_.erase(it);
}

size_t ConnectionLimits::open() const {
  std::lock_guard lock(mu_);
  return open_;
}

size_t ConnectionLimits::open_from(std::string_view address) const {
  std::lock_guard lock(mu_);
  auto it = per_address_.find(std::string(address));
  return it == per_address_.end() ? 0 : it->second;
}

}  // namespace warren::net
