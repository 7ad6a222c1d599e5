#include "net/http_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/strings.h"
#include "net/dial.h"
#include "net/http_wire.h"
#include "net/message_parser.h"

namespace warren::net {

namespace {

using Clock = std::chrono::steady_clock;
// time_point::max() waits forever.
using Deadline = Clock::time_point;
constexpr Deadline kForever = Deadline::max();

constexpr size_t kMaxIdleConnections = 64;
constexpr size_t kMaxResponseHeaderBytes = 64 * 1024;
constexpr size_t kReadSize = 64 * 1024;

bool IsIdempotent(std::string_view method) {
  for (std::string_view m : {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"}) {
    if (method == m) return true;
  }
  return false;
}

// Waits for `events` on `fd` until `deadline`. DeadlineExceeded when it passes.
Status WaitFd(int fd, short events, Deadline deadline) {
  for (;;) {
    int ms = -1;
    if (deadline != kForever) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return DeadlineExceededError("timed out");
      ms = static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX));
    }
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoError("poll", errno);
    if (r == 0) return DeadlineExceededError("timed out");
    return Status::Ok();
  }
}

// Sends everything; `sent` counts what the kernel took (so the caller knows whether the peer
// may have seen the request).
Status SendAll(int fd, std::string_view data, Deadline deadline, size_t& sent) {
  sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      RETURN_IF_ERROR(WaitFd(fd, POLLOUT, deadline));
      continue;
    }
    return UnavailableError(fmt::format("sending the request failed: {}", std::strerror(errno)));
  }
  return Status::Ok();
}

// One pooled connection.
struct Conn {
  base::UniqueFd fd;
  bool reused = false;
};

// A connection is usable when it is quiet: a readable idle connection was closed by the
// server (or sent something unasked), either way it cannot carry a request.
bool StillUsable(int fd) {
  pollfd p{fd, POLLIN, 0};
  int r = ::poll(&p, 1, 0);
  return r == 0;
}

class ClientImpl final : public HttpClient {
 public:
  ClientImpl(Dialer dialer, std::string host_header)
      : dialer_(std::move(dialer)), host_header_(std::move(host_header)) {}

  Result<Response> Do(const ClientRequest& request) override {
    Response response;
    auto on_data = [&](std::string_view data) {
      response.body.append(data);
      return true;
    };
    ASSIGN_OR_RETURN(Response head, Exchange(request, nullptr, on_data, /*streaming=*/false));
    head.body = std::move(response.body);
    return head;
  }

  Result<Response> DoStreaming(const ClientRequest& request,
                               std::function<bool(const Response& head)> on_head,
                               std::function<bool(std::string_view data)> on_data) override {
    return Exchange(request, on_head, on_data, /*streaming=*/true);
  }

  void CloseIdle() override {
    std::vector<base::UniqueFd> drop;
    std::lock_guard lock(mu_);
    drop.swap(idle_);
  }

  void SetDefaultHeader(std::string_view name, std::string_view value) override {
    defaults_.Set(name, value);
  }

