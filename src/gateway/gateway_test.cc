// The gateway on real sockets, without root: "sandboxes" here are HTTP servers on loopback
// ports, reached through a SandboxDialer that maps (sandbox id, port) to them. The same
// behaviour against real sandboxes and their network namespaces is in
// tests/privileged/gateway/.
#include "gateway/gateway.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include <atomic>
#include <map>
#include <thread>

#include "base/log.h"
#include "base/scope_guard.h"
#include "gateway/testing/loopback_dialer.h"
#include "net/dial.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/testing/notification.h"
#include "net/testing/raw_client.h"
#include "trace/testing/collecting_sink.h"

namespace warren::gateway {
namespace {

using namespace std::chrono_literals;
using net::testing::Notification;
using net::testing::RawClient;
using net::testing::RawListener;

using testing::LoopbackDialer;

Route RunningRoute(const std::string& id, int64_t rv, const std::string& token = "") {
  Route r;
  r.sandbox_id = id;
  r.namespace_ = "default";
  r.name = id;
  r.uid = "uid-" + id;
  r.state = RouteState::kRunning;
  r.access_token = token;
  r.resource_version = rv;
  return r;
}

class GatewayTest : public ::testing::Test {
 protected:
  // An upstream standing for sandbox `name`: /who answers its name and what it saw.
  std::unique_ptr<net::HttpServer> StartUpstream(const std::string& name) {
    net::Router router;
    router.Add("GET", "/who", [name](net::Request&& req, net::Responder r) {
      net::Response resp = net::Response::Text(200, name);
      resp.headers.Set("X-Upstream-Remote", req.remote);
      resp.headers.Set("X-Saw-Token", std::string(req.headers.Get("X-Access-Token").value_or("")));
      resp.headers.Set("X-Saw-Traffic-Token",
                       std::string(req.headers.Get("e2b-traffic-access-token").value_or("")));
      resp.headers.Set("X-Saw-Host", std::string(req.headers.Get("Host").value_or("")));
      resp.headers.Set("X-Saw-Traceparent",
                       std::string(req.headers.Get("traceparent").value_or("")));
      r.Send(std::move(resp));
    });
    router.Add("GET", "/health",
               [](net::Request&&, net::Responder r) { r.Send(net::Response::Empty(204)); });
    router.Add("GET", "/files",
               [](net::Request&&, net::Responder r) { r.Send(net::Response::Text(200, "file")); });
    router.Add(
        "GET", "/forever",
        [this](net::Request&&, net::Responder r) {
          auto stream = r.Stream(200, {});
          stream_started_.Notify();
          while (stream->Write("tick;")) std::this_thread::sleep_for(5ms);
        },
        net::RouteOptions{.blocking = true});
    router.Add(
        "GET", "/hang",
        [this](net::Request&&, net::Responder r) {
          hang_started_.Notify();
          hang_release_.WaitFor(20s);
          r.Send(net::Response::Text(200, "late"));
        },
        net::RouteOptions{.blocking = true});
    auto server = net::HttpServer::Start(net::ServerOptions{.loop_threads = 1}, std::move(router));
    EXPECT_TRUE(server.ok()) << server.status();
    return std::move(*server);
  }

  void StartGateway(GatewayOptions options = {}, Resumer* resumer = nullptr) {
    options.server.port = 0;
    options.server.loop_threads = 2;
    auto g = Gateway::Start(std::move(options), table_, dialer_, resumer);
    ASSERT_TRUE(g.ok()) << g.status();
    gateway_ = std::move(*g);
  }

