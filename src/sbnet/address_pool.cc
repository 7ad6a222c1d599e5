#include "sbnet/address_pool.h"

#include <arpa/inet.h>
#include <fmt/format.h>

namespace warren::sbnet {

Result<AddressPool> AddressPool::Create(os::Ipv4Prefix range) {
  if (range.length > 29) {
    return InvalidArgumentError(fmt::format(
        "sandbox range {}: too small, a /29 or larger is needed", os::FormatIpv4Prefix(range)));
  }
  range.addr = os::NetworkOf(range);
  const uint32_t network = ntohl(range.addr.be);
  const uint32_t broadcast = network | (range.length == 0 ? ~0u : ~(~0u << (32 - range.length)));
  return AddressPool(range, network + 2, broadcast - 1, os::Ipv4{htonl(network + 1)});
}

AddressPool::AddressPool(AddressPool&& other) noexcept
    : range_(other.range_),
      first_(other.first_),
      last_(other.last_),
      next_(other.next_),
      used_(std::move(other.used_)),
      gateway_(other.gateway_) {}

Result<os::Ipv4> AddressPool::Allocate() {
  std::lock_guard lock(mu_);
  const uint64_t size = uint64_t{last_} - first_ + 1;
  for (uint64_t i = 0; i < size; ++i) {
    uint32_t candidate = next_;
    next_ = next_ == last_ ? first_ : next_ + 1;
    if (used_.insert(candidate).second) return os::Ipv4{htonl(candidate)};
  }
  return ResourceExhaustedError(fmt::format("sandbox range {}: all {} addresses are in use",
                                            os::FormatIpv4Prefix(range_), size));
}

bool AddressPool::Reserve(os::Ipv4 addr) {
  const uint32_t a = ntohl(addr.be);
  if (a < first_ || a > last_) return false;
  std::lock_guard lock(mu_);
  return used_.insert(a).second;
}

void AddressPool::Release(os::Ipv4 addr) {
  std::lock_guard lock(mu_);
  used_.erase(ntohl(addr.be));
}

size_t AddressPool::in_use() const {
  std::lock_guard lock(mu_);
  return used_.size();
}

}  // namespace warren::sbnet
