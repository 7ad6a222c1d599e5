#include "gateway/gateway.h"

#include <fmt/format.h>

#include "base/encoding.h"
#include "base/log.h"
#include "gateway/responses.h"

namespace warren::gateway {
namespace {

// The relay of one request, as the route table sees it: attached before the relay starts so a
// route going down in between still reaches it, and given the net handle once there is one.
// It also carries what the relay's callbacks need, so each callback captures one pointer.
// Thread-safe.
class RelayRecord final : public OpenRelay {
 public:
  RelayRecord(RouteTable& routes, IdleUpstreams& idle, const SandboxAddress& address,
              uint64_t generation)
      : routes_(routes),
        idle_(idle),
        sandbox_id_(address.sandbox_id),
        port_(address.port),
        generation_(generation) {}

  void SetHandle(std::shared_ptr<net::ProxyHandle> handle) {
    bool abort;
    {
      std::lock_guard lock(mu_);
      handle_ = handle;
      abort = abort_requested_;
    }
    if (abort) handle->Abort();
  }

  void Abort() override {
    std::shared_ptr<net::ProxyHandle> handle;
    {
      std::lock_guard lock(mu_);
      abort_requested_ = true;
      handle = handle_;
    }
    if (handle) handle->Abort();
  }

  // The relay ended (net's on_done).
  void Done() { routes_.DetachRelay(sandbox_id_, this); }
  // The upstream connection is clean and may serve the next request (net's on_upstream_idle).
  void Idle(base::UniqueFd fd) { idle_.Put(sandbox_id_, port_, generation_, std::move(fd)); }

 private:
  RouteTable& routes_;
  IdleUpstreams& idle_;
  const std::string sandbox_id_;
  const uint16_t port_;
  const uint64_t generation_;
  std::mutex mu_;
  std::shared_ptr<net::ProxyHandle> handle_;  // guarded by mu_
  bool abort_requested_ = false;              // guarded by mu_
};

// A Responder is move-only and std::function wants copies: jobs carry it in a shared_ptr.
using SharedResponder = std::shared_ptr<net::Responder>;

}  // namespace

Result<std::unique_ptr<Gateway>> Gateway::Start(GatewayOptions options, RouteTable& routes,
                                                SandboxDialer& dialer, Resumer* resumer,
                                                base::Clock& clock) {
  std::unique_ptr<Gateway> gateway(new Gateway(std::move(options), routes, dialer, resumer, clock));
  Gateway* g = gateway.get();
  net::Router router;
  router.SetFallback(
      [g](net::Request&& request, net::Responder responder) {
        // The request stays where it is (net relays it from there); only the responder moves.
        g->Handle(request, std::move(responder));
      },
      net::RouteOptions{.stream_body = true, .max_body_bytes = g->options_.max_body_bytes});
  auto server = net::HttpServer::Start(g->options_.server, std::move(router));
  if (!server.ok()) return server.status().WithPrefix("gateway listener");
  g->server_ = std::move(server).value();
  routes.SetDownObserver([g](const std::string& sandbox_id) { g->idle_.DropSandbox(sandbox_id); });
  g->housekeeping_ = std::thread([g] { g->Housekeeping(); });
  base::Logger("gateway")->info("gateway listening address={} port={} domain={}",
                                g->options_.server.address, g->server_->port(),
                                g->options_.domain.empty() ? "*" : g->options_.domain);
  return gateway;
}

Gateway::Gateway(GatewayOptions options, RouteTable& routes, SandboxDialer& dialer,
                 Resumer* resumer, base::Clock& clock)
    : options_(std::move(options)),
      routes_(routes),
      dialer_(dialer),
      resumer_(resumer),
      idle_(clock, options_.idle_upstreams),
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
    idle_.Sweep();
    routes_.SweepFences();
    lock.lock();
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
  std::optional<RouteLookup> lookup = routes_.Lookup(address->sandbox_id);
  if (!lookup || lookup->route->state != RouteState::kRunning) {
    bool paused = lookup && lookup->route->state == RouteState::kPaused;
    if (paused && lookup->route->auto_resume && resumer_ != nullptr) {
      // Only an authorised request may wake a sandbox (the token survives pause).
      if (!Authorized(request, address->port, *lookup->route)) {
        counters_.Count(RequestResult::kUnauthorized);
        responder.Send(Unauthorized());
        return;
      }
      auto shared = std::make_shared<net::Responder>(std::move(responder));
      bool posted = dial_pool_.Post(
          [this, shared, a = *address, l = *lookup] { ResumeAndRelay(std::move(*shared), a, l); });
      if (!posted) shared->Send(JsonError(503, "the gateway is shutting down"));
      return;
    }
    counters_.Count(paused ? RequestResult::kPaused : RequestResult::kNotFound);
    responder.Send(SandboxNotFound(address->sandbox_id));
    return;
  }
  if (!Authorized(request, address->port, *lookup->route)) {
    counters_.Count(RequestResult::kUnauthorized);
    responder.Send(Unauthorized());
    return;
  }
  Connect(std::move(responder), std::move(*address), std::move(*lookup));
}

