#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "net/http.h"

namespace warren::net {

struct ClientRequest {
  std::string method = "GET";
  std::string target = "/";  // origin-form, already encoded: "/v2/sandboxes?limit=1"
  Headers headers;
  std::string body;
  std::chrono::milliseconds timeout{30'000};  // whole exchange, connect included
  // Do() fails with ResourceExhausted past this many body bytes (DoStreaming has no limit).
  size_t max_response_bytes = 256u << 20;
};

// Opens a connected socket to an endpoint. The default dials TCP; the gateway and the envd
// client pass one that creates the socket inside a sandbox's network namespace.
using Dialer = std::function<Result<base::UniqueFd>(std::chrono::milliseconds timeout)>;

// A blocking HTTP/1.1 client with a keep-alive pool, for one endpoint. Thread-safe: concurrent
// calls use separate pooled connections. Errors: Unavailable when the endpoint cannot be reached
// or drops the connection, DeadlineExceeded on timeout, InvalidArgument for a malformed response.
// HTTP error statuses are not errors; they come back as responses.
class HttpClient {
 public:
  // "127.0.0.1:8080" or "http://127.0.0.1:8080" (https is not supported).
  static Result<std::unique_ptr<HttpClient>> ForAddress(std::string_view address);
  // `host_header` is sent as Host.
  static std::unique_ptr<HttpClient> WithDialer(Dialer dialer, std::string host_header);
  virtual ~HttpClient() = default;

  virtual Result<Response> Do(const ClientRequest& request) = 0;

  // Sends the request and delivers the response body piece by piece as it arrives (chunk
  // boundaries are not preserved). `on_head` (may be empty) sees status and headers before any
  // data. Returning false from either callback stops reading and closes the connection.
  // The returned response carries status and headers; its body is empty. `request.timeout`
  // bounds connecting and the head only; a stream may then run for as long as data flows.
  virtual Result<Response> DoStreaming(const ClientRequest& request,
                                       std::function<bool(const Response& head)> on_head,
                                       std::function<bool(std::string_view data)> on_data) = 0;

  // Drops idle pooled connections (e.g. after the endpoint restarted).
  virtual void CloseIdle() = 0;

  // A header sent with every later request that does not set it itself (an API key). Not
  // thread-safe against concurrent requests: set it before sharing the client.
  virtual void SetDefaultHeader(std::string_view name, std::string_view value) = 0;
};

}  // namespace warren::net
