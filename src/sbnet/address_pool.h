#pragma once

#include <cstdint>
#include <mutex>
#include <set>

#include "base/result.h"
#include "os/rtnetlink.h"

namespace warren::sbnet {

// Hands out the sandbox addresses of a node's range: every address but the network, the
// gateway (the first host address, which the host side of every link carries) and the
// broadcast. Round robin, so an address just released (whose conntrack entries or link may
// still be on their way out) is the last to come back. Thread-safe.
class AddressPool {
 public:
  // InvalidArgument when the range holds fewer than one sandbox address (/31, /32).
  static Result<AddressPool> Create(os::Ipv4Prefix range);
  AddressPool(AddressPool&& other) noexcept;

  os::Ipv4 gateway() const { return gateway_; }
  os::Ipv4Prefix range() const { return range_; }
  // ResourceExhausted naming the range when every address is in use.
  Result<os::Ipv4> Allocate();
  // Marks an address in use (a sandbox adopted after a restart); false when it is outside the
  // range or already taken.
  bool Reserve(os::Ipv4 addr);
  void Release(os::Ipv4 addr);
  size_t in_use() const;

 private:
  AddressPool(os::Ipv4Prefix range, uint32_t first, uint32_t last, os::Ipv4 gateway)
      : range_(range), first_(first), last_(last), next_(first), gateway_(gateway) {}

  os::Ipv4Prefix range_;
  uint32_t first_, last_;  // host order, inclusive
  mutable std::mutex mu_;
  uint32_t next_;            // guarded by mu_
  std::set<uint32_t> used_;  // guarded by mu_; host order
  os::Ipv4 gateway_;
};

}  // namespace warren::sbnet
