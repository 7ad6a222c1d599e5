#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::net {

// Connects a TCP socket to `host` (an IPv4 or IPv6 literal, or a name getaddrinfo resolves,
// e.g. "localhost") on `port` within `timeout`, trying each address in turn. The socket is
// blocking, close-on-exec, with TCP_NODELAY. Errors: InvalidArgument for an unresolvable
// host, Unavailable when nothing accepts, DeadlineExceeded when the time runs out.
Result<base::UniqueFd> DialTcp(std::string_view host, uint16_t port,
                               std::chrono::milliseconds timeout);

struct HostPort {
  std::string host;  // without brackets: "::1"
  uint16_t port = 0;
  // As a Host header / authority: "127.0.0.1:8080", "[::1]:8080".
  std::string authority() const;
};

// Parses "host:port", "[v6]:port", "http://host:port" (a trailing "/" is allowed; the port
// defaults to 80 when absent). https and paths are rejected with InvalidArgument.
Result<HostPort> ParseHostPort(std::string_view address);

}  // namespace warren::net