bool Gateway::Authorized(const net::Request& request, uint16_t port, const Route& route) const {
  if (port != kEnvdPort || route.access_token.empty()) return true;
  // envd checks these itself: health probes are open, /files may carry a URL signature.
  if (request.method == "GET" && request.path == "/health") return true;
  if (request.path == "/files" && request.Query("signature")) return true;
  auto token = request.headers.Get("X-Access-Token");
  return token && base::ConstantTimeEquals(*token, route.access_token);
}

void Gateway::Connect(net::Responder responder, SandboxAddress address, RouteLookup lookup) {
  if (options_.upstream_keepalive) {
    base::UniqueFd idle = idle_.Take(address.sandbox_id, address.port, lookup.generation);
    if (idle) {
      counters_.upstream_reused.fetch_add(1, std::memory_order_relaxed);
      Relay(std::move(responder), address, lookup, std::move(idle));
      return;
    }
  }
  auto shared = std::make_shared<net::Responder>(std::move(responder));
  bool posted = dial_pool_.Post([this, shared, a = std::move(address), l = std::move(lookup)] {
    DialAndRelay(std::move(*shared), a, l);
  });
  if (!posted) shared->Send(JsonError(503, "the gateway is shutting down"));
}

void Gateway::DialAndRelay(net::Responder responder, const SandboxAddress& address,
                           const RouteLookup& lookup) {
  Result<base::UniqueFd> fd = dialer_.Dial(address.sandbox_id, address.port, options_.dial_timeout);
  if (!fd.ok()) {
    StatusCode code = fd.status().code();
    base::Logger("gateway")->debug("dial failed sandbox_id={} port={} error={}", address.sandbox_id,
                                   address.port, fd.status().ToString());
    if (code == StatusCode::kNotFound || code == StatusCode::kFailedPrecondition) {
      counters_.Count(RequestResult::kNotFound);
      responder.Send(SandboxNotFound(address.sandbox_id));
    } else {
      counters_.Count(RequestResult::kPortNotOpen);
      responder.Send(PortNotOpen(address.sandbox_id, address.port));
    }
    return;
  }
  counters_.upstream_dialed.fetch_add(1, std::memory_order_relaxed);
  Relay(std::move(responder), address, lookup, std::move(fd).value());
}

void Gateway::Relay(net::Responder responder, const SandboxAddress& address,
                    const RouteLookup& lookup, base::UniqueFd upstream) {
  auto record = std::make_shared<RelayRecord>(routes_, idle_, address, lookup.generation);
  if (!routes_.AttachRelay(address.sandbox_id, lookup.generation, record)) {
    // The route went down since the lookup (killed or paused meanwhile).
    counters_.Count(RequestResult::kNotFound);
    responder.Send(SandboxNotFound(address.sandbox_id));
    return;
  }
  net::ProxyOptions options;
  options.idle_timeout = options_.relay_idle_timeout;
  // on_done owns the record until the relay ends; on_upstream_idle runs before on_done, inside
  // the relay, so a plain pointer is enough there.
  options.on_done = [record] { record->Done(); };
  if (options_.upstream_keepalive) {
    options.on_upstream_idle = [raw = record.get()](base::UniqueFd fd) {
      raw->Idle(std::move(fd));
    };
  }
  counters_.Count(RequestResult::kRelayed);
  record->SetHandle(responder.Proxy(std::move(upstream), std::move(options)));
}

void Gateway::ResumeAndRelay(net::Responder responder, const SandboxAddress& address,
                             const RouteLookup& lookup) {
  counters_.resumes.fetch_add(1, std::memory_order_relaxed);
  base::Logger("gateway")->info("auto-resume sandbox_id={}", address.sandbox_id);
  Status resumed = resumer_->Resume(*lookup.route, options_.resume_timeout);
  std::optional<RouteLookup> running;
  if (resumed.ok()) running = routes_.WaitRunning(address.sandbox_id, options_.resume_timeout);
  if (!running) {
    base::Logger("gateway")->warn("auto-resume failed sandbox_id={} error={}", address.sandbox_id,
                                  resumed.ok() ? "not running in time" : resumed.ToString());
    counters_.Count(RequestResult::kResumeFailed);
    responder.Send(SandboxNotFound(address.sandbox_id));
    return;
  }
  if (running->route->access_token != lookup.route->access_token) {
    // Another claim took the sandbox meanwhile: this request was authorised for the old one.
    counters_.Count(RequestResult::kUnauthorized);
    responder.Send(Unauthorized());
    return;
  }
  DialAndRelay(std::move(responder), address, *running);
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
  out.push_back({"warren_gateway_route_fences", "gauge", {}, static_cast<double>(stats.fences)});
  out.push_back(
      {"warren_gateway_open_relays", "gauge", {}, static_cast<double>(stats.open_relays)});
  for (const auto& [id, count] : stats.relays_per_sandbox) {
    out.push_back({"warren_gateway_sandbox_open_relays",
                   "gauge",
                   {{"sandbox_id", id}},
                   static_cast<double>(count)});
  }
  out.push_back(
      {"warren_gateway_idle_upstream_connections", "gauge", {}, static_cast<double>(idle_.size())});
  return out;
}

}  // namespace warren::gateway
