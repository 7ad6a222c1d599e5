#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace warren::net {

// Whether a new connection may be served, and if not, which limit it hit.
enum class Admission {
  kAdmitted,
  kListenerFull,  // the listener has max_connections open
  kAddressFull,   // the client's address has max_per_address open
};

// The open connections of one listener, in all and per client address, against their limits.
// The acceptor asks TryAdmit before it serves a connection and the connection calls Release
// when it ends, from whichever loop thread it lived on. An address is the raw bytes of an IPv4
// address (an IPv4-mapped IPv6 one counts as IPv4) or of an IPv6 one. A limit of 0 means none.
// Thread-safe.
class ConnectionLimits {
 public:
  ConnectionLimits(size_t max_connections, size_t max_per_address)
      : max_connections_(max_connections), max_per_address_(max_per_address) {}

  Admission TryAdmit(std::string_view address);
  // Ends a connection TryAdmit admitted from `address`.
  void Release(std::string_view address);

  size_t open() const;
  size_t open_from(std::string_view address) const;
  size_t max_connections() const { return max_connections_; }
  size_t max_per_address() const { return max_per_address_; }

 private:
  const size_t max_connections_;
  const size_t max_per_address_;
  mutable std::mutex mu_;
  // Guarded by mu_:
  size_t open_ = 0;
  std::unordered_map<std::string, size_t> per_address_;  // addresses with a connection open
};

}  // namespace warren::net
