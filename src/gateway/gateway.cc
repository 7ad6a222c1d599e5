#include "gateway/gateway.h"

#include <fmt/format.h>

#include "base/encoding.h"
#include "base/log.h"
#include "gateway/responses.h"
#include "trace/propagation.h"
#include "trace/tracer.h"

namespace warren::gateway {
namespace {

// The relay of one request, as the route table sees it: attached before the relay starts so a
// route going down in between still reaches it, and given the net handle once there is one.
// Thread-safe.
class RelayRecord final : public OpenRelay {
 public:
  RelayRecord(RouteTable& routes, std::string_view sandbox_id)
      : routes_(routes), sandbox_id_(sandbox_id) {}

  void SetHandle(std::shared_ptr<net::ProxyHandle> handle) {
    bool abort;
    {
      std::lock_guard lock(mu_);
      handle_ = handle;
      abort = abort_requested_;
    }
    if (abort) handle->Abort();
  }

  void Abort(std::string_view reason) override {
    std::shared_ptr<net::ProxyHandle> handle;
    {
      std::lock_guard lock(mu_);
      if (!abort_requested_) abort_reason_ = std::string(reason);
      abort_requested_ = true;
      handle = handle_;
    }
    if (handle) handle->Abort();
  }

  const std::string& sandbox_id() const { return sandbox_id_; }

  // The relay ended (net's on_done), or never started.
  void Done() { routes_.DetachRelay(sandbox_id_, this); }

  // Why the route went down, once it has.
  std::string abort_reason() {
    std::lock_guard lock(mu_);
    return abort_reason_;
  }

