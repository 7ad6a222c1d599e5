#include "store/etcd/etcd_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "base/encoding.h"
#include "base/log.h"
#include "net/dial.h"

namespace warren::store::etcd {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Errors worth trying on another member (or the same one after an election).
bool Transient(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded;
}

// An HTTP answer of the gateway as a Status: 200 is Ok; otherwise the gateway's
// {"code": <gRPC code>, "message": ...}.
Status GatewayError(const net::Response& response) {
  auto body = api::ParseJson(response.body);
  if (body.ok() && body->is_object() && body->contains("code") &&
      (*body)["code"].is_number_integer()) {
    int code = (*body)["code"].get<int>();
    std::string message = body->value("message", std::string("etcd error"));
    if (code <= 0 || code > static_cast<int>(StatusCode::kUnauthenticated)) {
      code = static_cast<int>(StatusCode::kUnknown);
    }
    return Status(static_cast<StatusCode>(code), fmt::format("etcd: {}", message));
  }
  return UnknownError(
      fmt::format("etcd answered HTTP {}: {}", response.status, response.body.substr(0, 200)));
}

}  // namespace

void StreamCanceller::Cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

void StreamCanceller::Attach(base::UniqueFd fd) {
  std::lock_guard lock(mu_);
  fd_ = std::move(fd);
  if (cancelled_.load() && fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

void StreamCanceller::Detach() {
  std::lock_guard lock(mu_);
  fd_.reset();
}

EtcdClient::EtcdClient(std::vector<std::string> endpoints, EtcdClientOptions options)
    : endpoints_(std::move(endpoints)), options_(options) {}

Result<std::unique_ptr<EtcdClient>> EtcdClient::Create(std::vector<std::string> endpoints,
                                                       EtcdClientOptions options) {
  if (endpoints.empty()) return InvalidArgumentError("etcd: no endpoints");
  std::unique_ptr<EtcdClient> client(new EtcdClient(std::move(endpoints), options));
  for (const auto& e : client->endpoints_) {
    ASSIGN_OR_RETURN(auto http, net::HttpClient::ForAddress(e));
    client->clients_.push_back(std::move(http));
  }
  return client;
}

Result<CallResult> EtcdClient::Call(std::string_view path, const api::Json& request) {
  const auto deadline = Clock::now() + options_.call_timeout;
  net::ClientRequest req;
  req.method = "POST";
  req.target = std::string(path);
  req.headers.Set("Content-Type", "application/json");
  req.body = api::DumpJson(request);
  CallResult out;
  Status last;
  auto backoff = 20ms;
  for (int attempt = 0;; ++attempt) {
    // One round over every member, starting with the one that answered last.
    const size_t first = current_.load();
    for (size_t i = 0; i < clients_.size(); ++i) {
      const size_t index = (first + i) % clients_.size();
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) break;
      req.timeout = std::min(options_.attempt_timeout, left);
      Result<net::Response> response = clients_[index]->Do(req);
      Status status = response.ok()
                          ? (response->status == 200 ? Status::Ok() : GatewayError(*response))
                          : response.status();
      if (status.ok()) {
        auto body = api::ParseJson(response->body);
        if (!body.ok())
          return InternalError(fmt::format("etcd: bad JSON: {}", body.status().message()));
        current_ = index;
        out.body = std::move(*body);
        return out;
      }
      if (!Transient(status)) return status;
      // The request may have been applied (the connection broke after it was sent, or the
      // member timed out waiting for the commit): a retry must not trust a failed compare.
      out.ambiguous = true;
      last = status.WithPrefix(endpoints_[index]);
      base::Logger("store")->debug("etcd call failed endpoint={} path={} error={}",
                                   endpoints_[index], path, status.ToString());
    }
    if (Clock::now() + backoff >= deadline) break;
    std::this_thread::sleep_for(backoff);
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, 500ms);
  }
  if (out.ambiguous && path != "/v3/kv/range" && path != "/v3/maintenance/status") {
    // store.h's Unavailable promises that nothing was written; a write that reached a member
    // which went away before answering may have been.
    return DeadlineExceededError(
        fmt::format("etcd: no member confirmed the write, which may have been applied; read before "
                    "retrying: {}",
                    last.message()));
  }
  return UnavailableError(fmt::format("etcd: no member answered: {}", last.message()));
}

