#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "base/result.h"
#include "os/rtnetlink.h"

namespace warren::sbnet {

struct DomainProxyStats {
  uint64_t allowed = 0;  // relayed to where the sandbox was going
  uint64_t denied = 0;   // closed without a byte sent on
  uint64_t open = 0;     // relays now
};

// Where sandboxes with domain rules reach ports 80 and 443: nftables redirects their
// connections here (nft_rules.h), this reads the TLS server name or HTTP Host from the first
// bytes (sniff.h), asks `decide` about the original destination (SO_ORIGINAL_DST) and that
// name, and then either relays to the original destination, first bytes included, or closes
// the connection with nothing sent on. The decision is taken per connection, so a policy
// replaced now applies to the next one. Thread-safe.
class DomainProxy {
 public:
  // (source, original destination, host or "") → relay?
  using Decide = std::function<bool(os::Ipv4, os::Ipv4, std::string_view)>;

  // Listens on `address` (the sandboxes' gateway, bound before any link carries it) on two
  // ephemeral ports: one for HTTP, one for TLS.
  static Result<std::unique_ptr<DomainProxy>> Start(os::Ipv4 address, Decide decide);
  virtual ~DomainProxy() = default;

  virtual uint16_t http_port() const = 0;
  virtual uint16_t tls_port() const = 0;
  virtual DomainProxyStats stats() const = 0;
  // Cuts every connection of `source` (a sandbox that is gone, or whose address is reused).
  virtual void CloseFrom(os::Ipv4 source) = 0;
};

}  // namespace warren::sbnet
