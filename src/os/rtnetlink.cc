#include "os/rtnetlink.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "os/netlink_message.h"
#include "os/netns.h"

namespace warren::os {
namespace {

void FillIfinfo(NetlinkMessage& m) {
  auto* ifi = m.Fixed<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
}

}  // namespace

Result<RouteNetlink> RouteNetlink::Open() {
  base::UniqueFd fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd) return ErrnoError("netlink socket", errno);
  return RouteNetlink(std::move(fd));
}

Result<RouteNetlink> RouteNetlink::OpenInNetns(int ns_fd) {
  ASSIGN_OR_RETURN(base::UniqueFd fd, SocketInNetns(ns_fd, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  return RouteNetlink(std::move(fd));
}

Status RouteNetlink::CreateVethPair(std::string_view name, std::string_view peer, int peer_ns_fd) {
  NetlinkMessage m(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  FillIfinfo(m);
  m.Attr(IFLA_IFNAME, name);
  size_t info = m.Begin(IFLA_LINKINFO);
  m.Attr(IFLA_INFO_KIND, "veth");
  size_t data = m.Begin(IFLA_INFO_DATA);
  size_t peer_info = m.Begin(VETH_INFO_PEER);
  FillIfinfo(m);
  m.Attr(IFLA_IFNAME, peer);
  m.AttrValue<uint32_t>(IFLA_NET_NS_FD, static_cast<uint32_t>(peer_ns_fd));
  m.End(peer_info);
  m.End(data);
  m.End(info);
  return NetlinkTransact(fd_.get(), m, ++seq_, fmt::format("create veth {} (peer {})", name, peer));
}

Result<RouteNetlink::LinkState> RouteNetlink::GetLink(std::string_view name) {
  // The kernel looks a link up by IFLA_IFNAME when no index is given, and answers with it.
  NetlinkMessage m(RTM_GETLINK, 0);
  FillIfinfo(m);
  m.Attr(IFLA_IFNAME, name);
  m.AttrValue<uint32_t>(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  std::optional<LinkState> found;
  Status st = NetlinkTransact(
      fd_.get(), m, ++seq_, fmt::format("look up link {}", name), [&](const nlmsghdr* h) {
        if (h->nlmsg_type != RTM_NEWLINK) return;
        const auto* ifi = static_cast<const ifinfomsg*>(NLMSG_DATA(h));
        LinkState state{ifi->ifi_index, IF_OPER_UNKNOWN};
        int len = static_cast<int>(IFLA_PAYLOAD(h));
        for (auto* a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
          if (a->rta_type == IFLA_OPERSTATE) {
            state.operstate = *static_cast<const uint8_t*>(RTA_DATA(a));
          }
        }
        found = state;
      });
  RETURN_IF_ERROR(st);  // ENODEV for a name it does not know: NotFound
  if (!found) return NotFoundError(fmt::format("netlink: no link {}", name));
  return *found;
}

Result<int> RouteNetlink::LinkIndex(std::string_view name) {
  ASSIGN_OR_RETURN(LinkState state, GetLink(name));
  return state.index;
}

Status RouteNetlink::WaitOperationallyUp(std::string_view name, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    ASSIGN_OR_RETURN(LinkState state, GetLink(name));
    if (state.operstate == IF_OPER_UP) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceededError(fmt::format("link {} not up within {} ms (operstate {})", name,
                                               timeout.count(), state.operstate));
    }
    usleep(100);
  }
}

Status RouteNetlink::SetLinkUp(int index) {
  NetlinkMessage m(RTM_NEWLINK, 0);
  auto* ifi = m.Fixed<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = index;
  ifi->ifi_flags = IFF_UP;
  ifi->ifi_change = IFF_UP;
  return NetlinkTransact(fd_.get(), m, ++seq_, fmt::format("set link {} up", index));
}

Status RouteNetlink::DeleteLink(std::string_view name) {
  NetlinkMessage m(RTM_DELLINK, 0);
  FillIfinfo(m);
  m.Attr(IFLA_IFNAME, name);
  // ENODEV (NotFound) for a name the kernel does not know.
  return NetlinkTransact(fd_.get(), m, ++seq_, fmt::format("delete link {}", name));
}

Status RouteNetlink::AddAddress(int index, Ipv4Prefix address) {
  NetlinkMessage m(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
  auto* ifa = m.Fixed<ifaddrmsg>();
  ifa->ifa_family = AF_INET;
  ifa->ifa_prefixlen = static_cast<uint8_t>(address.length);
  ifa->ifa_scope = RT_SCOPE_UNIVERSE;
  ifa->ifa_index = static_cast<uint32_t>(index);
  m.AttrValue<uint32_t>(IFA_LOCAL, address.addr.be);
  m.AttrValue<uint32_t>(IFA_ADDRESS, address.addr.be);
  return NetlinkTransact(
      fd_.get(), m, ++seq_,
      fmt::format("add address {} to link {}", FormatIpv4Prefix(address), index));
}

Result<std::optional<Ipv4>> RouteNetlink::LinkAddress(std::string_view name) {
  ASSIGN_OR_RETURN(int index, LinkIndex(name));
  NetlinkMessage m(RTM_GETADDR, NLM_F_DUMP);
  auto* ifa = m.Fixed<ifaddrmsg>();
  ifa->ifa_family = AF_INET;
  std::optional<Ipv4> found;
  RETURN_IF_ERROR(NetlinkTransact(
      fd_.get(), m, ++seq_, fmt::format("addresses of {}", name), [&](const nlmsghdr* h) {
        if (h->nlmsg_type != RTM_NEWADDR || found) return;
        const auto* a = static_cast<const ifaddrmsg*>(NLMSG_DATA(h));
        if (static_cast<int>(a->ifa_index) != index || a->ifa_family != AF_INET) return;
        int len = static_cast<int>(IFA_PAYLOAD(h));
        for (auto* r = IFA_RTA(a); RTA_OK(r, len); r = RTA_NEXT(r, len)) {
          if (r->rta_type == IFA_LOCAL && RTA_PAYLOAD(r) == 4) {
            found = Ipv4{*static_cast<const uint32_t*>(RTA_DATA(r))};
          }
        }
      }));
  return found;
}

Status RouteNetlink::AddRoute(Ipv4Prefix dst, int index, std::optional<Ipv4> gateway,
                              bool replace) {
  NetlinkMessage m(RTM_NEWROUTE, NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL));
  auto* rt = m.Fixed<rtmsg>();
  rt->rtm_family = AF_INET;
  rt->rtm_dst_len = static_cast<uint8_t>(dst.length);
  rt->rtm_table = RT_TABLE_MAIN;
  rt->rtm_protocol = RTPROT_STATIC;
  rt->rtm_scope = gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
  rt->rtm_type = RTN_UNICAST;
  if (dst.length > 0) m.AttrValue<uint32_t>(RTA_DST, NetworkOf(dst).be);
  m.AttrValue<uint32_t>(RTA_OIF, static_cast<uint32_t>(index));
  if (gateway) m.AttrValue<uint32_t>(RTA_GATEWAY, gateway->be);
  return NetlinkTransact(fd_.get(), m, ++seq_,
                         fmt::format("add route {} dev {}{}", FormatIpv4Prefix(dst), index,
                                     gateway ? " via " + FormatIpv4(*gateway) : ""));
}

Result<Ipv4> ParseIpv4(std::string_view text) {
  std::string s(text);
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) {
    return InvalidArgumentError(fmt::format("\"{}\" is not an IPv4 address", text));
  }
  return Ipv4{a.s_addr};
}

Result<Ipv4Prefix> ParseIpv4Prefix(std::string_view text) {
  size_t slash = text.find('/');
  ASSIGN_OR_RETURN(Ipv4 addr, ParseIpv4(text.substr(0, slash)));
  Ipv4Prefix p{addr, 32};
  if (slash != std::string_view::npos) {
    std::string_view len = text.substr(slash + 1);
    int n = 0;
    bool ok = !len.empty() && len.size() <= 2;
    for (char c : len) {
      ok = ok && c >= '0' && c <= '9';
      n = n * 10 + (c - '0');
    }
    if (!ok || n > 32) {
      return InvalidArgumentError(
          fmt::format("\"{}\": the prefix length must be a number from 0 to 32", text));
    }
    p.length = n;
  }
  return p;
}

std::string FormatIpv4(Ipv4 addr) {
  char buf[INET_ADDRSTRLEN];
  in_addr a{addr.be};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

std::string FormatIpv4Prefix(Ipv4Prefix prefix) {
  return fmt::format("{}/{}", FormatIpv4(prefix.addr), prefix.length);
}

Ipv4 NetworkOf(Ipv4Prefix prefix) {
  uint32_t mask = prefix.length == 0 ? 0 : ~uint32_t{0} << (32 - prefix.length);
  return Ipv4{htonl(ntohl(prefix.addr.be) & mask)};
}

bool PrefixContains(Ipv4Prefix prefix, Ipv4 addr) {
  return NetworkOf(prefix) == NetworkOf(Ipv4Prefix{addr, prefix.length});
}

}  // namespace warren::os