Status EtcdClient::Watch(const api::Json& create_request, StreamCanceller& canceller,
                         const std::function<bool(const api::Json& result)>& on_message) {
  const size_t index = current_.load() % endpoints_.size();
  ASSIGN_OR_RETURN(net::HostPort hp, net::ParseHostPort(endpoints_[index]));
  // Dials like the default client but keeps a duplicate of the socket, so Cancel can shut it
  // down while this thread blocks reading.
  net::Dialer dialer = [hp,
                        &canceller](std::chrono::milliseconds timeout) -> Result<base::UniqueFd> {
    ASSIGN_OR_RETURN(base::UniqueFd fd, net::DialTcp(hp.host, hp.port, timeout));
    base::UniqueFd dup(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    if (!dup.valid()) return ErrnoError("dup", errno);
    canceller.Attach(std::move(dup));
    return fd;
  };
  auto http = net::HttpClient::WithDialer(std::move(dialer), hp.authority());
  net::ClientRequest req;
  req.method = "POST";
  req.target = "/v3/watch";
  req.headers.Set("Content-Type", "application/json");
  req.body = api::DumpJson(api::Json{{"create_request", create_request}});
  req.timeout = options_.attempt_timeout;
  std::string pending;
  bool stopped = false;
  int http_status = 0;
  Status message_error;
  auto response = http->DoStreaming(
      req,
      [&](const net::Response& head) {
        http_status = head.status;
        return head.status == 200 && !canceller.cancelled();
      },
      [&](std::string_view data) {
        if (canceller.cancelled()) return false;
        pending.append(data);
        // The gateway writes one JSON message per line.
        size_t start = 0;
        for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
          std::string_view line(pending.data() + start, nl - start);
          if (line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
          auto message = api::ParseJson(line);
          if (!message.ok() || !message->is_object()) {
            message_error = InternalError("etcd: a watch message does not parse");
            return false;
          }
          if (message->contains("error")) {
            message_error = UnavailableError(
                fmt::format("etcd: watch stream error: {}", api::DumpJson((*message)["error"])));
            return false;
          }
          if (!message->contains("result")) continue;
          if (!on_message((*message)["result"])) {
            stopped = true;
            return false;
          }
        }
        pending.erase(0, start);
        return true;
      });
  canceller.Detach();
  if (canceller.cancelled()) return CancelledError("watch cancelled");
  if (stopped) return Status::Ok();
  if (!message_error.ok()) return message_error;
  // The member is gone or refused: the next attempt starts with another one.
  size_t expected = index;
  current_.compare_exchange_strong(expected, (index + 1) % endpoints_.size());
  if (!response.ok()) return UnavailableError(response.status().message());
  if (http_status != 200) {
    return UnavailableError(fmt::format("etcd: watch answered HTTP {}", http_status));
  }
  return UnavailableError("etcd: the watch stream ended");
}

std::string B64(std::string_view bytes) { return base::Base64Encode(bytes); }

std::string FromB64(const api::Json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end() || !it->is_string()) return "";
  auto decoded = base::Base64Decode(it->get<std::string>());
  return decoded ? *decoded : "";
}

int64_t Int(const api::Json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (!it->is_string()) return 0;
  try {
    return std::stoll(it->get<std::string>());
  } catch (const std::exception&) {
    return 0;
  }
}

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& c = reinterpret_cast<unsigned char&>(end.back());
    if (c < 0xff) {
      ++c;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

}  // namespace warren::store::etcd
