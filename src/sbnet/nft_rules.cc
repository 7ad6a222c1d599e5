#include "sbnet/nft_rules.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>

namespace warren::sbnet {
namespace {

// The conntrack mark of connections a domain proxy's redirect took ("warr").
constexpr const char* kProxiedMark = "0x77617272";

std::string Join(const std::vector<os::Ipv4Prefix>& v) {
  std::string out;
  for (const auto& p : v) {
    if (!out.empty()) out += ", ";
    out += p.length == 32 ? os::FormatIpv4(p.addr) : os::FormatIpv4Prefix(p);
  }
  return out;
}

std::string ChainName(os::Ipv4 addr) { return fmt::format("sandbox_{:08x}", ntohl(addr.be)); }

}  // namespace

std::string TableName(os::Ipv4Prefix range) {
  uint32_t a = ntohl(os::NetworkOf(range).be);
  return fmt::format("warren_{}_{}_{}_{}_{}", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255,
                     range.length);
}

std::vector<os::Ipv4Prefix> BlockedRanges() {
  std::vector<os::Ipv4Prefix> out;
  for (const char* r : {"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
                        "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16",
                        "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/3"}) {
    out.push_back(*os::ParseIpv4Prefix(r));
  }
  return out;
}

std::string BaseRuleset(const RulesetConfig& c) {
  // Declaring the table first makes the delete valid when it does not exist yet; the whole
  // buffer is one transaction, so no packet sees the table half made.
  std::string t = c.table;
  std::string range = os::FormatIpv4Prefix(c.range);
  std::vector<os::Ipv4Prefix> resolvers;
  for (os::Ipv4 r : c.resolvers) resolvers.push_back({r, 32});
  std::string s;
  s += fmt::format("table inet {} {{}}\ndelete table inet {}\n", t, t);
  s += fmt::format("table inet {} {{\n", t);
  s += fmt::format("  set blocked {{ type ipv4_addr; flags interval; elements = {{ {} }} }}\n",
                   Join(BlockedRanges()));
  s += "  set opened { type ipv4_addr; flags interval; ";
  if (!c.opened.empty()) s += fmt::format("elements = {{ {} }} ", Join(c.opened));
  s += "}\n";
  s += "  set resolvers { type ipv4_addr; ";
  if (!resolvers.empty()) s += fmt::format("elements = {{ {} }} ", Join(resolvers));
  s += "}\n";
  s += "  map policies { type ipv4_addr : verdict; }\n";
  s += "  set proxied { type ipv4_addr; }\n";
  const bool proxy = c.http_proxy_port != 0 && c.tls_proxy_port != 0;
  // The one way in: a connection a domain proxy's redirect marked (this range's or another's:
  // every range's table has these rules, so one does not drop what another let in).
  s += fmt::format(
      "  chain input {{ type filter hook input priority filter; policy accept;\n"
      "    iifname \"wv*\" ct mark {0} ct status dnat accept\n"
      "    ip saddr {1} drop\n"
      "    iifname \"wv*\" drop\n"
      "  }}\n",
      kProxiedMark, range);
  // Nor does the host open connections to a sandbox's address (the gateway dials inside the
  // namespace, on its loopback); a domain proxy answers the connections redirected to it.
  s += fmt::format(
      "  chain output {{ type filter hook output priority filter; policy accept;\n"
      "    ct mark {0} ct direction reply accept\n"
      "    ip daddr {1} drop\n"
      "  }}\n",
      kProxiedMark, range);
  if (proxy) {
    s += fmt::format(
        "  chain prerouting {{ type nat hook prerouting priority dstnat; policy accept;\n"
        "    iifname \"wv*\" ip saddr @proxied tcp dport 80 ct mark set {0} redirect to :{1}\n"
        "    iifname \"wv*\" ip saddr @proxied tcp dport 443 ct mark set {0} redirect to :{2}\n"
        "  }}\n",
        kProxiedMark, c.http_proxy_port, c.tls_proxy_port);
  }
  // The node's resolvers answer DNS even from a blocked range (an operator's resolver on the
  // LAN), under the sandbox's own policy like any destination.
  s += "  chain from_sandbox {\n"
       "    oifname \"wv*\" drop\n"
       "    ip daddr @resolvers meta l4proto { tcp, udp } th dport 53 ip saddr vmap @policies\n"
       "    ip daddr @resolvers meta l4proto { tcp, udp } th dport 53 accept\n"
       "    ip daddr @blocked ip daddr != @opened drop\n"
       "    ip saddr vmap @policies\n"
       "    accept\n"
       "  }\n";
  // The first two apply to every sandbox link on the host (another range's too, which has the
  // same rules): IPv6, and a source address the link could not have (strict reverse path).
  s += fmt::format(
      "  chain forward {{ type filter hook forward priority filter; policy accept;\n"
      "    iifname \"wv*\" meta nfproto ipv6 drop\n"
      "    iifname \"wv*\" fib saddr . iif oif missing drop\n"
      "    ip saddr {} jump from_sandbox\n"
      "    oifname \"wv*\" ct state established,related accept\n"
      "    oifname \"wv*\" drop\n"
      "  }}\n",
      range);
  s += fmt::format(
      "  chain postrouting {{ type nat hook postrouting priority srcnat; policy accept;\n"
      "    ip saddr {} oifname != \"wv*\" masquerade\n"
      "  }}\n",
      range);
  s += "}\n";
  return s;
}

std::string PolicyCommands(const RulesetConfig& c, os::Ipv4 addr, const EgressPolicy& policy,
                           bool had_chain) {
  const std::string chain = ChainName(addr);
  const std::string ip = os::FormatIpv4(addr);
  std::string s;
  if (had_chain) s += RemovePolicyCommands(c, addr);
  if (policy.IsDefault()) return s;
  // allowOut is looked at first, so it wins over denyOut; anything neither names returns to
  // the forward chain, which accepts it.
  s += fmt::format("add chain inet {} {}\n", c.table, chain);
  if (policy.HasDomains()) {
    // Names must resolve for domain rules to mean anything (E2B allows its resolver too).
    s += fmt::format(
        "add rule inet {} {} ip daddr @resolvers meta l4proto {{ tcp, udp }} th dport 53 "
        "accept\n",
        c.table, chain);
    s += fmt::format("add element inet {} proxied {{ {} }}\n", c.table, ip);
  }
  if (!policy.allow_out.empty()) {
    s += fmt::format("add rule inet {} {} ip daddr {{ {} }} accept\n", c.table, chain,
                     Join(policy.allow_out));
  }
  std::vector<os::Ipv4Prefix> deny = policy.deny_out;
  if (!policy.allow_internet) deny = {os::Ipv4Prefix{os::Ipv4{0}, 0}};
  if (!deny.empty()) {
    s += fmt::format("add rule inet {} {} ip daddr {{ {} }} drop\n", c.table, chain, Join(deny));
  }
  s += fmt::format("add element inet {} policies {{ {} : jump {} }}\n", c.table, ip, chain);
  return s;
}

std::string RemovePolicyCommands(const RulesetConfig& c, os::Ipv4 addr) {
  const std::string chain = ChainName(addr);
  // `add` first makes both deletes valid whether or not they exist.
  return fmt::format(
      "add chain inet {0} {1}\n"
      "add element inet {0} policies {{ {2} : jump {1} }}\n"
      "add element inet {0} proxied {{ {2} }}\n"
      "delete element inet {0} policies {{ {2} }}\n"
      "delete element inet {0} proxied {{ {2} }}\n"
      "delete chain inet {0} {1}\n",
      c.table, chain, os::FormatIpv4(addr));
}

std::string DeleteTableCommand(const RulesetConfig& c) {
  return fmt::format("table inet {0} {{}}\ndelete table inet {0}\n", c.table);
}

}  // namespace warren::sbnet