 private:
  RouteTable& routes_;
  const std::string sandbox_id_;
  std::mutex mu_;
  std::shared_ptr<net::ProxyHandle> handle_;  // guarded by mu_
  bool abort_requested_ = false;              // guarded by mu_
  std::string abort_reason_;                  // guarded by mu_
};

// A relay that did not deliver its whole response is a failure on the data path: logged at
// warning with the sandbox, the step and the cause. A client that left is the client's doing
// and a stopping server its operator's: debug.
void LogRelayEnd(const net::RelayOutcome& outcome, uint16_t port, RelayRecord& record,
                 bool pooled) {
  if (outcome.ok()) return;
  std::string cause = outcome.cause;
  if (outcome.failed_step == net::RelayStep::kAborted) {
    cause = fmt::format("{}: {}", record.abort_reason(), cause);
  }
  bool client_side = outcome.failed_step == net::RelayStep::kClientGone ||
                     outcome.failed_step == net::RelayStep::kShutdown;
  base::Logger("gateway")->log(
      client_side ? spdlog::level::debug : spdlog::level::warn,
      "relay failed sandbox_id={} port={} step={} upstream={} response_started={} cause=\"{}\"",
      record.sandbox_id(), port, net::RelayStepName(outcome.failed_step),
      pooled ? "reused" : "dialed", outcome.response_started, cause);
}

// A Responder is move-only and std::function wants copies: jobs carry it in a shared_ptr.
using SharedResponder = std::shared_ptr<net::Responder>;

// The span of a request that arrived traced (gateway.h), or null: no allocation, no clock read
// for the rest.
std::shared_ptr<trace::DetachedSpan> StartRelaySpan(const net::Request& request,
                                                    const SandboxAddress& address) {
  if (!trace::Enabled()) return nullptr;
  auto parent = trace::ExtractTraceparent(request.headers);
  if (!parent || !parent->sampled()) return nullptr;
  auto span = std::make_shared<trace::DetachedSpan>("gateway.relay", *parent);
  if (!span->recording()) return nullptr;
  span->SetAttribute("http.request.method", request.method);
  span->SetAttribute("warren.sandbox_id", address.sandbox_id);
  span->SetAttribute("warren.sandbox_port", int64_t{address.port});
  span->SetAttribute("warren.request_id", request.request_id);
  return span;
}

// The gateway answered itself (no relay): the status, and an error for what a user would call
// one (the sandbox gone, its port closed, a bad token).
void Answered(const std::shared_ptr<trace::DetachedSpan>& span, int status) {
  if (!span) return;
  span->SetAttribute("http.response.status_code", int64_t{status});
  if (status >= 400) span->SetError(fmt::format("answered {} by the gateway", status));
}

}  // namespace

Result<std::unique_ptr<Gateway>> Gateway::Start(GatewayOptions options, RouteTable& routes,
                                                SandboxDialer& dialer, Resumer* resumer) {
  std::unique_ptr<Gateway> gateway(new Gateway(std::move(options), routes, dialer, resumer));
  Gateway* g = gateway.get();
  net::Router router;
  router.SetFallback(
      [g](net::Request&& request, net::Responder responder) {
        // The request stays where it is (net relays it from there); only the responder moves.
        g->Handle(request, std::move(responder));
      },
      net::RouteOptions{.stream_body = true, .max_body_bytes = g->options_.max_body_bytes});
  net::ServerOptions server_options = g->options_.server;
  server_options.upstream_pool.max_per_key = g->options_.idle_upstreams.max_per_port;
  server_options.upstream_pool.max_per_loop = g->options_.idle_upstreams.max_total;
  auto server = net::HttpServer::Start(std::move(server_options), std::move(router));
  if (!server.ok()) return server.status().WithPrefix("gateway listener");
  g->server_ = std::move(server).value();
  // A route that goes down takes its idle connections with it (their generation is stale too).
  routes.SetDownObserver([pool = &g->server_->upstream_pool()](const std::string& sandbox_id) {
    pool->DropGroup(sandbox_id);
  });
  g->housekeeping_ = std::thread([g] { g->Housekeeping(); });
  base::Logger("gateway")->info("gateway listening address={} port={} domain={}",
                                g->options_.server.address, g->server_->port(),
                                g->options_.domain.empty() ? "*" : g->options_.domain);
  return gateway;
}

Gateway::Gateway(GatewayOptions options, RouteTable& routes, SandboxDialer& dialer,
                 Resumer* resumer)
    : options_(std::move(options)),
      routes_(routes),
      dialer_(dialer),
      resumer_(resumer),
      dial_pool_(options_.dial_threads) {}

Gateway::~Gateway() { Shutdown(std::chrono::milliseconds(0)); }

uint16_t Gateway::port() const { return server_ ? server_->port() : 0; }

void Gateway::Shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(housekeeping_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  housekeeping_wake_.notify_all();
  if (housekeeping_.joinable()) housekeeping_.join();
  routes_.SetDownObserver(nullptr);
  // The listener first: it ends every relay (and their callbacks into idle_ and routes_).
  if (server_) server_->Shutdown(grace);
  dial_pool_.Stop();
}

void Gateway::Housekeeping() {
  std::unique_lock lock(housekeeping_mu_);
  while (!stopping_) {
    housekeeping_wake_.wait_for(lock, std::chrono::seconds(1));
    if (stopping_) break;
    lock.unlock();
    routes_.SweepFences();
    PauseIdleSandboxes();
    lock.lock();
  }
}

void Gateway::PauseIdleSandboxes() {
  if (resumer_ == nullptr) return;
  for (Route& route : routes_.IdleRoutes()) {
    {
      std::lock_guard lock(housekeeping_mu_);
      if (!pausing_.insert(route.sandbox_id).second) continue;  // one already under way
    }
    std::string id = route.sandbox_id;
    bool posted = dial_pool_.Post([this, route = std::move(route)] {
      Status s = resumer_->PauseIdle(route);
      if (s.ok()) {
        base::Logger("gateway")->info("idle sandbox paused id={} idle_seconds={}", route.sandbox_id,
                                      route.idle_pause_seconds);
      } else {
        base::Logger("gateway")->warn("idle pause failed id={} error=\"{}\"", route.sandbox_id,
                                      s.ToString());
      }
      std::lock_guard lock(housekeeping_mu_);
      pausing_.erase(route.sandbox_id);
    });
    if (!posted) {
      std::lock_guard lock(housekeeping_mu_);
      pausing_.erase(id);
    }
  }
}

void Gateway::Handle(net::Request& request, net::Responder responder) {
  RoutingFields fields{request.headers.Get("E2b-Sandbox-Id"),
                       request.headers.Get("E2b-Sandbox-Port"), request.headers.Get("Host")};
  Result<SandboxAddress> address = ParseSandboxAddress(fields, options_.domain);
  if (!address.ok()) {
    counters_.Count(RequestResult::kBadRequest);
    responder.Send(JsonError(400, address.status().message()));
    return;
  }
  RelaySpan span = StartRelaySpan(request, *address);
  std::optional<RouteLookup> lookup = routes_.Lookup(address->sandbox_id);
  if (lookup && lookup->route->state == RouteState::kClosed) {
    base::Logger("gateway")->debug(
        "refused a request to an unclaimed pool member sandbox_id={} port={} remote={}",
        address->sandbox_id, address->port, request.remote);
    counters_.Count(RequestResult::kUnauthorized);
    Answered(span, 401);
    responder.Send(Unauthorized());
    return;
  }
  if (!lookup || lookup->route->state != RouteState::kRunning) {
    bool paused = lookup && lookup->route->state == RouteState::kPaused;
    if (paused && lookup->route->auto_resume && resumer_ != nullptr) {
      // Only an authorised request may wake a sandbox (the token survives pause).
      if (!Authorized(request, address->port, *lookup->route)) {
        counters_.Count(RequestResult::kUnauthorized);
        Answered(span, 401);
        responder.Send(UnauthorizedFor(request, address->port));
        return;
      }
      if (span) span->SetAttribute("warren.auto_resume", true);
      auto shared = std::make_shared<net::Responder>(std::move(responder));
      bool posted = dial_pool_.Post([this, shared, a = *address, l = *lookup, span] {
        ResumeAndRelay(std::move(*shared), a, l, span);
      });
      if (!posted) {
        Answered(span, 503);
        shared->Send(JsonError(503, "the gateway is shutting down"));
      }
      return;
    }
    counters_.Count(paused ? RequestResult::kPaused : RequestResult::kNotFound);
    Answered(span, 502);
    responder.Send(SandboxNotFound(address->sandbox_id));
    return;
  }
  if (!Authorized(request, address->port, *lookup->route)) {
    counters_.Count(RequestResult::kUnauthorized);
    Answered(span, 401);
    responder.Send(UnauthorizedFor(request, address->port));
    return;
  }
  Connect(std::move(responder), std::move(*address), std::move(*lookup), std::move(span));
}

bool Gateway::Authorized(const net::Request& request, uint16_t port, const Route& route) const {
  if (port != kEnvdPort) {
    if (route.traffic_token.empty()) return true;
    auto token = request.headers.Get("e2b-traffic-access-token");
    return token && base::ConstantTimeEquals(*token, route.traffic_token);
  }
  if (route.access_token.empty()) return true;
  // envd checks these itself: health probes are open, /files may carry a URL signature.
  if (request.method == "GET" && request.path == "/health") return true;
  if (request.path == "/files" && request.Query("signature")) return true;
  auto token = request.headers.Get("X-Access-Token");
  return token && base::ConstantTimeEquals(*token, route.access_token);
}

void Gateway::Connect(net::Responder responder, SandboxAddress address, RouteLookup lookup,
                      RelaySpan span) {
  if (options_.upstream_keepalive &&
      Relay(responder, address, lookup, base::UniqueFd(), /*pooled=*/true, span)) {
    return;
  }
  if (options_.dial_on_loop) {
    if (auto dialed = dialer_.DialNow(address.sandbox_id, address.port)) {
      if (dialed->ok()) {
        Relay(responder, address, lookup, std::move(*dialed).value(), /*pooled=*/false, span);
      } else {
        DialFailed(responder, address, dialed->status(), span);
      }
      return;
    }
  }
  auto shared = std::make_shared<net::Responder>(std::move(responder));
  bool posted = dial_pool_.Post([this, shared, a = std::move(address), l = std::move(lookup),
                                 span] { DialAndRelay(std::move(*shared), a, l, span); });
  if (!posted) {
    Answered(span, 503);
    shared->Send(JsonError(503, "the gateway is shutting down"));
  }
}

void Gateway::DialAndRelay(net::Responder responder, const SandboxAddress& address,
                           const RouteLookup& lookup, RelaySpan span) {
  Result<base::UniqueFd> fd = dialer_.Dial(address.sandbox_id, address.port, options_.dial_timeout);
  if (!fd.ok()) {
    DialFailed(responder, address, fd.status(), span);
    return;
  }
  Relay(responder, address, lookup, std::move(fd).value(), /*pooled=*/false, span);
}

void Gateway::DialFailed(net::Responder& responder, const SandboxAddress& address,
                         const Status& why, const RelaySpan& span) {
  StatusCode code = why.code();
  // Nothing listening on a sandbox's own port is the usual answer while its server starts
  // (clients poll for it): debug. envd not answering, or any other dial error, is a failure.
  bool port_not_open = code == StatusCode::kUnavailable && address.port != kEnvdPort;
  base::Logger("gateway")->log(port_not_open ? spdlog::level::debug : spdlog::level::warn,
                               "relay failed sandbox_id={} port={} step=dial cause=\"{}\"",
                               address.sandbox_id, address.port, why.ToString());
  Answered(span, 502);
  if (code == StatusCode::kNotFound || code == StatusCode::kFailedPrecondition) {
    counters_.Count(RequestResult::kNotFound);
    responder.Send(SandboxNotFound(address.sandbox_id));
  } else {
    counters_.Count(RequestResult::kPortNotOpen);
    responder.Send(PortNotOpen(address.sandbox_id, address.port));
  }
}

bool Gateway::Relay(net::Responder& responder, const SandboxAddress& address,
                    const RouteLookup& lookup, base::UniqueFd upstream, bool pooled,
                    const RelaySpan& span) {
  auto record = std::make_shared<RelayRecord>(routes_, address.sandbox_id);
  if (!routes_.AttachRelay(address.sandbox_id, lookup.generation, record)) {
    // The route went down since the lookup (killed or paused meanwhile).
    counters_.Count(RequestResult::kNotFound);
    Answered(span, 502);
    responder.Send(SandboxNotFound(address.sandbox_id));
    return true;
  }
  net::ProxyOptions options;
  options.idle_timeout = options_.relay_idle_timeout;
  if (span) {
    // The sandbox's work parents on this hop, in the caller's trace.
    options.set_request_headers.Set("traceparent", span->traceparent());
  }
  // on_done owns the record (and the span) until the relay ends.
  options.on_done = [record, port = address.port, pooled, span](const net::RelayOutcome& outcome) {
    record->Done();
    LogRelayEnd(outcome, port, *record, pooled);
    if (span) {
      span->SetAttribute("warren.upstream", pooled ? "reused" : "dialed");
      if (!outcome.ok()) {
        span->SetError(
            fmt::format("{}: {}", net::RelayStepName(outcome.failed_step), outcome.cause));
      }
      span->End();
    }
  };
  // A request in flight when its sandbox is killed or paused gets the answer a request made
  // just after would get, not a cut connection (the SDK's isRunning() is false exactly on it).
  options.abort_response = [record] { return SandboxNotFound(record->sandbox_id()); };
  const Route& route = *lookup.route;
  if (!route.mask_request_host.empty()) {
    std::string host = route.mask_request_host;
    for (size_t at; (at = host.find("${PORT}")) != std::string::npos;) {
      host.replace(at, 7, std::to_string(address.port));
    }
    options.set_request_headers.Set("Host", host);
  }
  // The sandbox's own code never sees the gateway's credentials for it.
  if (!route.traffic_token.empty()) {
    options.remove_request_headers.push_back("e2b-traffic-access-token");
  }
  if (options_.upstream_keepalive) {
    // Clean connections stay on the loop that relayed, for this sandbox port and route
    // generation only: none outlives its sandbox's incarnation.
    options.pool_key = net::UpstreamKey{address.sandbox_id, address.port, lookup.generation};
    options.pool_idle_timeout = address.port == options_.idle_upstreams.envd_port
                                    ? options_.idle_upstreams.envd_idle_timeout
                                    : options_.idle_upstreams.idle_timeout;
  }
  std::shared_ptr<net::ProxyHandle> handle;
  if (pooled) {
    // Inline on the loop: the relay cannot make progress before this handler returns.
    handle = responder.ProxyPooled(*options.pool_key, options);
    if (!handle) {
      record->Done();  // nothing idle on this loop: the caller dials
      return false;
    }
    counters_.upstream_reused.fetch_add(1, std::memory_order_relaxed);
    counters_.Count(RequestResult::kRelayed);
  } else {
    // Counted first: from a dial thread, the relay may be over before Proxy returns here, and a
    // client that has its response must find the request counted.
    counters_.upstream_dialed.fetch_add(1, std::memory_order_relaxed);
    counters_.Count(RequestResult::kRelayed);
    handle = responder.Proxy(std::move(upstream), std::move(options));
  }
  record->SetHandle(std::move(handle));
  return true;
}

void Gateway::ResumeAndRelay(net::Responder responder, const SandboxAddress& address,
                             const RouteLookup& lookup, RelaySpan span) {
  counters_.resumes.fetch_add(1, std::memory_order_relaxed);
  base::Logger("gateway")->info("auto-resume sandbox_id={}", address.sandbox_id);
  Status resumed = resumer_->Resume(*lookup.route, options_.resume_timeout);
  std::optional<RouteLookup> running;
  if (resumed.ok()) running = routes_.WaitRunning(address.sandbox_id, options_.resume_timeout);
  if (!running) {
    base::Logger("gateway")->warn("auto-resume failed sandbox_id={} error={}", address.sandbox_id,
                                  resumed.ok() ? "not running in time" : resumed.ToString());
    counters_.Count(RequestResult::kResumeFailed);
    Answered(span, 502);
    responder.Send(SandboxNotFound(address.sandbox_id));
    return;
  }
  if (running->route->access_token != lookup.route->access_token) {
    // Another claim took the sandbox meanwhile: this request was authorised for the old one.
    counters_.Count(RequestResult::kUnauthorized);
    Answered(span, 401);
    responder.Send(Unauthorized());
    return;
  }
  DialAndRelay(std::move(responder), address, *running, std::move(span));
}

std::vector<MetricSample> Gateway::MetricSamples() const {
  std::vector<MetricSample> out;
  for (int i = 0; i < kRequestResultCount; ++i) {
    auto result = static_cast<RequestResult>(i);
    out.push_back({"warren_gateway_requests_total",
                   "counter",
                   {{"result", RequestResultName(result)}},
                   static_cast<double>(counters_.Get(result))});
  }
  out.push_back({"warren_gateway_upstream_connections_total",
                 "counter",
                 {{"kind", "dialed"}},
                 static_cast<double>(counters_.upstream_dialed.load())});
  out.push_back({"warren_gateway_upstream_connections_total",
                 "counter",
                 {{"kind", "reused"}},
                 static_cast<double>(counters_.upstream_reused.load())});
  out.push_back({"warren_gateway_resumes_total",
                 "counter",
                 {},
                 static_cast<double>(counters_.resumes.load())});
  RouteTableStats stats = routes_.Stats();
  out.push_back({"warren_gateway_routes",
                 "gauge",
                 {{"state", "running"}},
                 static_cast<double>(stats.running)});
  out.push_back(
      {"warren_gateway_routes", "gauge", {{"state", "paused"}}, static_cast<double>(stats.paused)});
  out.push_back(
      {"warren_gateway_routes", "gauge", {{"state", "gone"}}, static_cast<double>(stats.gone)});
  // The reference's proxy gauge: the routes a request can take (a gone one only fences).
  out.push_back({"sandbox_routes", "gauge", {}, static_cast<double>(stats.running + stats.paused)});
  out.push_back(
      {"warren_gateway_routes", "gauge", {{"state", "closed"}}, static_cast<double>(stats.closed)});
  out.push_back({"warren_gateway_route_fences", "gauge", {}, static_cast<double>(stats.fences)});
  out.push_back(
      {"warren_gateway_open_relays", "gauge", {}, static_cast<double>(stats.open_relays)});
  for (const auto& [id, count] : stats.relays_per_sandbox) {
    out.push_back({"warren_gateway_sandbox_open_relays",
                   "gauge",
                   {{"sandbox_id", id}},
                   static_cast<double>(count)});
  }
  out.push_back({"warren_gateway_idle_upstream_connections",
                 "gauge",
                 {},
                 static_cast<double>(idle_upstream_count())});
  return out;
}

}  // namespace warren::gateway
