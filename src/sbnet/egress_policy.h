#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "os/rtnetlink.h"

namespace warren::sbnet {

// Where a sandbox may open connections, as E2B states it: `allowInternetAccess: false` is a
// `denyOut` of 0.0.0.0/0, and an `allowOut` entry wins over a `denyOut` one. Whatever this says,
// the host, other sandboxes and private, link-local and metadata ranges stay closed unless the
// operator opened them (NetworkOptions::opened). Value type.
struct EgressPolicy {
  bool allow_internet = true;
  std::vector<os::Ipv4Prefix> allow_out;
  std::vector<os::Ipv4Prefix> deny_out;

  // No rule of its own: every destination the node allows.
  bool IsDefault() const { return allow_internet && allow_out.empty() && deny_out.empty(); }
};

// From the E2B fields. Each entry is an IPv4 address or CIDR; a domain name is refused (naming
// it) since this node filters by address only, as is IPv6 (sandboxes have none). At most 256
// entries per list.
Result<EgressPolicy> MakeEgressPolicy(bool allow_internet,
                                      const std::vector<std::string>& allow_out,
                                      const std::vector<std::string>& deny_out);

// The policy as the node keeps it on a Sandbox object (and back): {"allowInternetAccess",
// "allowOut", "denyOut"} with the E2B spellings. Decoding validates as MakeEgressPolicy does.
nlohmann::json EgressPolicyToJson(const EgressPolicy& policy);
Result<EgressPolicy> EgressPolicyFromJson(const nlohmann::json& j);

}  // namespace warren::sbnet