  net::Response Get(const std::string& target, net::Headers headers) {
    auto client = net::HttpClient::ForAddress("127.0.0.1:" + std::to_string(gateway_->port()));
    EXPECT_TRUE(client.ok());
    auto resp = (*client)->Do({.target = target, .headers = std::move(headers)});
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? *resp : net::Response{};
  }
  // One keep-alive client: its requests ride one connection, served by one gateway loop.
  std::unique_ptr<net::HttpClient> Client() {
    auto client = net::HttpClient::ForAddress("127.0.0.1:" + std::to_string(gateway_->port()));
    EXPECT_TRUE(client.ok());
    return std::move(*client);
  }
  net::Response Get(net::HttpClient& client, const std::string& target, net::Headers headers) {
    auto resp = client.Do({.target = target, .headers = std::move(headers)});
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? *resp : net::Response{};
  }
  // Idle connections are closed on the gateway's loops, moments after the route changes.
  bool WaitIdleUpstreams(size_t n) {
    for (int i = 0; i < 500 && gateway_->idle_upstream_count() != n; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    return gateway_->idle_upstream_count() == n;
  }
  static net::Headers Routing(const std::string& id, std::optional<std::string> port = {}) {
    net::Headers h;
    h.Set("E2b-Sandbox-Id", id);
    if (port) h.Set("E2b-Sandbox-Port", *port);
    return h;
  }

  RouteTable table_;
  LoopbackDialer dialer_;
  Notification stream_started_;
  Notification hang_started_, hang_release_;  // /hang answers once released
  std::unique_ptr<Gateway> gateway_;
};

TEST_F(GatewayTest, RoutesByHeadersAndByHost) {
  auto a = StartUpstream("sandbox-a");
  auto b = StartUpstream("sandbox-b");
  auto b_web = StartUpstream("sandbox-b:3000");
  dialer_.Map("ia", kEnvdPort, a->port());
  dialer_.Map("ib", kEnvdPort, b->port());
  dialer_.Map("ib", 3000, b_web->port());
  table_.Upsert(RunningRoute("ia", 1));
  table_.Upsert(RunningRoute("ib", 2));
  StartGateway();

  EXPECT_EQ(Get("/who", Routing("ia")).body, "sandbox-a");
  EXPECT_EQ(Get("/who", Routing("ib")).body, "sandbox-b");
  EXPECT_EQ(Get("/who", Routing("ib", "3000")).body, "sandbox-b:3000");
  net::Headers host;
  host.Set("Host", "3000-ib.sbx.test");
  EXPECT_EQ(Get("/who", host).body, "sandbox-b:3000");
  host.Set("Host", "49983-ia.sbx.test:7781");
  EXPECT_EQ(Get("/who", host).body, "sandbox-a");
  // Headers win over Host.
  net::Headers both = Routing("ia");
  both.Set("Host", "3000-ib.sbx.test");
  EXPECT_EQ(Get("/who", both).body, "sandbox-a");
  EXPECT_EQ(gateway_->counters().Get(RequestResult::kRelayed), 6u);
}

TEST_F(GatewayTest, ErrorBodiesAreExactlyE2Bs) {
  auto a = StartUpstream("sandbox-a");
  dialer_.Map("ia", kEnvdPort, a->port());
  table_.Upsert(RunningRoute("ia", 1));
  Route paused = RunningRoute("ipaused", 1);
  paused.state = RouteState::kPaused;
  table_.Upsert(paused);
  StartGateway();

  net::Response unknown = Get("/who", Routing("inope"));
  EXPECT_EQ(unknown.status, 502);
  EXPECT_EQ(unknown.headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(unknown.body,
            R"({"sandboxId":"inope","message":"The sandbox was not found","code":502})");
  net::Response p = Get("/health", Routing("ipaused"));
  EXPECT_EQ(p.status, 502);
  EXPECT_EQ(p.body, R"({"sandboxId":"ipaused","message":"The sandbox was not found","code":502})");
  net::Response closed = Get("/who", Routing("ia", "8080"));
  EXPECT_EQ(closed.status, 502);
  EXPECT_EQ(closed.headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(closed.body,
            R"({"sandboxId":"ia","message":"The sandbox is running but port is not open",)"
            R"("port":8080,"code":502})");

  net::Response bad_port = Get("/who", Routing("ia", "99999"));
  EXPECT_EQ(bad_port.status, 400);
  EXPECT_EQ(bad_port.headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(bad_port.body,
            R"j({"code":400,"message":"E2b-Sandbox-Port header \"99999\" is not a port number )j"
            R"j((1-65535)"})j");
  net::Headers localhost;
  localhost.Set("Host", "localhost");
  net::Response missing = Get("/who", localhost);
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(missing.body.find("E2b-Sandbox-Id header"), std::string::npos) << missing.body;
  EXPECT_NE(missing.body.find(R"(Host \"localhost\" is not)"), std::string::npos) << missing.body;

  EXPECT_EQ(gateway_->counters().Get(RequestResult::kNotFound), 1u);
  EXPECT_EQ(gateway_->counters().Get(RequestResult::kPaused), 1u);
  EXPECT_EQ(gateway_->counters().Get(RequestResult::kPortNotOpen), 1u);
  EXPECT_EQ(gateway_->counters().Get(RequestResult::kBadRequest), 2u);
  EXPECT_EQ(gateway_->counters().Get(RequestResult::kRelayed), 0u);
}

TEST_F(GatewayTest, DialsOnTheLoopWhenTheDialerCanAndOnADialThreadWhenItDeclines) {
  auto a = StartUpstream("sandbox-a");
  auto b = StartUpstream("sandbox-b");
  dialer_.Map("ia", 3000, a->port());
  dialer_.Map("ib", 3000, b->port());
  table_.Upsert(RunningRoute("ia", 1));
  table_.Upsert(RunningRoute("ib", 2));
  table_.Upsert(RunningRoute("igone", 3));  // routed, but the node no longer runs it
  dialer_.EnableDialNow({"ib"});            // ib is held by a lifecycle operation
  GatewayOptions options;
  options.upstream_keepalive = false;  // every request dials
  StartGateway(options);

  EXPECT_EQ(Get("/who", Routing("ia", "3000")).body, "sandbox-a");
  EXPECT_EQ(dialer_.dials_now(), 1);
  EXPECT_EQ(dialer_.dials(), 0) << "dialed on the loop: no dial thread";
  net::Response closed = Get("/who", Routing("ia", "8080"));
  EXPECT_EQ(closed.status, 502);
  EXPECT_EQ(closed.body,
            R"({"sandboxId":"ia","message":"The sandbox is running but port is not open",)"
            R"("port":8080,"code":502})");
  net::Response gone = Get("/who", Routing("igone", "3000"));
  EXPECT_EQ(gone.status, 502);
  EXPECT_EQ(gone.body, R"({"sandboxId":"igone","message":"The sandbox was not found","code":502})");
  EXPECT_EQ(dialer_.dials(), 0);

  // Declined: the same request still arrives, through a dial thread.
  EXPECT_EQ(Get("/who", Routing("ib", "3000")).body, "sandbox-b");
  EXPECT_EQ(dialer_.dials(), 1);
  EXPECT_EQ(gateway_->counters().Get(RequestResult::kRelayed), 2u);
  EXPECT_EQ(gateway_->counters().Get(RequestResult::kPortNotOpen), 1u);
  EXPECT_EQ(gateway_->counters().Get(RequestResult::kNotFound), 1u);
  EXPECT_EQ(gateway_->counters().upstream_dialed.load(), 2u);
}

TEST_F(GatewayTest, EnvdTrafficNeedsTheAccessToken) {
  auto envd = StartUpstream("envd");
  auto web = StartUpstream("web");
  dialer_.Map("ia", kEnvdPort, envd->port());
  dialer_.Map("ia", 3000, web->port());
  table_.Upsert(RunningRoute("ia", 1, "s3cret"));
  StartGateway();
  const std::string kUnauthorized =
      R"({"code":401,"message":"unauthorized access, please provide a valid access token or )"
      R"(method signing if supported"})";

