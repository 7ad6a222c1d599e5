#include "node/relay_client.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include "api/json.h"
#include "api/object_codec.h"
#include "base/strings.h"
#include "node/relay_wire.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A relay's answer head is a status line and a few fields; an error body is one JSON line.
constexpr size_t kMaxHead = 8 << 10;
constexpr size_t kMaxErrorBody = 16 << 10;

std::string SandboxPath(std::string_view id, std::string_view rest) {
  return fmt::format("/relay/v1/sandboxes/{}/{}", base::PercentEncode(id), rest);
}

Status WaitReadable(int fd, Clock::time_point deadline, std::string_view address) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left <= 0ms) {
      return DeadlineExceededError(fmt::format("node relay {} did not answer in time", address));
    }
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return Status::Ok();
    if (n < 0 && errno != EINTR) return ErrnoError("poll on the node relay", errno);
  }
}

// Reads the answer head without taking a byte past it: peek, find the blank line, take
// exactly that much.
Result<std::string> ReadHead(int fd, Clock::time_point deadline, std::string_view address) {
  std::string buf(kMaxHead, '\0');
  for (;;) {
    RETURN_IF_ERROR(WaitReadable(fd, deadline, address));
    ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_PEEK);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(fmt::format("reading node relay {}", address), errno);
    }
    if (n == 0) {
      return UnavailableError(fmt::format("node relay {} closed before answering", address));
    }
    std::string_view seen(buf.data(), static_cast<size_t>(n));
    if (auto end = seen.find("\r\n\r\n"); end != std::string_view::npos) {
      std::string head(end + 4, '\0');
      size_t got = 0;
      while (got < head.size()) {
        ssize_t r = ::recv(fd, head.data() + got, head.size() - got, 0);
        if (r == 0) {
          return UnavailableError(fmt::format("node relay {} closed mid-answer", address));
        }
        if (r < 0) return ErrnoError(fmt::format("reading node relay {}", address), errno);
        got += static_cast<size_t>(r);
      }
      return head;
    }
    if (static_cast<size_t>(n) == buf.size()) {
      return InvalidArgumentError(
          fmt::format("node relay {} sent an answer head over {} bytes", address, kMaxHead));
    }
    // Part of the head is in: wait for more (poll says readable while unread bytes sit there,
    // so sleep briefly instead of spinning on them).
    ::poll(nullptr, 0, 1);
  }
}

// The body of a refused dial, read up to its Content-Length (or what comes before the close).
std::string ReadErrorBody(int fd, std::string_view head, Clock::time_point deadline,
                          std::string_view address) {
  size_t want = kMaxErrorBody;
  std::string lower = base::AsciiLower(head);
  if (auto at = lower.find("\r\ncontent-length:"); at != std::string::npos) {
    auto value = base::ParseInt64(base::TrimSpace(
        std::string_view(lower).substr(at + 17, lower.find("\r\n", at + 2) - at - 17)));
    if (value && *value >= 0) want = std::min(want, static_cast<size_t>(*value));
  }
  std::string body;
  char chunk[4096];
  while (body.size() < want && WaitReadable(fd, deadline, address).ok()) {
    ssize_t r = ::recv(fd, chunk, std::min(sizeof(chunk), want - body.size()), 0);
    if (r <= 0) break;
    body.append(chunk, static_cast<size_t>(r));
  }
  return body;
}

// What a node said, as this server's caller should see it. The node's own answers about the
// sandbox (NotFound, FailedPrecondition, Unavailable, DeadlineExceeded...) pass unchanged; a
// refused credential or an answer we cannot read is this cluster's fault, not the caller's
// (their API key or request): Internal, naming the node.
Status NodeSide(Status s, std::string_view address) {
  switch (s.code()) {
    case StatusCode::kUnauthenticated:
    case StatusCode::kPermissionDenied:
      return InternalError(fmt::format(
          "node relay {} refused this server's credential ({}): do the server and the node "
          "share the cluster's seal.key (--key-dir)?",
          address, s.message()));
    case StatusCode::kInvalidArgument:
      return InternalError(fmt::format("node relay {}: {}", address, s.message()));
    default:
      return s;
  }
}

}  // namespace

Result<std::unique_ptr<RelayClient>> RelayClient::Create(std::string_view address,
                                                         std::string token) {
  ASSIGN_OR_RETURN(net::HostPort endpoint, net::ParseHostPort(address));
  ASSIGN_OR_RETURN(auto http, net::HttpClient::ForAddress(address));
  http->SetDefaultHeader("Authorization", "Bearer " + token);
  return std::make_unique<RelayClient>(std::string(address), std::move(endpoint), std::move(token),
                                       std::move(http));
}

