#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "os/rtnetlink.h"
#include "sbnet/address_pool.h"
#include "sbnet/domain_proxy.h"
#include "sbnet/egress_policy.h"
#include "sbnet/nft_rules.h"
#include "sbnet/nftables.h"

namespace warren::sbnet {

struct NetworkOptions {
  os::Ipv4Prefix range;                // sandboxes' addresses; see AddressPool
  std::vector<os::Ipv4> resolvers;     // nameservers written into every sandbox
  std::vector<os::Ipv4Prefix> opened;  // blocked ranges sandboxes may reach nonetheless
  std::string resolv_conf_path;        // written by Create; the node binds it read-only
};

// The flags `warren server` and `warren node` take (`--sandbox-network`, `--sandbox-dns`,
// `--sandbox-open`): none for "none" or an empty range (loopback only), else the range, its
// comma-separated resolvers and opened CIDRs. Errors name the flag.
Result<std::optional<NetworkOptions>> ParseNetworkFlags(std::string_view range,
                                                        std::string_view dns,
                                                        std::string_view open);

// A sandbox's link out: its address, and the host side's name ("wv" + hex).
struct Attachment {
  os::Ipv4 address;
  std::string host_link;
};

// Egress for sandboxes. Each sandbox's network namespace gets `eth0` with one address of the
// range (a /32), a default route through the gateway address that the host side of its veth
// carries, and the node's resolvers; the host routes the address back to that veth, forwards
// and masquerades what leaves, under the range's nftables table (nft_rules.h). The namespace's
// end takes the veth and the host route with it; Detach removes the rest (policy chain,
// conntrack entries, the address). Thread-safe.
class SandboxNetwork {
 public:
  // Turns IPv4 forwarding on (logged when it was off) and writes the resolv.conf. The table is
  // put in place by Install, after adoption. FailedPrecondition when forwarding cannot be set.
  static Result<std::unique_ptr<SandboxNetwork>> Create(NetworkOptions options);
  // Replaces the range's table with a fresh one holding the policies of the sandboxes adopted
  // so far, in one transaction. Attach needs it done; FailedPrecondition when nftables refuses.
  Status Install();
  // Leaves the table: sandboxes outlive the server, and the next one adopts them.
  ~SandboxNetwork() = default;

  // Links the namespace `netns_fd` (an nsfs fd or pidfd of a process in it) with its policy in
  // force before Attach returns. Undone on failure. `prefer`: the address it had before (a
  // restart, reset or in-place update of the same sandbox), taken again when it is still free.
  Result<Attachment> Attach(std::string_view sandbox_id, int netns_fd, const EgressPolicy& policy,
                            std::optional<os::Ipv4> prefer = std::nullopt);
  // Replaces the sandbox's policy, effective for the next packet (and the next connection the
  // domain proxy judges). FailedPrecondition for domain rules when the proxy could not start.
  Status SetPolicy(os::Ipv4 address, const EgressPolicy& policy);
  // Forgets a sandbox: its policy chain and conntrack entries removed, its address released, and
  // its link deleted unless `namespace_gone` (every process of the namespace has ended, and the
  // kernel removes the link with it).
  void Detach(const Attachment& attachment, bool namespace_gone = true);
  // A sandbox that outlived a restart: its address marked in use and its policy put back (with
  // the table, when Install has not run yet).
  Status Adopt(const Attachment& attachment, const EgressPolicy& policy);
  // Deletes the range's table (a node stopping for good, tests).
  Status RemoveTable();

  const NetworkOptions& options() const { return options_; }
  // The proxy judging domain rules; null when it could not start (then no policy has domains).
  const DomainProxy* domain_proxy() const { return proxy_.get(); }
  os::Ipv4 gateway() const { return pool_.gateway(); }
  size_t attached() const { return pool_.in_use(); }

 private:
  SandboxNetwork(NetworkOptions options, AddressPool pool, std::unique_ptr<Nftables> nft);
  Result<Attachment> Link(int netns_fd, os::Ipv4 address);
  // The domain proxy's verdict on a connection from `source` to `destination` naming `host`.
  bool DecideProxied(os::Ipv4 source, os::Ipv4 destination, std::string_view host);

  NetworkOptions options_;
  RulesetConfig rules_;
  AddressPool pool_;
  std::unique_ptr<Nftables> nft_;
  std::string no_proxy_reason_;  // why proxy_ is null
  std::mutex mu_;
  // The policies with domains, by address (network order), for the proxy; its own lock, taken
  // after mu_ when both are.
  std::mutex proxied_mu_;
  std::map<uint32_t, EgressPolicy> proxied_;  // guarded by proxied_mu_
  std::set<uint32_t> with_chain_;  // guarded by mu_: addresses (network order) with a policy chain
  std::map<uint32_t, EgressPolicy> adopted_;  // guarded by mu_: policies waiting for Install
  bool installed_ = false;                    // guarded by mu_
  uint32_t generation_ = 0;  // guarded by mu_: makes link names unique while old ones go
  // Last: its thread calls DecideProxied until it is destroyed.
  std::unique_ptr<DomainProxy> proxy_;
};

}  // namespace warren::sbnet
