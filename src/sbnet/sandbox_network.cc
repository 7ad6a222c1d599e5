#include "sbnet/sandbox_network.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include "base/log.h"
#include "base/scope_guard.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "os/conntrack.h"

namespace warren::sbnet {
namespace {

auto Log() {
  static auto logger = base::Logger("net");
  return logger;
}

constexpr char kForwarding[] = "/proc/sys/net/ipv4/ip_forward";

Status EnableForwarding() {
  auto now = base::ReadSmallFile(kForwarding);
  if (now.ok() && now->starts_with("1")) return Status::Ok();
  if (Status st = base::WriteKernelFile(kForwarding, "1\n"); !st.ok()) {
    return FailedPreconditionError(fmt::format(
        "sandbox egress needs IPv4 forwarding: {} (or run warren server --sandbox-network none "
        "for loopback-only sandboxes)",
        st.message()));
  }
  Log()->warn("turned IPv4 forwarding on (net.ipv4.ip_forward=1) for sandbox egress");
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<SandboxNetwork>> SandboxNetwork::Create(NetworkOptions options) {
  ASSIGN_OR_RETURN(AddressPool pool, AddressPool::Create(options.range));
  options.range = pool.range();
  ASSIGN_OR_RETURN(auto nft, Nftables::Create());
  std::unique_ptr<SandboxNetwork> net(
      new SandboxNetwork(std::move(options), std::move(pool), std::move(nft)));
  RETURN_IF_ERROR(EnableForwarding());
  // Domain rules need it; a node without it still serves every address rule.
  auto proxy = DomainProxy::Start(net->gateway(),
                                  [n = net.get()](os::Ipv4 s, os::Ipv4 d, std::string_view host) {
                                    return n->DecideProxied(s, d, host);
                                  });
  if (proxy.ok()) {
    net->proxy_ = std::move(proxy).value();
    net->rules_.http_proxy_port = net->proxy_->http_port();
    net->rules_.tls_proxy_port = net->proxy_->tls_port();
  } else {
    net->no_proxy_reason_ = proxy.status().message();
    Log()->warn("egress domain rules off: {}", net->no_proxy_reason_);
  }
  if (!net->options_.resolv_conf_path.empty()) {
    std::string conf = "# written by warren: the node's resolvers\n";
    for (os::Ipv4 r : net->options_.resolvers) conf += "nameserver " + os::FormatIpv4(r) + "\n";
    RETURN_IF_ERROR(base::WriteFileAtomically(net->options_.resolv_conf_path, conf));
  }
  return net;
}

Status SandboxNetwork::Install() {
  std::lock_guard lock(mu_);
  // One transaction: the table the previous server left (with its sandboxes' chains) stays in
  // force until this one replaces it with the adopted sandboxes' chains already in, so no
  // sandbox is ever without its policy, and no chain of a sandbox that is gone survives.
  std::string commands = BaseRuleset(rules_);
  for (const auto& [address, policy] : adopted_) {
    commands += PolicyCommands(rules_, os::Ipv4{address}, policy, /*had_chain=*/false);
  }
  if (Status st = nft_->Run(commands); !st.ok()) {
    return FailedPreconditionError(
        fmt::format("sandbox egress: install the {} table: {} (or run warren server "
                    "--sandbox-network none for loopback-only sandboxes)",
                    rules_.table, st.message()));
  }
  adopted_.clear();
  installed_ = true;
  Log()->info("sandbox egress ready range={} gateway={} table={} adopted_policies={}",
              os::FormatIpv4Prefix(options_.range), os::FormatIpv4(gateway()), rules_.table,
              with_chain_.size());
  return Status::Ok();
}

SandboxNetwork::SandboxNetwork(NetworkOptions options, AddressPool pool,
                               std::unique_ptr<Nftables> nft)
    : options_(std::move(options)), pool_(std::move(pool)), nft_(std::move(nft)) {
  rules_.table = TableName(options_.range);
  rules_.range = options_.range;
  rules_.resolvers = options_.resolvers;
  rules_.opened = options_.opened;
}

Result<Attachment> SandboxNetwork::Link(int netns_fd, os::Ipv4 address) {
  ASSIGN_OR_RETURN(os::RouteNetlink host, os::RouteNetlink::Open());
  Attachment a{address, ""};
  // A name an earlier sandbox of this address used may still be on its way out with its
  // namespace: the generation tells them apart.
  Status made;
  for (int attempt = 0; attempt < 4; ++attempt) {
    uint32_t generation;
    {
      std::lock_guard lock(mu_);
      generation = generation_++;
    }
    a.host_link = fmt::format("wv{:08x}{:02x}", ntohl(address.be), generation & 0xff);
    made = host.CreateVethPair(a.host_link, "eth0", netns_fd);
    if (made.code() != StatusCode::kAlreadyExists) break;
  }
  RETURN_IF_ERROR(made);
  auto remove_link = base::ScopeExit([&] { host.DeleteLink(a.host_link).IgnoreError(); });
  ASSIGN_OR_RETURN(int host_index, host.LinkIndex(a.host_link));
  RETURN_IF_ERROR(host.AddAddress(host_index, {gateway(), 32}));
  RETURN_IF_ERROR(host.SetLinkUp(host_index));
  // Replacing: the link of an earlier holder of the address may still be on its way out with
  // its namespace, its route with it.
  RETURN_IF_ERROR(host.AddRoute({address, 32}, host_index, std::nullopt, /*replace=*/true));

  ASSIGN_OR_RETURN(os::RouteNetlink inside, os::RouteNetlink::OpenInNetns(netns_fd));
  ASSIGN_OR_RETURN(int index, inside.LinkIndex("eth0"));
  RETURN_IF_ERROR(inside.AddAddress(index, {address, 32}));
  RETURN_IF_ERROR(inside.SetLinkUp(index));
  RETURN_IF_ERROR(inside.AddRoute({gateway(), 32}, index));
  RETURN_IF_ERROR(inside.AddRoute({os::Ipv4{0}, 0}, index, gateway()));
  // Both ends: the first packet the sandbox sends must not meet a queue still being set up.
  RETURN_IF_ERROR(inside.WaitOperationallyUp("eth0", std::chrono::seconds(2)));
  RETURN_IF_ERROR(host.WaitOperationallyUp(a.host_link, std::chrono::seconds(2)));

  remove_link.Dismiss();
  return a;
}

Result<Attachment> SandboxNetwork::Attach(std::string_view sandbox_id, int netns_fd,
                                          const EgressPolicy& policy,
                                          std::optional<os::Ipv4> prefer) {
  {
    std::lock_guard lock(mu_);
    if (!installed_) {
      return FailedPreconditionError(
          fmt::format("sandbox {}: egress: the sandbox network is not installed yet", sandbox_id));
    }
  }
  os::Ipv4 address;
  if (prefer && pool_.Reserve(*prefer)) {
    address = *prefer;
  } else {
    ASSIGN_OR_RETURN(address, pool_.Allocate());
  }
  auto release = base::ScopeExit([&] { pool_.Release(address); });
  // The policy first: the sandbox may send as soon as its link is up.
  if (!policy.IsDefault()) RETURN_IF_ERROR(SetPolicy(address, policy));
  auto unpolicy = base::ScopeExit([&] {
    if (!policy.IsDefault()) SetPolicy(address, EgressPolicy{}).IgnoreError();
  });
  auto linked = Link(netns_fd, address);
  if (!linked.ok())
    return linked.status().WithPrefix(fmt::format("sandbox {}: egress", sandbox_id));
  unpolicy.Dismiss();
  release.Dismiss();
  return linked;
}

namespace {

// Whether `address` is one of this host's own (any interface). The proxy dials from the host,
// where nothing stops a connection to itself as the input chain stops a sandbox's.
bool IsHostAddress(os::Ipv4 address) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return true;  // cannot tell: refuse
  bool local = false;
  for (ifaddrs* a = list; a != nullptr && !local; a = a->ifa_next) {
    if (a->ifa_addr != nullptr && a->ifa_addr->sa_family == AF_INET) {
      local = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr == address.be;
    }
  }
  freeifaddrs(list);
  return local;
}

}  // namespace

bool SandboxNetwork::DecideProxied(os::Ipv4 source, os::Ipv4 destination, std::string_view host) {
  // What the forward and input chains hold for every sandbox holds here too: not the host, no
  // other sandbox, no blocked range unless opened.
  if (os::PrefixContains(options_.range, destination) || IsHostAddress(destination)) return false;
  bool opened = false;
  for (const auto& p : options_.opened) opened = opened || os::PrefixContains(p, destination);
  static const std::vector<os::Ipv4Prefix> blocked = BlockedRanges();
  if (!opened) {
    for (const auto& p : blocked) {
      if (os::PrefixContains(p, destination)) return false;
    }
  }
  std::lock_guard lock(proxied_mu_);  // not mu_: an nftables run must not stall every relay
  auto it = proxied_.find(source.be);
  return it != proxied_.end() && it->second.Allows(destination, host);
}

Status SandboxNetwork::SetPolicy(os::Ipv4 address, const EgressPolicy& policy) {
  if (policy.HasDomains() && proxy_ == nullptr) {
    return FailedPreconditionError(fmt::format(
        "network.allowOut: domain rules need the node's domain proxy, which could not start: {}",
        no_proxy_reason_));
  }
  std::lock_guard lock(mu_);
  // The proxy judges by this map: in step with the chain (a failed run below leaves the
  // sandbox's old chain, and the proxy its old policy).
  auto keep_for_proxy = [&] {
    std::lock_guard proxied_lock(proxied_mu_);
    bool had = proxied_.contains(address.be);
    if (policy.HasDomains()) {
      proxied_[address.be] = policy;
    } else {
      proxied_.erase(address.be);
    }
    // Relays it opened under the old policy go: effective at once, as for addresses (and with
    // no domains, its redirected flows would meet the input chain's drop and hang).
    if (had && proxy_) proxy_->CloseFrom(address);
  };
  if (!installed_) {
    // Adopted before Install: it goes in with the table.
    if (policy.IsDefault()) {
      adopted_.erase(address.be);
      with_chain_.erase(address.be);
    } else {
      adopted_[address.be] = policy;
      with_chain_.insert(address.be);
    }
    keep_for_proxy();
    return Status::Ok();
  }
  const bool had = with_chain_.contains(address.be);
  RETURN_IF_ERROR(nft_->Run(PolicyCommands(rules_, address, policy, had)));
  keep_for_proxy();
  if (policy.IsDefault()) {
    with_chain_.erase(address.be);
  } else {
    with_chain_.insert(address.be);
  }
  return Status::Ok();
}

void SandboxNetwork::Detach(const Attachment& a, bool namespace_gone) {
  // A veth goes with its namespace, in the kernel's own time; deleting it here would wait for
  // the same teardown (tens of milliseconds on the caller's thread).
  if (!namespace_gone) {
    if (auto host = os::RouteNetlink::Open(); host.ok()) {
      Status st = host->DeleteLink(a.host_link);
      if (!st.ok() && st.code() != StatusCode::kNotFound) {
        Log()->warn("delete link {}: {}", a.host_link, st.ToString());
      }
    }
  }
  bool had;
  {
    std::lock_guard lock(mu_);
    had = with_chain_.erase(a.address.be) > 0 && installed_;
    adopted_.erase(a.address.be);
  }
  {
    std::lock_guard proxied_lock(proxied_mu_);
    proxied_.erase(a.address.be);
  }
  if (proxy_) proxy_->CloseFrom(a.address);
  if (had) {
    if (Status st = nft_->Run(RemovePolicyCommands(rules_, a.address)); !st.ok()) {
      Log()->warn("remove the policy of {}: {}", os::FormatIpv4(a.address), st.ToString());
    }
  }
  // Forwarded connections leave conntrack entries (masqueraded) that would outlive the sandbox
  // by minutes and could match the next holder of the address.
  if (auto gone = os::DeleteConntrackFrom(a.address); !gone.ok()) {
    Log()->warn("flush conntrack of {}: {}", os::FormatIpv4(a.address), gone.status().ToString());
  }
  pool_.Release(a.address);
}

Status SandboxNetwork::Adopt(const Attachment& a, const EgressPolicy& policy) {
  if (!pool_.Reserve(a.address)) {
    return FailedPreconditionError(
        fmt::format("egress address {} of link {} is outside {} or taken twice",
                    os::FormatIpv4(a.address), a.host_link, os::FormatIpv4Prefix(options_.range)));
  }
  if (!policy.IsDefault()) return SetPolicy(a.address, policy);
  return Status::Ok();
}

Status SandboxNetwork::RemoveTable() { return nft_->Run(DeleteTableCommand(rules_)); }

Result<std::optional<NetworkOptions>> ParseNetworkFlags(std::string_view range,
                                                        std::string_view dns,
                                                        std::string_view open) {
  if (range == "none" || range.empty()) return std::optional<NetworkOptions>();
  NetworkOptions net;
  auto prefix = os::ParseIpv4Prefix(range);
  if (!prefix.ok()) return prefix.status().WithPrefix("--sandbox-network");
  net.range = *prefix;
  for (std::string_view r : base::Split(dns, ',')) {
    if (r.empty()) continue;
    auto ip = os::ParseIpv4(r);
    if (!ip.ok()) return ip.status().WithPrefix("--sandbox-dns");
    net.resolvers.push_back(*ip);
  }
  for (std::string_view c : base::Split(open, ',')) {
    if (c.empty()) continue;
    auto p = os::ParseIpv4Prefix(c);
    if (!p.ok()) return p.status().WithPrefix("--sandbox-open");
    net.opened.push_back(*p);
  }
  return std::optional<NetworkOptions>(std::move(net));
}

}  // namespace warren::sbnet