  net::Response none = Get("/who", Routing("ia"));
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(none.body, kUnauthorized);
  net::Headers wrong = Routing("ia");
  wrong.Set("X-Access-Token", "s3cre");
  EXPECT_EQ(Get("/who", wrong).body, kUnauthorized);
  wrong.Set("X-Access-Token", "s3cret2");
  EXPECT_EQ(Get("/who", wrong).status, 401);

  net::Headers right = Routing("ia");
  right.Set("X-Access-Token", "s3cret");
  net::Response ok = Get("/who", right);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "envd");
  EXPECT_EQ(ok.headers.Get("X-Saw-Token"), "s3cret") << "envd checks the token too";

  // envd's own exemptions, and ports other than envd's, pass without it.
  EXPECT_EQ(Get("/health", Routing("ia")).status, 204);
  EXPECT_EQ(Get("/files?path=a.txt&signature=v1_x", Routing("ia")).body, "file");
  // An unsigned file URL gets envd's own answer to it.
  net::Response unsigned_url = Get("/files?path=a.txt", Routing("ia"));
  EXPECT_EQ(unsigned_url.status, 401);
  EXPECT_EQ(unsigned_url.body, R"({"code":401,"message":"missing signature query parameter"})");
  EXPECT_EQ(Get("/files?path=a.txt", wrong).body, kUnauthorized) << "a wrong token is no URL";
  EXPECT_EQ(Get("/who", Routing("ia", "3000")).body, "web");
  EXPECT_EQ(gateway_->counters().Get(RequestResult::kUnauthorized), 5u);
}

TEST_F(GatewayTest, APrivateSandboxsPortsNeedTheTrafficTokenAndEnvdKeepsItsOwn) {
  auto envd = StartUpstream("envd");
  auto web = StartUpstream("web");
  dialer_.Map("ip", kEnvdPort, envd->port());
  dialer_.Map("ip", 3000, web->port());
  Route route = RunningRoute("ip", 1, "s3cret");
  route.traffic_token = "tr4ffic";
  table_.Upsert(route);
  StartGateway();

  EXPECT_EQ(Get("/who", Routing("ip", "3000")).status, 401);
  net::Headers wrong = Routing("ip", "3000");
  wrong.Set("e2b-traffic-access-token", "tr4ff1c");
  EXPECT_EQ(Get("/who", wrong).status, 401);
  net::Headers envd_token = Routing("ip", "3000");
  envd_token.Set("X-Access-Token", "s3cret");
  EXPECT_EQ(Get("/who", envd_token).status, 401) << "envd's token is not the traffic token";
  net::Headers right = Routing("ip", "3000");
  right.Set("E2B-Traffic-Access-Token", "tr4ffic");
  EXPECT_EQ(Get("/who", right).body, "web");

  EXPECT_EQ(Get("/who", right).headers.Get("X-Saw-Traffic-Token"), "")
      << "the sandbox's code never sees the token";

  net::Headers to_envd = Routing("ip");
  to_envd.Set("X-Access-Token", "s3cret");
  EXPECT_EQ(Get("/who", to_envd).body, "envd") << "envd's port answers to envd's token alone";
}

TEST_F(GatewayTest, AMaskedHostIsWhatTheSandboxsPortsSee) {
  auto web = StartUpstream("web");
  dialer_.Map("im", 3000, web->port());
  Route route = RunningRoute("im", 1);
  route.mask_request_host = "localhost:${PORT}";
  table_.Upsert(route);
  table_.Upsert(RunningRoute("iu", 1));
  dialer_.Map("iu", 3000, web->port());
  StartGateway();
  EXPECT_EQ(Get("/who", Routing("im", "3000")).headers.Get("X-Saw-Host"), "localhost:3000");
  EXPECT_NE(Get("/who", Routing("iu", "3000")).headers.Get("X-Saw-Host"), "localhost:3000")
      << "unmasked: the client's Host";
}

// W3C trace context belongs to the sandbox's own services: the gateway passes it through as sent.
TEST_F(GatewayTest, TraceparentReachesTheSandboxUntouched) {
  auto web = StartUpstream("web");
  dialer_.Map("it", 3000, web->port());
  table_.Upsert(RunningRoute("it", 1));
  StartGateway();
  const std::string parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  net::Headers h = Routing("it", "3000");
  h.Set("traceparent", parent);
  EXPECT_EQ(Get("/who", h).headers.Get("X-Saw-Traceparent"), parent);
}

// With tracing on, a traced request gets the gateway's span, and the sandbox a traceparent in
// the same trace naming that span; an untraced request passes untouched and makes no span.
TEST_F(GatewayTest, ATracedRequestIsASpanTheSandboxParentsOn) {
  trace::testing::CollectingSink sink;
  auto web = StartUpstream("web");
  dialer_.Map("it", 3000, web->port());
  table_.Upsert(RunningRoute("it", 1));
  StartGateway();
  const auto caller =
      *base::ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  net::Headers h = Routing("it", "3000");
  h.Set("traceparent", base::FormatTraceparent(caller));
  auto client = Client();
  net::Response traced = Get(*client, "/who", h);
  ASSERT_EQ(traced.status, 200);
  auto seen = base::ParseTraceparent(traced.headers.Get("X-Saw-Traceparent").value_or(""));
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->trace_id, caller.trace_id);
  EXPECT_NE(seen->span_id, caller.span_id);
  // A second request on the same connection rides a kept upstream connection: traced alike.
  ASSERT_EQ(Get(*client, "/who", h).status, 200);
  // Neither traced nor spanned without a traceparent.
  net::Response plain = Get(*client, "/who", Routing("it", "3000"));
  EXPECT_EQ(plain.headers.Get("X-Saw-Traceparent"), "");
  // A traced request to a sandbox that is not there: a span that says so.
  net::Headers gone = Routing("gone", "3000");
  gone.Set("traceparent", base::FormatTraceparent(caller));
  EXPECT_EQ(Get("/who", gone).status, 502);

