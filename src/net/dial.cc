#include "net/dial.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/strings.h"

namespace warren::net {

namespace {

using Clock = std::chrono::steady_clock;

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX));
}

// One connect attempt to one address.
Result<base::UniqueFd> ConnectOne(const addrinfo& ai, Clock::time_point deadline,
                                  const std::string& what) {
  base::UniqueFd fd(::socket(ai.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return ErrnoError("socket", errno);
  if (::connect(fd.get(), ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS)
      return UnavailableError(fmt::format("connect {}: {}", what, std::strerror(errno)));
    for (;;) {
      pollfd p{fd.get(), POLLOUT, 0};
      int ms = RemainingMs(deadline);
      int r = ::poll(&p, 1, ms);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return ErrnoError("poll", errno);
      if (r == 0) return DeadlineExceededError(fmt::format("connect {}: timed out", what));
      break;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      return UnavailableError(fmt::format("connect {}: {}", what, std::strerror(err)));
    }
  }
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int flags = ::fcntl(fd.get(), F_GETFL);
  ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

}  // namespace

std::string HostPort::authority() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Result<base::UniqueFd> DialTcp(std::string_view host, uint16_t port,
                               std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  std::string what = HostPort{std::string(host), port}.authority();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  std::string host_str(host);
  std::string port_str = std::to_string(port);
  int rc = ::getaddrinfo(host_str.c_str(), port_str.c_str(), &hints, &list);
  if (rc != 0) {
    return InvalidArgumentError(fmt::format("cannot resolve '{}': {}", host, gai_strerror(rc)));
  }
  Status last = UnavailableError(fmt::format("connect {}: no address", what));
  for (addrinfo* ai = list; ai; ai = ai->ai_next) {
    Result<base::UniqueFd> fd = ConnectOne(*ai, deadline, what);
    if (fd.ok()) {
      ::freeaddrinfo(list);
      return fd;
    }
    last = fd.status();
    if (last.code() == StatusCode::kDeadlineExceeded) break;
  }
  ::freeaddrinfo(list);
  return last;
}

Result<HostPort> ParseHostPort(std::string_view address) {
  std::string_view rest = address;
  if (rest.size() >= 8 && base::EqualsIgnoreCase(rest.substr(0, 8), "https://")) {
    return InvalidArgumentError(fmt::format("'{}': https is not supported", address));
  }
  if (rest.size() >= 7 && base::EqualsIgnoreCase(rest.substr(0, 7), "http://")) {
    rest.remove_prefix(7);
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty() || rest.find('/') != std::string_view::npos) {
    return InvalidArgumentError(fmt::format("'{}' is not host:port", address));
  }
  HostPort out;
  std::string_view port_part;
  if (rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError(fmt::format("'{}': unterminated IPv6 literal", address));
    }
    out.host = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':')
        return InvalidArgumentError(fmt::format("'{}' is not host:port", address));
      port_part = after.substr(1);
    }
  } else {
    size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos && rest.find(':') != colon) {
      return InvalidArgumentError(
          fmt::format("'{}': write IPv6 addresses in brackets, [::1]:port", address));
    }
    out.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port_part = rest.substr(colon + 1);
  }
  if (out.host.empty()) return InvalidArgumentError(fmt::format("'{}' has no host", address));
  out.port = 80;
  if (!port_part.empty() || rest.back() == ':') {
    auto port = base::ParseUint64(port_part);
    if (!port || *port == 0 || *port > 65535) {
      return InvalidArgumentError(fmt::format("'{}' has a bad port", address));
    }
    out.port = static_cast<uint16_t>(*port);
  }
  return out;
}

}  // namespace warren::net
