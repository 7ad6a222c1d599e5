#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::os {

// An IPv4 address in network byte order, and a prefix of it.
struct Ipv4 {
  uint32_t be = 0;
  bool operator==(const Ipv4&) const = default;
};
struct Ipv4Prefix {
  Ipv4 addr;
  int length = 32;
  bool operator==(const Ipv4Prefix&) const = default;
};

// A NETLINK_ROUTE socket: links, addresses and routes of the network namespace the socket was
// made in (OpenInNetns makes it in another one; every request then applies there, from any
// thread). Each call is one request acknowledged by the kernel; errors name the object and
// carry the kernel's errno (AlreadyExists for EEXIST, NotFound for ENODEV/ESRCH/ENOENT).
// Not thread-safe: one socket per thread at a time.
class RouteNetlink {
 public:
  static Result<RouteNetlink> Open();
  static Result<RouteNetlink> OpenInNetns(int ns_fd);

  // A veth pair: `name` in this namespace, `peer` created directly in the namespace `peer_ns_fd`
  // (an nsfs fd or a pidfd). Both down.
  Status CreateVethPair(std::string_view name, std::string_view peer, int peer_ns_fd);
  // NotFound when there is no link of that name.
  Result<int> LinkIndex(std::string_view name);
  // Waits until the kernel reports the link operationally up: until then (the link watcher
  // runs after the carrier comes), its queue drops what is sent.
  Status WaitOperationallyUp(std::string_view name, std::chrono::milliseconds timeout);
  Status SetLinkUp(int index);
  Status DeleteLink(std::string_view name);
  Status AddAddress(int index, Ipv4Prefix address);
  // The first IPv4 address on link `name`; nullopt when it has none. NotFound without the link.
  Result<std::optional<Ipv4>> LinkAddress(std::string_view name);
  // A route to `dst` out of `index`: through `gateway` when given, else on the link. With
  // `replace`, one to the same destination is replaced instead of refused.
  Status AddRoute(Ipv4Prefix dst, int index, std::optional<Ipv4> gateway = std::nullopt,
                  bool replace = false);

 private:
  struct LinkState {
    int index = 0;
    int operstate = 0;  // IF_OPER_*
  };
  Result<LinkState> GetLink(std::string_view name);
  explicit RouteNetlink(base::UniqueFd fd) : fd_(std::move(fd)) {}

  base::UniqueFd fd_;
  uint32_t seq_ = 0;
};

// Parses "a.b.c.d" / "a.b.c.d/n"; InvalidArgument naming the text otherwise. A bare address is
// a /32.
Result<Ipv4> ParseIpv4(std::string_view text);
Result<Ipv4Prefix> ParseIpv4Prefix(std::string_view text);
std::string FormatIpv4(Ipv4 addr);
std::string FormatIpv4Prefix(Ipv4Prefix prefix);
// The prefix's first address (host bits cleared) and whether `addr` lies in it.
Ipv4 NetworkOf(Ipv4Prefix prefix);
bool PrefixContains(Ipv4Prefix prefix, Ipv4 addr);

}  // namespace warren::os
