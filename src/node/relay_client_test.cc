// RelayClient against a real HttpServer answering as the node relay does, without a node agent:
// the tunnel hand-off (nothing past the 101 is taken), errors carried back as the same Status.

#include "node/relay_client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <thread>

#include "net/http_server.h"
#include "net/testing/raw_client.h"
#include "node/relay_wire.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;
using net::testing::RawListener;

constexpr const char* kToken = "relay-token-for-tests";

std::string ReadSome(int fd, size_t want) {
  std::string out;
  char buf[256];
  while (out.size() < want) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

class RelayClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto listener = RawListener::Listen();
    ASSERT_TRUE(listener.ok());
    listener_ = std::make_unique<RawListener>(std::move(*listener));
    net::Router router;
    // The dial route's shape: errors as the relay encodes them, else a raw tunnel to a server
    // that speaks first.
    router.Add(
        "GET", "/relay/v1/sandboxes/{id}/ports/{port}",
        [this](net::Request&& req, net::Responder r) {
          if (req.headers.Get("Authorization").value_or("") != std::string("Bearer ") + kToken) {
            r.Send(net::Response::Json(401, EncodeRelayError(UnauthenticatedError("no"))));
            return;
          }
          if (req.PathParam("id") != "sbx-1") {
            r.Send(net::Response::Json(
                404, EncodeRelayError(NotFoundError("sandbox sbx-2 is not on this node"))));
            return;
          }
          auto fd = net::DialTcp("127.0.0.1", listener_->port(), 2s);
          if (!fd.ok()) return r.Send(net::Response::Text(502, "upstream"));
          net::ProxyOptions options;
          options.raw_upgrade = true;
          r.Proxy(std::move(*fd), std::move(options));
        },
        {.blocking = true});
    router.Add("POST", "/relay/v1/sandboxes/{id}/init", [](net::Request&& req, net::Responder r) {
      if (req.body == "{}") return r.Send(net::Response::Empty(204));
      r.Send(net::Response::Json(
          409, EncodeRelayError(FailedPreconditionError("sandbox sbx-1 is paused"))));
    });
    auto server = net::HttpServer::Start({.loop_threads = 1}, std::move(router));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  std::unique_ptr<RelayClient> Client(std::string token = kToken) {
    auto c = RelayClient::Create("127.0.0.1:" + std::to_string(server_->port()), token);
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(*c);
  }

  std::unique_ptr<RawListener> listener_;
  std::unique_ptr<net::HttpServer> server_;
};

TEST_F(RelayClientTest, ADialHandsOverTheTunnelWithTheFirstBytesOfAServerThatSpeaksFirst) {
  std::thread upstream([&] {
    auto conn = listener_->Accept();
    if (!conn.ok()) return;
    (void)conn->Send("banner;");
    if (!conn->ReadUntil(";", 10s).ok()) return;
    (void)conn->Send("echo:" + conn->received());
  });
  auto fd = Client()->Dial("sbx-1", 9000, 5s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  // The banner may arrive with the 101: the client must have left it in the socket.
  EXPECT_EQ(ReadSome(fd->get(), 7), "banner;");
  ASSERT_EQ(::send(fd->get(), "hi;", 3, MSG_NOSIGNAL), 3);
  EXPECT_EQ(ReadSome(fd->get(), 8), "echo:hi;");
  upstream.join();
}

TEST_F(RelayClientTest, TheNodesRefusalComesBackAsTheSameStatus) {
  auto missing = Client()->Dial("sbx-2", 9000, 5s);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "sandbox sbx-2 is not on this node");
  auto wrong = Client("not-the-token")->Dial("sbx-1", 9000, 5s);
  // The caller's key is not what failed: the cluster's credential is, said as ours.
  EXPECT_EQ(wrong.status().code(), StatusCode::kInternal) << wrong.status();
  EXPECT_NE(wrong.status().message().find("seal.key"), std::string::npos) << wrong.status();
  EXPECT_TRUE(Client()->Init("sbx-1", "{}", 5s).ok());
  Status paused = Client()->Init("sbx-1", "{\"x\":1}", 5s);
  EXPECT_EQ(paused.code(), StatusCode::kFailedPrecondition) << paused;
  EXPECT_EQ(paused.message(), "sandbox sbx-1 is paused");
}

