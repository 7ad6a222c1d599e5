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
  uint16_t port = 0;          // 0 = an ephemeral port; see HttpServer::port()
  int loop_threads = 0;       // 0 = one per core
  int blocking_threads = 16;  // at most, for RouteOptions::blocking handlers
  // At most this many blocking handlers of one fairness key (RouteOptions::fairness_key) run at
  // once, so one tenant's flood leaves threads for the others. 0 = three quarters of
  // blocking_threads (at least 1).
  int blocking_threads_per_key = 0;
  // Client connections open at once. One more is answered 503 and closed (counted in
  // ConnectionStats). 0 = a quarter of the process's open-file limit (soft RLIMIT_NOFILE) at
  // Start: two listeners and the gateway's upstream sockets then leave a quarter of the
  // descriptors for everything else (the store, sandboxes, logs).
  size_t max_connections = 0;
  // Client connections open at once from one client address (IPv4, or IPv6); more are answered
  // 503 and closed. 0 = no limit (envd, whose only client is the gateway).
  size_t max_connections_per_address = 0;
  size_t max_header_bytes = 64 * 1024;       // larger → 431
  size_t max_body_bytes = 16 * 1024 * 1024;  // default per-route limit; larger → 413
  std::chrono::seconds header_timeout{30};   // to receive a complete request head
  std::chrono::seconds body_timeout{300};    // to receive the body once the head is in
  std::chrono::seconds idle_timeout{640};    // keep-alive connection with no request
  std::chrono::seconds write_timeout{300};   // a single write that makes no progress
  UpstreamPoolOptions upstream_pool;         // limits of upstream_pool()
};

// What happened to a listener's connections, since Start. Counters only grow.
struct ConnectionStats {
  uint64_t open = 0;                    // now
  uint64_t accepted = 0;                // admitted and served
  uint64_t rejected_listener_full = 0;  // max_connections were open
  uint64_t rejected_address_full = 0;   // max_connections_per_address were open from its address
  // Idle connections (waiting for a request) closed to make room when the listener was full.
  uint64_t reclaimed_idle = 0;
  // Closed by a deadline: the request head (header_timeout), the body (body_timeout), between
  // requests (idle_timeout), a write (write_timeout), a relay's silence (ProxyOptions).
  uint64_t timed_out_head = 0;
  uint64_t timed_out_body = 0;
  uint64_t timed_out_idle = 0;
  uint64_t timed_out_write = 0;
  uint64_t timed_out_relay = 0;
  uint64_t blocking_queued = 0;  // now: blocking handlers waiting for a thread
  size_t max_connections = 0;    // the limits in force (0 = none)
  size_t max_connections_per_address = 0;
};

// An HTTP/1.1 server (Boost.Beast, one coroutine per connection) serving one Router: keep-alive,
// chunked request bodies, streamed responses flushed per write, size limits and deadlines,
// an X-Request-ID on every response, graceful shutdown. Connections are capped per listener and
// per client address; blocking handlers share their threads fairly between fairness keys
// (RouteOptions::fairness_key). Thread-safe.
class HttpServer {
 public:
  // Binds and starts serving on background threads.
  static Result<std::unique_ptr<HttpServer>> Start(ServerOptions options, Router router);
  virtual ~HttpServer() = default;

  virtual uint16_t port() const = 0;
  // The idle upstream connections relays left for reuse (ProxyOptions::pool_key). Valid until
  // the server is destroyed; Shutdown closes them.
  virtual UpstreamPool& upstream_pool() = 0;
  virtual ConnectionStats connection_stats() const = 0;
  // Stops accepting, lets requests in flight finish until `grace` passes, then closes every
  // connection (open streams are aborted) and joins the threads. Idempotent. The destructor
  // calls it with a zero grace. It waits for blocking handlers to return, so never call it
  // (or destroy the server) from a handler.
  virtual void Shutdown(std::chrono::milliseconds grace) = 0;
};

}  // namespace warren::net
