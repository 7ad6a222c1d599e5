#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace warren::image {

// The registries a node may pull from, and so the only hosts a pull connects to: the
// registry a reference names, and every host a redirect leads to (registries redirect blob
// GETs to their storage), are checked against it before any connection. Empty allows none:
// a node pulls from nowhere until its operator lists registries. Value type; thread-safe to
// read.
//
// Entries: "host" (any port), "host:port" (that port only), "*.example.com" (any host below
// example.com, any port; not example.com itself). Hosts are names or IPv4 addresses, or IPv6 in
// brackets ("[::1]:5000"), compared without case. Nothing is resolved: "localhost" and
// "127.0.0.1" are different entries.
class RegistryAllowlist {
 public:
  RegistryAllowlist() = default;

  // A comma-separated list (spaces around entries are ignored; "" is the empty list).
  // InvalidArgument naming the first bad entry.
  static Result<RegistryAllowlist> Parse(std::string_view list);

  // Whether `registry` ("host" or "host:port", as an image reference names it; no port means
  // 80, as pulls speak plain HTTP) may be pulled from.
  bool AllowsRegistry(std::string_view registry) const;
  // Whether a URL's host and port (curl's parts: port always given) may be connected to.
  bool AllowsHost(std::string_view host, uint16_t port) const;

  bool empty() const { return entries_.empty(); }
  // The list as Parse reads it, for messages ("none" when empty).
  std::string ToString() const;

 private:
  struct Entry {
    std::string host;              // lowercase; for a wildcard, the suffix with its dot
    std::optional<uint16_t> port;  // nullopt: any
    bool wildcard = false;
  };
  std::vector<Entry> entries_;
};

}  // namespace warren::image
