#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "os/rtnetlink.h"

namespace warren::sbnet {

// Where a sandbox may open connections, as E2B states it: `allowInternetAccess: false` is a
// `denyOut` of 0.0.0.0/0, and an `allowOut` entry wins over a `denyOut` one. An allowOut domain
// (`example.com`, or `*.example.com` for its subdomains) is matched on the TLS server name of
// port 443 and the HTTP Host of port 80, as E2B does; the node's resolvers are then always
// reachable. Whatever this says, the host, other sandboxes and private, link-local and metadata
// ranges stay closed unless the operator opened them (NetworkOptions::opened). Value type.
struct EgressPolicy {
  bool allow_internet = true;
  std::vector<os::Ipv4Prefix> allow_out;
  std::vector<std::string> allow_domains;  // lower case, no trailing dot
  std::vector<os::Ipv4Prefix> deny_out;

  // No rule of its own: every destination the node allows.
  bool IsDefault() const {
    return allow_internet && allow_out.empty() && allow_domains.empty() && deny_out.empty();
  }
  // Whether its connections to ports 80 and 443 go through the node's name-checking proxy.
  bool HasDomains() const { return !allow_domains.empty(); }
  // The verdict on a connection to `destination` whose TLS server name or HTTP Host is `host`
  // (empty when it named none), by this policy alone.
  bool Allows(os::Ipv4 destination, std::string_view host) const;
};

// Two policies that hold for one sandbox at once (E2B's network fields and its TrafficPolicies),
// as one: everything either allows is allowed, everything either denies is denied unless
// allowed (allow wins, as within one policy), and no internet unless both allow it.
EgressPolicy MergeEgressPolicies(const EgressPolicy& a, const EgressPolicy& b);

// Whether `host` is `pattern`, or under it when the pattern is `*.<domain>`. Both lower case.
bool DomainMatches(std::string_view pattern, std::string_view host);

// From the E2B fields. Each entry is an IPv4 address or CIDR, or in allowOut a domain name
// (denyOut takes addresses only, as E2B's does); IPv6 is refused (sandboxes have none), naming
// the entry. At most 256 entries per list.
Result<EgressPolicy> MakeEgressPolicy(bool allow_internet,
                                      const std::vector<std::string>& allow_out,
                                      const std::vector<std::string>& deny_out);

// The policy as the node keeps it on a Sandbox object (and back): {"allowInternetAccess",
// "allowOut", "denyOut"} with the E2B spellings. Decoding validates as MakeEgressPolicy does.
nlohmann::json EgressPolicyToJson(const EgressPolicy& policy);
Result<EgressPolicy> EgressPolicyFromJson(const nlohmann::json& j);

}  // namespace warren::sbnet
