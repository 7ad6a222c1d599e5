#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "gateway/metrics.h"
#include "gateway/resumer.h"
#include "gateway/route_table.h"
#include "gateway/sandbox_address.h"
#include "gateway/sandbox_dialer.h"
#include "gateway/worker_pool.h"
#include "net/http_server.h"
#include "trace/span.h"

namespace warren::gateway {

struct IdleUpstreamOptions {
  // Idle connections kept per sandbox port, and in all, on each of the gateway's loops.
  size_t max_per_port = 64;
  size_t max_total = 4096;
  // Closed after this long unused. Kept below the keep-alive timeouts servers commonly use
  // (gunicorn's is 2 s, Node's 5 s), so the gateway lets go before the server does: a request
  // sent just as the server closes would fail. Under load connections are reused within
  // milliseconds anyway.
  std::chrono::milliseconds idle_timeout{1000};
  // For envd's port, whose server keeps idle connections for 640 s: long enough that an SDK's
  // calls seconds apart still find one.
  std::chrono::milliseconds envd_idle_timeout{30000};
  uint16_t envd_port = 49983;
};

// contracts.md: the gateway listens on 127.0.0.1:7781 in `warren server`.
inline constexpr uint16_t kDefaultGatewayPort = 7781;

struct GatewayOptions {
  // Connections per client address: an E2B SDK holds one per request in flight and one per
  // open stream (each running command, PTY and directory watch), so at concurrency 100 with a
  // few streams per sandbox about 500 from one address; 4096 leaves room for that eight times
  // over, or for a NAT many SDK users share. The listener's cap is net's default (a quarter of
  // the open-file limit; each relay holds a second descriptor into the sandbox).
  net::ServerOptions server{.address = "127.0.0.1",
                            .port = kDefaultGatewayPort,
                            .blocking_threads = 1,
                            .max_connections_per_address = 4096};
  // Host routing accepts `<port>-<id>.<domain>` for this domain only; empty = any domain.
  std::string domain;
  std::chrono::milliseconds dial_timeout{5000};
  // Silence in both directions that ends a relay. E2B streams send keepalives every 50 s;
  // envd's own idle timeout is 640 s.
  std::chrono::seconds relay_idle_timeout{600};
  // Threads that dial into sandboxes (and wait for auto-resumes): dials can block.
  int dial_threads = 8;
  // Dial on the loop that routed the request when the dialer can without waiting
  // (SandboxDialer::DialNow), sparing the two thread hops of a dial thread; off = always on a
  // dial thread (the A/B in bench/gateway).
  bool dial_on_loop = true;
  // Keep connections into sandboxes open between requests (net's UpstreamPool: each stays on
  // the loop that relayed over it).
  bool upstream_keepalive = true;
  IdleUpstreamOptions idle_upstreams;
  // Largest request body relayed (file uploads); envd enforces disk space itself.
  uint64_t max_body_bytes = uint64_t{5} << 30;
  // How long a request waits for an auto-resumed sandbox to run.
  std::chrono::milliseconds resume_timeout{60000};
};

// The sandbox traffic gateway: its own HTTP listener; each request is routed by the
// E2b-Sandbox-Id/E2b-Sandbox-Port headers or a `<port>-<id>.<domain>` Host to a route in the
// RouteTable, checked against the sandbox's envd access token (port 49983 only), and relayed
// with net's Responder::Proxy over a socket made inside the sandbox's network namespace (the
// SandboxDialer) — unbuffered, chunked streams and upgrades included. Answers E2B's exact 502
// bodies for a sandbox that is unknown, killed, paused or not listening, 401 for a bad token,
// 400 for a request that names no sandbox. A route that goes down aborts its relays (the
// RouteTable does that), so an SDK stream sees its body terminate.
//
// Tracing (when on): a request that arrives with a sampled W3C `traceparent` gets a span,
// "gateway.relay", from its arrival to the end of its relay (or the gateway's own answer), and
// the sandbox receives a traceparent naming that span (W3C's rule for a participant that
// forwards: same trace, its own span as the parent; `tracestate` passes as sent). Requests
// without one pass untouched and cost nothing: the gateway never starts a trace of its own, as
// a sandbox's traffic is its user's, not ours to sample.
//
// Ownership: borrows the RouteTable, the dialer and the resumer, which must outlive it. Owns
// its server, dial threads and idle upstream connections. Thread-safe. Shutdown (or the
// destructor) stops the listener, ends every relay and joins the threads.
class Gateway {
 public:
  static Result<std::unique_ptr<Gateway>> Start(GatewayOptions options, RouteTable& routes,
                                                SandboxDialer& dialer, Resumer* resumer = nullptr);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  uint16_t port() const;
  // Stops accepting, lets requests finish until `grace`, then aborts what is left. Idempotent.
  void Shutdown(std::chrono::milliseconds grace);

  // warren_gateway_* samples: requests by result, upstream connections dialed/reused, resumes,
  // routes by state, fences, open relays (in all and per sandbox), idle upstream connections.
  std::vector<MetricSample> MetricSamples() const;
  const GatewayCounters& counters() const { return counters_; }
  // The listener's connections: open, refused over a limit, closed by a deadline.
  net::ConnectionStats connection_stats() const {
    return server_ ? server_->connection_stats() : net::ConnectionStats{};
  }
  // Idle connections into sandboxes, over all loops.
  size_t idle_upstream_count() const { return server_ ? server_->upstream_pool().idle_count() : 0; }

 private:
  Gateway(GatewayOptions options, RouteTable& routes, SandboxDialer& dialer, Resumer* resumer);

  // The request's span (see above), null when it is not traced; it ends when the last holder
  // lets go: the relay's end, or the handler that answered.
  using RelaySpan = std::shared_ptr<trace::DetachedSpan>;

  void Handle(net::Request& request, net::Responder responder);
  // Relays over an idle keep-alive connection when there is one, else dials on a dial thread.
  void Connect(net::Responder responder, SandboxAddress address, RouteLookup lookup,
               RelaySpan span);
  void DialFailed(net::Responder& responder, const SandboxAddress& address, const Status& why,
                  const RelaySpan& span);
  void DialAndRelay(net::Responder responder, const SandboxAddress& address,
                    const RouteLookup& lookup, RelaySpan span);
  // Relays over `upstream`, or with `pooled` over an idle connection of this loop. Returns false,
  // with `responder` unanswered, only when `pooled` found none; otherwise it answered.
  bool Relay(net::Responder& responder, const SandboxAddress& address, const RouteLookup& lookup,
             base::UniqueFd upstream, bool pooled, const RelaySpan& span);
  void ResumeAndRelay(net::Responder responder, const SandboxAddress& address,
                      const RouteLookup& lookup, RelaySpan span);
  bool Authorized(const net::Request& request, uint16_t port, const Route& route) const;
  void Housekeeping();
  // Asks the resumer to pause sandboxes idle past their idle_pause_seconds (on dial threads).
  void PauseIdleSandboxes();

  const GatewayOptions options_;
  RouteTable& routes_;
  SandboxDialer& dialer_;
  Resumer* const resumer_;
  GatewayCounters counters_;
  WorkerPool dial_pool_;
  std::unique_ptr<net::HttpServer> server_;

  std::mutex housekeeping_mu_;
  std::condition_variable housekeeping_wake_;
  bool stopping_ = false;                       // guarded by housekeeping_mu_
  std::set<std::string, std::less<>> pausing_;  // guarded by housekeeping_mu_; idle pauses sent
  std::thread housekeeping_;
};

}  // namespace warren::gateway
