#include "net/testing/raw_client.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "net/message_parser.h"

namespace warren::net::testing {

Result<RawClient> RawClient::Connect(uint16_t port) { return ConnectFrom("", port); }

Result<RawClient> RawClient::ConnectFrom(const std::string& local_ip, uint16_t port) {
  base::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return ErrnoError("socket", errno);
  if (!local_ip.empty()) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    if (inet_pton(AF_INET, local_ip.c_str(), &local.sin_addr) != 1) {
      return InvalidArgumentError(fmt::format("bad IPv4 address \"{}\"", local_ip));
    }
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
      return ErrnoError(fmt::format("bind {}", local_ip), errno);
    }
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoError(fmt::format("connect 127.0.0.1:{}", port), errno);
  }
  return RawClient(std::move(fd));
}

Status RawClient::Send(std::string_view bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd_.get(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("send", errno);
    sent += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<size_t> RawClient::ReadSome(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return DeadlineExceededError("read timed out");
    pollfd p{fd_.get(), POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoError("poll", errno);
    if (r == 0) return DeadlineExceededError("read timed out");
    char buf[16384];
    ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("recv", errno);
    received_.append(buf, static_cast<size_t>(n));
    return static_cast<size_t>(n);
  }
}

Status RawClient::ReadUntil(std::string_view needle, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (received_.find(needle) == std::string::npos) {
    ASSIGN_OR_RETURN(size_t n, ReadSome(deadline));
    if (n == 0) {
      return UnavailableError(
          fmt::format("connection closed before '{}' (got '{}')", needle, received_));
    }
  }
  return Status::Ok();
}

Result<Response> RawClient::ReadResponse(std::chrono::milliseconds timeout, bool head_request) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  ResponseParser parser(1 << 20);
  parser.Reset(head_request);
  Response out;
  size_t offset = 0;
  for (;;) {
    if (offset < received_.size()) {
      ASSIGN_OR_RETURN(size_t n,
                       parser.Parse(std::string_view(received_).substr(offset), out.body));
      offset += n;
      if (parser.done()) break;
    }
    ASSIGN_OR_RETURN(size_t n, ReadSome(deadline));
    if (n == 0) {
      RETURN_IF_ERROR(parser.ParseEof());
      break;
    }
  }
  received_.erase(0, offset);
  out.status = parser.head().status;
  out.headers = parser.head().headers;
  return out;
}

bool RawClient::WaitClosed(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    Result<size_t> n = ReadSome(deadline);
    if (!n.ok()) return n.status().code() != StatusCode::kDeadlineExceeded;  // reset = closed
    if (*n == 0) return true;
  }
}

void RawClient::ShutdownWrite() { ::shutdown(fd_.get(), SHUT_WR); }

uint16_t RawClient::local_port() const {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

Result<RawListener> RawListener::Listen() {
  base::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return ErrnoError("socket", errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoError("bind", errno);
  }
  if (::listen(fd.get(), 64) != 0) return ErrnoError("listen", errno);
  socklen_t len = sizeof(addr);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return RawListener(std::move(fd), ntohs(addr.sin_port));
}

Result<RawClient> RawListener::Accept(std::chrono::milliseconds timeout) {
  pollfd p{fd_.get(), POLLIN, 0};
  int r = ::poll(&p, 1, static_cast<int>(timeout.count()));
  if (r < 0) return ErrnoError("poll", errno);
  if (r == 0) return DeadlineExceededError("no connection to accept");
  base::UniqueFd conn(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn) return ErrnoError("accept", errno);
  return RawClient(std::move(conn));
}

}  // namespace warren::net::testing
