#pragma once

#include <string>
#include <vector>

#include "os/rtnetlink.h"
#include "sbnet/egress_policy.h"

namespace warren::sbnet {

// The node's nftables ruleset, as text for libnftables. Pure functions (unit-tested on their
// text); SandboxNetwork runs them.
//
// One table per sandbox range (two servers on one host with different ranges do not touch each
// other's), in the inet family:
// - input: nothing from a sandbox link reaches the host itself, on any address or port;
// - forward, from a sandbox: IPv6 dropped, a source address not routed back through the link it
//   came in on dropped (no spoofing another sandbox), another sandbox dropped, the blocked
//   ranges dropped unless opened, then the sandbox's own policy chain if it has one
//   (map `policies`), then accepted;
// - prerouting: TCP to ports 80 and 443 from a sandbox with domain rules (set `proxied`)
//   redirected to the node's domain proxy (domain_proxy.h), which input then admits;
// - forward, to a sandbox: only replies of connections it opened;
// - postrouting: masquerade what leaves for anywhere but a sandbox link.
struct RulesetConfig {
  std::string table;     // e.g. "warren_10_213_0_0_16"
  os::Ipv4Prefix range;  // the sandboxes' addresses
  std::vector<os::Ipv4> resolvers;
  std::vector<os::Ipv4Prefix> opened;  // blocked ranges the operator opened
  // The domain proxy's ports (HTTP, TLS); 0 = none, and no policy may hold domains.
  uint16_t http_proxy_port = 0;
  uint16_t tls_proxy_port = 0;
};

// The name of a range's table.
std::string TableName(os::Ipv4Prefix range);
// Link-local, private, shared, loopback, multicast, reserved and documentation ranges.
std::vector<os::Ipv4Prefix> BlockedRanges();
// Replaces the whole table (creating it when missing), atomically.
std::string BaseRuleset(const RulesetConfig& config);
// Installs or replaces the policy chain of the sandbox at `addr`. A default policy removes it.
std::string PolicyCommands(const RulesetConfig& config, os::Ipv4 addr, const EgressPolicy& policy,
                           bool had_chain);
// Removes the sandbox's chain and map element.
std::string RemovePolicyCommands(const RulesetConfig& config, os::Ipv4 addr);
std::string DeleteTableCommand(const RulesetConfig& config);

}  // namespace warren::sbnet