Result<base::UniqueFd> RelayClient::Dial(std::string_view sandbox_id, uint16_t port,
                                         std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  auto fd = net::DialTcp(endpoint_.host, endpoint_.port, timeout);
  if (!fd.ok()) {
    return UnavailableError(
        fmt::format("node relay {} cannot be reached: {}", address_, fd.status().message()));
  }
  std::string request = fmt::format(
      "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: Upgrade\r\nUpgrade: {}\r\n"
      "Authorization: Bearer {}\r\n\r\n",
      SandboxPath(sandbox_id, fmt::format("ports/{}", port)), endpoint_.authority(), kRelayUpgrade,
      token_);
  for (size_t sent = 0; sent < request.size();) {
    ssize_t n = ::send(fd->get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return UnavailableError(fmt::format("node relay {}: {}", address_, std::strerror(errno)));
    }
    sent += static_cast<size_t>(n);
  }
  auto head_read = ReadHead(fd->get(), deadline, address_);
  if (!head_read.ok()) return NodeSide(head_read.status(), address_);
  const std::string& head = *head_read;
  // "HTTP/1.1 101 ..."
  int status = 0;
  if (head.size() > 12 && head.rfind("HTTP/1.", 0) == 0) {
    status = static_cast<int>(base::ParseInt64(std::string_view(head).substr(9, 3)).value_or(0));
  }
  if (status == 101) return std::move(*fd);
  if (status == 0) {
    return InternalError(fmt::format("node relay {} answered no HTTP status", address_));
  }
  if (status / 100 == 2) {
    return UnavailableError(
        fmt::format("{} answered {} to a relay dial: not a Warren node relay", address_, status));
  }
  return NodeSide(DecodeRelayError(status, ReadErrorBody(fd->get(), head, deadline, address_)),
                  address_);
}

Result<net::Response> RelayClient::Call(std::string method, std::string target, std::string body,
                                        std::chrono::milliseconds timeout) {
  net::ClientRequest request;
  request.method = std::move(method);
  request.target = std::move(target);
  request.body = std::move(body);
  if (!request.body.empty()) request.headers.Set("Content-Type", "application/json");
  // The node bounds its own wait by the asked one; leave room for the answer to travel.
  request.timeout = timeout + 2s;
  auto resp = http_->Do(request);
  if (!resp.ok()) {
    return Status(resp.status().code(),
                  fmt::format("node relay {}: {}", address_, resp.status().message()));
  }
  if (resp->status / 100 != 2)
    return NodeSide(DecodeRelayError(resp->status, resp->body), address_);
  return resp;
}

Status RelayClient::Init(std::string_view sandbox_id, const std::string& body,
                         std::chrono::milliseconds timeout) {
  return Call("POST", SandboxPath(sandbox_id, fmt::format("init?timeoutMs={}", timeout.count())),
              body, timeout)
      .status();
}

Status RelayClient::Reset(std::string_view sandbox_id, std::chrono::milliseconds timeout) {
  return Call("POST", SandboxPath(sandbox_id, fmt::format("reset?timeoutMs={}", timeout.count())),
              "", timeout)
      .status();
}

Result<net::Headers> RelayClient::EnvdAuthHeaders(std::string_view sandbox_id) {
  ASSIGN_OR_RETURN(net::Response resp, Call("GET", SandboxPath(sandbox_id, "envd-auth"), "", 10s));
  auto j = api::ParseJson(resp.body);
  if (!j.ok() || !j->is_object()) {
    return InternalError(fmt::format("node relay {}: envd-auth is not an object", address_));
  }
  net::Headers out;
  for (const auto& [name, value] : j->items()) {
    if (!value.is_string()) continue;
    out.Set(name, value.get<std::string>());
  }
  return out;
}

Result<std::vector<StatsSample>> RelayClient::Metrics(std::string_view sandbox_id) {
  ASSIGN_OR_RETURN(net::Response resp, Call("GET", SandboxPath(sandbox_id, "metrics"), "", 10s));
  auto stats = DecodeStats(resp.body);
  if (!stats.ok()) return NodeSide(stats.status(), address_);
  return stats;
}

Result<std::vector<base::LogLine>> RelayClient::CommandLog(std::string_view sandbox_id,
                                                           const base::LogLineQuery& query) {
  ASSIGN_OR_RETURN(
      net::Response resp,
      Call("GET", SandboxPath(sandbox_id, "commandlog?" + EncodeLogQuery(query)), "", 30s));
  auto lines = DecodeLogLines(resp.body);
  if (!lines.ok()) return NodeSide(lines.status(), address_);
  return lines;
}

Status RelayClient::ApplyNetwork(const api::Object& sandbox) {
  return Call("POST", "/relay/v1/network", api::DumpJson(api::ObjectToJson(sandbox)), 30s).status();
}

Status RelayClient::Forward(net::Responder& responder, std::chrono::seconds idle) {
  auto fd = net::DialTcp(endpoint_.host, endpoint_.port, 5s);
  if (!fd.ok()) {
    return UnavailableError(
        fmt::format("node relay {} cannot be reached: {}", address_, fd.status().message()));
  }
  net::ProxyOptions options;
  options.idle_timeout = idle;
  options.set_request_headers.Set("Authorization", "Bearer " + token_);
  options.set_request_headers.Set("Host", endpoint_.authority());
  options.remove_request_headers.push_back("X-API-Key");
  responder.Proxy(std::move(*fd), std::move(options));
  return Status::Ok();
}

}  // namespace warren::node
