#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "net/router.h"
#include "net/upstream_pool.h"

namespace warren::net {

struct ServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;                         // 0 = an ephemeral port; see HttpServer::port()
  int loop_threads = 0;                      // 0 = one per core
  int blocking_threads = 16;                 // at most, for RouteOptions::blocking handlers
  size_t max_header_bytes = 64 * 1024;       // larger → 431
  size_t max_body_bytes = 16 * 1024 * 1024;  // default per-route limit; larger → 413
  std::chrono::seconds header_timeout{30};   // to receive a complete request head
  std::chrono::seconds body_timeout{300};    // to receive the body once the head is in
  std::chrono::seconds idle_timeout{640};    // keep-alive connection with no request
  std::chrono::seconds write_timeout{300};   // a single write that makes no progress
  UpstreamPoolOptions upstream_pool;         // limits of upstream_pool()
};

// An HTTP/1.1 server (Boost.Beast, one coroutine per connection) serving one Router: keep-alive,
// chunked request bodies, streamed responses flushed per write, size limits and deadlines,
// an X-Request-ID on every response, graceful shutdown. Thread-safe.
class HttpServer {
 public:
  // Binds and starts serving on background threads.
  static Result<std::unique_ptr<HttpServer>> Start(ServerOptions options, Router router);
  virtual ~HttpServer() = default;

  virtual uint16_t port() const = 0;
  // The idle upstream connections relays left for reuse (ProxyOptions::pool_key). Valid until
  // the server is destroyed; Shutdown closes them.
  virtual UpstreamPool& upstream_pool() = 0;
  // Stops accepting, lets requests in flight finish until `grace` passes, then closes every
  // connection (open streams are aborted) and joins the threads. Idempotent. The destructor
  // calls it with a zero grace. It waits for blocking handlers to return, so never call it
  // (or destroy the server) from a handler.
  virtual void Shutdown(std::chrono::milliseconds grace) = 0;
};

}  // namespace warren::net