  std::vector<trace::SpanData> spans;
  for (int i = 0; i < 200 && (spans = sink.spans()).size() < 3; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(spans.size(), 3u);
  auto attribute = [](const trace::SpanData& s, std::string_view key) {
    for (const auto& [k, v] : s.attributes) {
      if (k == key) return v;
    }
    return trace::AttributeValue(std::string("<none>"));
  };
  const trace::SpanData* relayed = nullptr;
  for (const auto& s : spans) {
    EXPECT_EQ(s.name, "gateway.relay");
    EXPECT_EQ(s.context.trace_id, caller.trace_id);
    EXPECT_EQ(s.parent_span_id, caller.span_id);
    EXPECT_EQ(s.kind, trace::SpanKind::kServer);
    EXPECT_LE(s.start_unix_nanos, s.end_unix_nanos);
    if (s.context.span_id == seen->span_id) relayed = &s;
  }
  ASSERT_NE(relayed, nullptr) << "the sandbox's parent is the gateway's span";
  EXPECT_FALSE(relayed->error);
  EXPECT_EQ(attribute(*relayed, "warren.sandbox_id"), trace::AttributeValue(std::string("it")));
  EXPECT_EQ(attribute(*relayed, "warren.sandbox_port"), trace::AttributeValue(int64_t{3000}));
  EXPECT_EQ(attribute(*relayed, "warren.upstream"), trace::AttributeValue(std::string("dialed")));
  int reused = 0, failed = 0;
  for (const auto& s : spans) {
    if (attribute(s, "warren.upstream") == trace::AttributeValue(std::string("reused"))) ++reused;
    if (s.error) {
      ++failed;
      EXPECT_EQ(attribute(s, "http.response.status_code"), trace::AttributeValue(int64_t{502}));
      EXPECT_EQ(attribute(s, "warren.sandbox_id"), trace::AttributeValue(std::string("gone")));
    }
  }
  EXPECT_EQ(reused, 1);
  EXPECT_EQ(failed, 1);
}

// Idle upstream connections stay on the gateway loop that relayed over them, so requests on one
// client connection (one loop) reuse them.
TEST_F(GatewayTest, UpstreamConnectionsAreReusedPerSandboxPort) {
  auto a = StartUpstream("sandbox-a");
  dialer_.Map("ia", kEnvdPort, a->port());
  table_.Upsert(RunningRoute("ia", 1));
  StartGateway();
  auto client = Client();
  net::Response first = Get(*client, "/who", Routing("ia"));
  net::Response second = Get(*client, "/who", Routing("ia"));
  EXPECT_EQ(second.body, "sandbox-a");
  EXPECT_EQ(first.headers.Get("X-Upstream-Remote"), second.headers.Get("X-Upstream-Remote"))
      << "the second request dialed again";
  EXPECT_EQ(dialer_.dials(), 1);
  EXPECT_EQ(gateway_->counters().upstream_reused.load(), 1u);
  EXPECT_EQ(gateway_->idle_upstream_count(), 1u);
  // A pause drops the idle connections with the route's generation.
  Route paused = RunningRoute("ia", 2);
  paused.state = RouteState::kPaused;
  table_.Upsert(paused);
  EXPECT_TRUE(WaitIdleUpstreams(0));
  table_.Upsert(RunningRoute("ia", 3));
  net::Response third = Get(*client, "/who", Routing("ia"));
  EXPECT_EQ(third.body, "sandbox-a");
  EXPECT_EQ(dialer_.dials(), 2);
}

// A sandbox server that closes an idle keep-alive connection (its own idle timeout) or writes
// on it unasked: the gateway dials a fresh connection instead of sending a request into it.
TEST_F(GatewayTest, AnIdleUpstreamTheServerClosedOrWroteOnIsNotUsed) {
  auto listener = RawListener::Listen();
  ASSERT_TRUE(listener.ok());
  dialer_.Map("ia", 8080, listener->port());
  table_.Upsert(RunningRoute("ia", 1));
  StartGateway();
  Notification closed, chatted;
  std::thread upstream([&] {
    auto first = listener->Accept();
    if (!first.ok() || !first->ReadUntil("\r\n\r\n").ok()) return;
    (void)first->Send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none");
    first->Close();
    closed.Notify();
    auto second = listener->Accept();
    if (!second.ok() || !second->ReadUntil("\r\n\r\n").ok()) return;
    (void)second->Send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo");
    (void)second->Send("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n");
    chatted.Notify();
    auto third = listener->Accept();
    if (!third.ok() || !third->ReadUntil("\r\n\r\n").ok()) return;
    (void)third->Send("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nthree");
    third->WaitClosed();
  });
  auto client = Client();
  EXPECT_EQ(Get(*client, "/", Routing("ia", "8080")).body, "one");
  ASSERT_TRUE(closed.WaitFor(10s));
  EXPECT_EQ(Get(*client, "/", Routing("ia", "8080")).body, "two");
  ASSERT_TRUE(chatted.WaitFor(10s));
  EXPECT_EQ(Get(*client, "/", Routing("ia", "8080")).body, "three");
  EXPECT_EQ(dialer_.dials(), 3);
  EXPECT_EQ(gateway_->counters().upstream_reused.load(), 0u);
  gateway_->Shutdown(0ms);  // closes the third connection, which the upstream waits for
  upstream.join();
}

// Killing a sandbox closes the gateway's idle connections into it, not only its open relays.
TEST_F(GatewayTest, RemovingTheRouteClosesItsIdleUpstreams) {
  auto listener = RawListener::Listen();
  ASSERT_TRUE(listener.ok());
  dialer_.Map("ia", kEnvdPort, listener->port());
  table_.Upsert(RunningRoute("ia", 1));
  StartGateway();
  std::atomic<bool> upstream_saw_close{false};
  Notification answered;
  std::thread upstream([&] {
    auto conn = listener->Accept();
    if (!conn.ok() || !conn->ReadUntil("\r\n\r\n").ok()) return;
    (void)conn->Send("HTTP/1.1 204 No Content\r\n\r\n");
    answered.Notify();
    upstream_saw_close = conn->WaitClosed(10s);
  });
  auto client = Client();
  EXPECT_EQ(Get(*client, "/health", Routing("ia")).status, 204);
  ASSERT_TRUE(answered.WaitFor(10s));
  EXPECT_TRUE(WaitIdleUpstreams(1));
  EXPECT_TRUE(table_.Remove("ia", 2));
  upstream.join();
  EXPECT_TRUE(upstream_saw_close.load()) << "the idle connection outlived its sandbox";
  EXPECT_TRUE(WaitIdleUpstreams(0));
}

TEST_F(GatewayTest, KeepAliveCanBeTurnedOff) {
  auto a = StartUpstream("sandbox-a");
  dialer_.Map("ia", kEnvdPort, a->port());
  table_.Upsert(RunningRoute("ia", 1));
  StartGateway(GatewayOptions{.upstream_keepalive = false});
  Get("/who", Routing("ia"));
  Get("/who", Routing("ia"));
  EXPECT_EQ(dialer_.dials(), 2);
  EXPECT_EQ(gateway_->idle_upstream_count(), 0u);
}

TEST_F(GatewayTest, RemovingTheRouteCutsOpenStreamsAndThenAnswers502) {
  auto a = StartUpstream("sandbox-a");
  dialer_.Map("ia", kEnvdPort, a->port());
  table_.Upsert(RunningRoute("ia", 1));
  StartGateway();
  auto c = RawClient::Connect(gateway_->port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->Send("GET /forever HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ia\r\n\r\n").ok());
  ASSERT_TRUE(c->ReadUntil("tick;").ok()) << c->received();
  auto samples = gateway_->MetricSamples();
  bool saw_relay_gauge = false;
  for (const auto& s : samples) {
    if (s.name == "warren_gateway_sandbox_open_relays" && s.labels.at("sandbox_id") == "ia") {
      saw_relay_gauge = s.value == 1;
    }
  }
  EXPECT_TRUE(saw_relay_gauge);

  EXPECT_TRUE(table_.Remove("ia", 2));
  ASSERT_TRUE(c->WaitClosed()) << "the stream outlived its sandbox";
  EXPECT_EQ(c->received().find("\r\n0\r\n\r\n"), std::string::npos)
      << "the stream ended cleanly instead of being cut";
  net::Response after = Get("/who", Routing("ia"));
  EXPECT_EQ(after.status, 502);
  EXPECT_EQ(after.body, R"({"sandboxId":"ia","message":"The sandbox was not found","code":502})");
  for (int i = 0; i < 200 && table_.Stats().open_relays > 0; ++i) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(table_.Stats().open_relays, 0u);
}

TEST_F(GatewayTest, ARequestInFlightWhenTheRouteGoesDownIsAnswered502) {
  // The SDK's isRunning() polls /health while a timeout kills the sandbox: the request caught
  // in flight gets the same 502 as the next one, not a cut connection (a thrown fetch error).
  auto a = StartUpstream("sandbox-a");
  auto unblock = base::ScopeExit([&] { hang_release_.Notify(); });
  dialer_.Map("ia", kEnvdPort, a->port());
  table_.Upsert(RunningRoute("ia", 1));
  StartGateway();
  auto c = RawClient::Connect(gateway_->port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->Send("GET /hang HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ia\r\n\r\n").ok());
  ASSERT_TRUE(hang_started_.WaitFor());
  EXPECT_TRUE(table_.Remove("ia", 2));
  auto resp = c->ReadResponse();
  ASSERT_TRUE(resp.ok()) << resp.status() << " received: " << c->received();
  EXPECT_EQ(resp->status, 502);
  EXPECT_EQ(resp->body, R"({"sandboxId":"ia","message":"The sandbox was not found","code":502})");
}

TEST_F(GatewayTest, ShutdownEndsRelaysAndIsIdempotent) {
  auto a = StartUpstream("sandbox-a");
  dialer_.Map("ia", kEnvdPort, a->port());
  table_.Upsert(RunningRoute("ia", 1));
  StartGateway();
  auto c = RawClient::Connect(gateway_->port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->Send("GET /forever HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ia\r\n\r\n").ok());
  ASSERT_TRUE(c->ReadUntil("tick;").ok());
  gateway_->Shutdown(0ms);
  EXPECT_TRUE(c->WaitClosed());
  gateway_->Shutdown(0ms);
  EXPECT_EQ(table_.Stats().open_relays, 0u);
}

// Stands in for the control plane's resume: it marks the route running again, as the E2B
// layer's route notification does once the sandbox runs. Thread-safe.
class RouteFlippingResumer final : public Resumer {
 public:
  RouteFlippingResumer(RouteTable& table, Status result) : table_(table), result_(result) {}
  Status Resume(const Route& route, std::chrono::milliseconds) override {
    ++calls;
    if (!result_.ok()) return result_;
    Route running = route;
    running.state = RouteState::kRunning;
    running.resource_version = route.resource_version + 1;
    table_.Upsert(running);
    return Status::Ok();
  }
  std::atomic<int> calls{0};