// Another service at a Node's address (a wrong --advertise, a proxy without Upgrade).
TEST_F(RelayClientTest, AnAddressThatIsNotARelayIsUnavailableNeverOk) {
  net::Router router;
  router.SetFallback([](net::Request&&, net::Responder r) {
    r.Send(net::Response::Text(200, "<html>hello</html>"));
  });
  auto other = net::HttpServer::Start({.loop_threads = 1}, std::move(router));
  ASSERT_TRUE(other.ok());
  auto c = RelayClient::Create("127.0.0.1:" + std::to_string((*other)->port()), kToken);
  ASSERT_TRUE(c.ok());
  auto fd = (*c)->Dial("sbx-1", 9000, 2s);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kUnavailable) << fd.status();
  EXPECT_FALSE(DecodeRelayError(200, "<html>").ok());
}

TEST_F(RelayClientTest, ANodeThatIsGoneIsUnavailableNamingItsAddress) {
  auto listener = RawListener::Listen();  // bound, then closed: nothing accepts there
  ASSERT_TRUE(listener.ok());
  std::string address = "127.0.0.1:" + std::to_string(listener->port());
  listener = RawListener::Listen();
  auto c = RelayClient::Create(address, kToken);
  ASSERT_TRUE(c.ok());
  auto fd = (*c)->Dial("sbx-1", 9000, 2s);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kUnavailable) << fd.status();
  EXPECT_NE(fd.status().message().find(address), std::string::npos) << fd.status();
}

TEST(RelayWire, StatsLogLinesAndQueriesSurviveTheTripAndGarbageIsAnError) {
  StatsSample s;
  s.time = base::WallTime(std::chrono::milliseconds(1'700'000'000'123));
  s.cpu_used_pct = 12.5;
  s.memory_bytes = 1 << 20;
  s.pids = 3;
  auto stats = DecodeStats(EncodeStats({s}));
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), 1u);
  EXPECT_EQ((*stats)[0].time, s.time);
  EXPECT_EQ((*stats)[0].cpu_used_pct, 12.5);
  EXPECT_EQ((*stats)[0].memory_bytes, 1u << 20);
  std::vector<base::LogLine> lines{{1, base::LogStream::kStderr, "oops \xff"},
                                   {2, base::LogStream::kStdout, "fine"}};
  auto back = DecodeLogLines(EncodeLogLines(lines));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].stream, base::LogStream::kStderr);
  EXPECT_EQ((*back)[1].text, "fine");
  EXPECT_FALSE(DecodeStats("{\"not\":\"an array\"}").ok());
  EXPECT_FALSE(DecodeStats("[{\"timeMs\":\"soon\"}]").ok());
  EXPECT_FALSE(DecodeLogLines("[{\"ms\":1}]").ok());
  EXPECT_FALSE(DecodeStats("[{\"timeMs\":1e300,\"cpuUsageNs\":0}]").ok());
  base::LogLineQuery q;
  q.cursor_ms = 42;
  q.backward = true;
  q.limit = 7;
  q.search = "a b&c";
  std::vector<std::pair<std::string, std::string>> params = {
      {"cursorMs", "42"}, {"backward", "true"}, {"limit", "7"}, {"search", "a b&c"}};
  auto decoded = DecodeLogQuery(params);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->cursor_ms, 42);
  EXPECT_TRUE(decoded->backward);
  EXPECT_EQ(decoded->limit, 7u);
  EXPECT_EQ(decoded->search, "a b&c");
  EXPECT_NE(EncodeLogQuery(q).find("search=a%20b%26c"), std::string::npos) << EncodeLogQuery(q);
  EXPECT_FALSE(DecodeLogQuery({{"limit", "-1"}}).ok());
  Status odd = DecodeRelayError(502, "<html>bad gateway</html>");
  EXPECT_EQ(odd.code(), StatusCode::kUnavailable);
  EXPECT_NE(odd.message().find("bad gateway"), std::string::npos);
}

}  // namespace
}  // namespace warren::node
