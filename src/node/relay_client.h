#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/object.h"
#include "base/line_index.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "net/dial.h"
#include "net/http.h"
#include "net/http_client.h"
#include "net/router.h"
#include "node/stats_ring.h"

namespace warren::node {

// The servers' end of one node's relay (relay_routes.h): what the in-process NodeAgent offers
// the control plane and the gateway, for a node in another process. Thread-safe; the HTTP calls
// share one keep-alive pool, a Dial is a connection of its own (it becomes the tunnel).
// Errors carry the node's Status unchanged (NotFound, FailedPrecondition, Unavailable, ...);
// a node that cannot be reached is Unavailable naming its address.
class RelayClient {
 public:
  static Result<std::unique_ptr<RelayClient>> Create(std::string_view address, std::string token);
  // Use Create.
  RelayClient(std::string address, net::HostPort endpoint, std::string token,
              std::unique_ptr<net::HttpClient> http)
      : address_(std::move(address)),
        endpoint_(std::move(endpoint)),
        token_(std::move(token)),
        http_(std::move(http)) {}

  const std::string& address() const { return address_; }

  // A byte stream to 127.0.0.1:port inside the sandbox: the node's 101 is read and nothing
  // past it, so a server that speaks first loses no byte.
  Result<base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                              std::chrono::milliseconds timeout);
  Status Init(std::string_view sandbox_id, const std::string& body,
              std::chrono::milliseconds timeout);
  Status Reset(std::string_view sandbox_id, std::chrono::milliseconds timeout);
  Result<net::Headers> EnvdAuthHeaders(std::string_view sandbox_id);
  Result<std::vector<StatsSample>> Metrics(std::string_view sandbox_id);
  Result<std::vector<base::LogLine>> CommandLog(std::string_view sandbox_id,
                                                const base::LogLineQuery& query);
  Status ApplyNetwork(const api::Object& sandbox);
  // Relays the request `responder` answers, as it came (method, path, query), to the node's
  // relay with the relay credential in place of the caller's key; the node's answer streams
  // back (a followed log stays open while quiet for up to `idle`). Unavailable when the node
  // cannot be reached (nothing was answered then).
  Status Forward(net::Responder& responder, std::chrono::seconds idle);

 private:
  // One relay call; a non-2xx answer is the node's Status.
  Result<net::Response> Call(std::string method, std::string target, std::string body,
                             std::chrono::milliseconds timeout);

  const std::string address_;
  const net::HostPort endpoint_;
  const std::string token_;
  std::unique_ptr<net::HttpClient> http_;
};

}  // namespace warren::node