 private:
  RouteTable& table_;
  Status result_;
};

TEST_F(GatewayTest, TrafficResumesAPausedSandboxThatAllowsIt) {
  auto a = StartUpstream("sandbox-a");
  dialer_.Map("ia", kEnvdPort, a->port());
  dialer_.Map("ib", kEnvdPort, a->port());
  Route paused = RunningRoute("ia", 1, "tok");
  paused.state = RouteState::kPaused;
  paused.auto_resume = true;
  table_.Upsert(paused);
  Route no_resume = RunningRoute("ib", 1);
  no_resume.state = RouteState::kPaused;
  table_.Upsert(no_resume);
  RouteFlippingResumer resumer(table_, Status::Ok());
  StartGateway({}, &resumer);

  // Without the token nothing wakes up.
  EXPECT_EQ(Get("/who", Routing("ia")).status, 401);
  EXPECT_EQ(resumer.calls.load(), 0);
  net::Headers with_token = Routing("ia");
  with_token.Set("X-Access-Token", "tok");
  net::Response woke = Get("/who", with_token);
  EXPECT_EQ(woke.status, 200);
  EXPECT_EQ(woke.body, "sandbox-a");
  EXPECT_EQ(resumer.calls.load(), 1);
  EXPECT_EQ(gateway_->counters().resumes.load(), 1u);
  // Running now: no second resume.
  EXPECT_EQ(Get("/who", with_token).body, "sandbox-a");
  EXPECT_EQ(resumer.calls.load(), 1);
  // A paused sandbox without autoResume stays a 502.
  EXPECT_EQ(Get("/who", Routing("ib")).body,
            R"({"sandboxId":"ib","message":"The sandbox was not found","code":502})");
  EXPECT_EQ(resumer.calls.load(), 1);
}

TEST_F(GatewayTest, AFailedResumeIsA502) {
  Route paused = RunningRoute("ia", 1);
  paused.state = RouteState::kPaused;
  paused.auto_resume = true;
  table_.Upsert(paused);
  RouteFlippingResumer resumer(table_, UnavailableError("node is gone"));
  StartGateway({}, &resumer);
  net::Response r = Get("/who", Routing("ia"));
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(r.body, R"({"sandboxId":"ia","message":"The sandbox was not found","code":502})");
  EXPECT_EQ(gateway_->counters().Get(RequestResult::kResumeFailed), 1u);
}

// Issue 19: calls failed and the server logged nothing. Every failure on the data path is a
// warning naming the sandbox, the step and the cause; a user's port that is not listening yet
// (clients poll for it) is not.
TEST_F(GatewayTest, DataPathFailuresAreWarningsNamingSandboxStepAndCause) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  sink->set_level(spdlog::level::warn);
  auto log = base::Logger("gateway");
  log->sinks().push_back(sink);
  auto unhook = base::ScopeExit([&] {
    if (gateway_) gateway_->Shutdown(0ms);  // nothing logs from its threads after this
    log->sinks().pop_back();
  });
  // A line containing every one of `parts`, within a few seconds (relays end on the loops).
  auto warned = [&](std::vector<std::string> parts) {
    for (int i = 0; i < 300; ++i) {
      for (const std::string& line : sink->last_formatted()) {
        bool all = true;
        for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
        if (all) return true;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  };
  auto dump = [&] {
    std::string out;
    for (const std::string& line : sink->last_formatted()) out += line;
    return out;
  };

  // envd resets the connection without answering.
  auto listener = RawListener::Listen();
  ASSERT_TRUE(listener.ok());
  std::thread upstream([&] {
    auto conn = listener->Accept();
    if (conn.ok() && conn->ReadUntil("\r\n\r\n").ok()) conn->Close();
  });
  dialer_.Map("ia", kEnvdPort, listener->port());
  table_.Upsert(RunningRoute("ia", 1));
  // ib's envd is not listening; its port 3000 is not either.
  dialer_.Map("ib", 8080, listener->port());
  table_.Upsert(RunningRoute("ib", 1));
  // ic streams until it is killed.
  auto c_upstream = StartUpstream("sandbox-c");
  dialer_.Map("ic", kEnvdPort, c_upstream->port());
  table_.Upsert(RunningRoute("ic", 1));
  StartGateway();

  EXPECT_EQ(Get("/x", Routing("ia")).status, 502);
  upstream.join();
  EXPECT_TRUE(warned(
      {"relay failed", "sandbox_id=ia", "port=49983", "step=read_response", "before responding"}))
      << dump();

  EXPECT_EQ(Get("/x", Routing("ib")).status, 502);
  EXPECT_TRUE(warned({"relay failed", "sandbox_id=ib", "port=49983", "step=dial"})) << dump();
  EXPECT_EQ(Get("/x", Routing("ib", "3000")).status, 502);

  auto c = RawClient::Connect(gateway_->port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->Send("GET /forever HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ic\r\n\r\n").ok());
  ASSERT_TRUE(c->ReadUntil("tick;").ok()) << c->received();
  EXPECT_TRUE(table_.Remove("ic", 2));
  ASSERT_TRUE(c->WaitClosed());
  EXPECT_TRUE(warned({"relay failed", "sandbox_id=ic", "step=aborted", "response_started=true",
                      "the sandbox was removed"}))
      << dump();

  EXPECT_FALSE(warned({"port=3000"})) << "a port not listening yet was logged at warning";
}

}  // namespace
}  // namespace warren::gateway