 private:
  Result<Conn> Acquire(Clock::time_point deadline) {
    {
      std::lock_guard lock(mu_);
      while (!idle_.empty()) {
        base::UniqueFd fd = std::move(idle_.back());
        idle_.pop_back();
        if (StillUsable(fd.get())) return Conn{std::move(fd), true};
      }
    }
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return DeadlineExceededError("timed out before connecting");
    ASSIGN_OR_RETURN(base::UniqueFd fd, dialer_(left));
    int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
      return ErrnoError("fcntl O_NONBLOCK", errno);
    }
    return Conn{std::move(fd), false};
  }

  void Release(base::UniqueFd fd) {
    std::lock_guard lock(mu_);
    if (idle_.size() < kMaxIdleConnections) idle_.push_back(std::move(fd));
  }

  // What one attempt produced: the response head, or an error and whether retrying on a
  // fresh connection is safe.
  struct Attempt {
    Status status;
    Response head;
    bool retryable = false;
  };

  Result<Response> Exchange(const ClientRequest& request,
                            const std::function<bool(const Response&)>& on_head,
                            const std::function<bool(std::string_view)>& on_data, bool streaming) {
    auto deadline = Clock::now() + request.timeout;
    std::string wire = Serialize(request);
    for (int attempt = 0;; ++attempt) {
      Result<Conn> conn = Acquire(deadline);
      if (!conn.ok())
        return conn.status().WithPrefix(fmt::format("{} {}", request.method, host_header_));
      Attempt a = Once(std::move(*conn), request, wire, deadline, on_head, on_data, streaming);
      if (a.status.ok()) return std::move(a.head);
      if (a.retryable && attempt == 0) continue;
      return a.status.WithPrefix(
          fmt::format("{} http://{}{}", request.method, host_header_, request.target));
    }
  }

  std::string Serialize(const ClientRequest& request) const {
    Headers headers = request.headers;
    for (const auto& [name, value] : defaults_.fields()) {
      if (!headers.Has(name)) headers.Add(name, value);
    }
    if (!headers.Has("Host")) headers.Add("Host", host_header_);
    if (!headers.Has("User-Agent")) headers.Add("User-Agent", "warren");
    Framing framing;
    framing.date = false;
    bool has_body_method =
        request.method == "POST" || request.method == "PUT" || request.method == "PATCH";
    if (!request.body.empty() || has_body_method) framing.content_length = request.body.size();
    std::string out;
    out.reserve(256 + request.body.size());
    AppendRequestHead(out, request.method, request.target, headers, framing);
    out.append(request.body);
    return out;
  }

  Attempt Once(Conn conn, const ClientRequest& request, std::string_view wire,
               Clock::time_point deadline, const std::function<bool(const Response&)>& on_head,
               const std::function<bool(std::string_view)>& on_data, bool streaming) {
    Attempt a;
    const int fd = conn.fd.get();
    const bool idempotent = IsIdempotent(request.method);
    size_t sent = 0;
    Status st = SendAll(fd, wire, deadline, sent);
    if (!st.ok()) {
      // A pooled connection that died while idle: the server saw nothing it could act on
      // unless part of the request went out, which only idempotent requests may risk.
      a.status = st;
      a.retryable =
          conn.reused && (sent == 0 || idempotent) && st.code() != StatusCode::kDeadlineExceeded;
      return a;
    }

    ResponseParser parser(kMaxResponseHeaderBytes);
    parser.Reset(request.method == "HEAD");
    if (!streaming) parser.SetBodyLimit(request.max_response_bytes);
    std::vector<char> buf(kReadSize);
    size_t have = 0;
    size_t received = 0;
    bool head_reported = false;
    bool stopped = false;
    std::string body;
    Deadline read_deadline = deadline;
    for (;;) {
      if (have > 0) {
        body.clear();
        Result<size_t> n = parser.Parse(std::string_view(buf.data(), have), body);
        if (!n.ok()) {
          a.status = n.status().code() == StatusCode::kResourceExhausted
                         ? n.status()
                         : InvalidArgumentError(n.status().message());
          return a;
        }
        std::memmove(buf.data(), buf.data() + *n, have - *n);
        have -= *n;
        if (parser.head_done() && !head_reported) {
          const ResponseHead& h = parser.head();
          if (h.status >= 100 && h.status < 200 && h.status != 101) {
            parser.Reset(request.method == "HEAD");  // 100 Continue: the answer follows
            if (!streaming) parser.SetBodyLimit(request.max_response_bytes);
            continue;
          }
          head_reported = true;
          a.head.status = h.status;
          a.head.headers = h.headers;
          if (streaming) read_deadline = kForever;  // the head is in; data may take its time
          if (on_head && !on_head(a.head)) {
            stopped = true;
            break;
          }
        }
        if (!body.empty() && !on_data(body)) {
          stopped = true;
          break;
        }
        if (parser.done()) break;
        if (*n == 0 && have == buf.size()) buf.resize(buf.size() * 2);  // a long head
      }
      Status wait = WaitFd(fd, POLLIN, read_deadline);
      if (!wait.ok()) {
        a.status = wait.code() == StatusCode::kDeadlineExceeded
                       ? DeadlineExceededError(fmt::format("no complete response within {} ms",
                                                           request.timeout.count()))
                       : wait;
        return a;
      }
      ssize_t r = ::recv(fd, buf.data() + have, buf.size() - have, 0);
      if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (r < 0) {
        a.status = UnavailableError(fmt::format("connection failed: {}", std::strerror(errno)));
        a.retryable = conn.reused && received == 0 && idempotent;
        return a;
      }
      if (r == 0) {
        if (received == 0) {
          a.status = UnavailableError("the server closed the connection without responding");
          a.retryable = conn.reused && idempotent;
          return a;
        }
        Status eof = parser.ParseEof();
        if (!eof.ok()) {
          a.status = eof;
          return a;
        }
        break;  // a body delimited by the close
      }
      have += static_cast<size_t>(r);
      received += static_cast<size_t>(r);
    }
    if (!head_reported && !stopped) {
      const ResponseHead& h = parser.head();
      a.head.status = h.status;
      a.head.headers = h.headers;
    }
    // Reuse only a connection whose response ended cleanly with nothing after it.
    if (!stopped && parser.done() && parser.head().keep_alive && have == 0 &&
        !parser.body_until_eof()) {
      Release(std::move(conn.fd));
    }
    return a;
  }

  const Dialer dialer_;
  const std::string host_header_;
  Headers defaults_;  // SetDefaultHeader; written before the client is shared
  std::mutex mu_;
  std::vector<base::UniqueFd> idle_;  // guarded by mu_
};

}  // namespace

Result<std::unique_ptr<HttpClient>> HttpClient::ForAddress(std::string_view address) {
  ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  std::string authority = hp.authority();
  Dialer dialer = [hp](std::chrono::milliseconds timeout) {
    return DialTcp(hp.host, hp.port, timeout);
  };
  return std::unique_ptr<HttpClient>(std::make_unique<ClientImpl>(std::move(dialer), authority));
}

std::unique_ptr<HttpClient> HttpClient::WithDialer(Dialer dialer, std::string host_header) {
  return std::make_unique<ClientImpl>(std::move(dialer), std::move(host_header));
}

}  // namespace warren::net
