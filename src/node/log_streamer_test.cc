#include "node/log_streamer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "api/kinds.h"
#include "api/types/labels.h"
#include "base/principal.h"
#include "net/http_server.h"
#include "net/testing/raw_client.h"
#include "node/log_route.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::node {
namespace {

using net::testing::RawClient;
using namespace std::chrono_literals;

constexpr char kTarget[] = "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes/s1/log";

class LogStreamerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_path_ = dir_.path() + "/command.log";
    std::ofstream(log_path_) << "line 1\nline 2\n";
    auto created =
        store_->Create(store::testing::MakeSandbox("s1", {{api::labels::kSandboxId, "sbx1"}}));
    ASSERT_TRUE(created.ok()) << created.status();
    LogSource source;
    source.open = [this](std::string_view) -> Result<base::UniqueFd> {
      base::UniqueFd fd(open(log_path_.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd) return ErrnoError("open", errno);
      return fd;
    };
    source.stopping = [] { return false; };
    net::Router router;
    LogStreamOptions options;
    options.max_streams = 3;
    options.poll = 20ms;
    RegisterLogRoute(router, std::move(source), store_.store(), options);
    // The server's route guard names the caller; here a team key of the sandbox's namespace.
    router.WrapAll([](std::string_view, std::string_view, net::RouteOptions&, net::Handler next) {
      return [next = std::move(next)](net::Request&& req, net::Responder r) {
        req.principal = std::make_shared<const base::Principal>(
            base::Principal{.key_id = "k", .key_name = "team", .team = "default"});
        next(std::move(req), std::move(r));
      };
    });
    net::ServerOptions server;
    server.loop_threads = 1;
    server.blocking_threads = 1;  // one API worker: a follow that held it would stop the rest
    auto started = net::HttpServer::Start(server, std::move(router));
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(*started);
  }

  RawClient Get(const std::string& target) {
    auto c = RawClient::Connect(server_->port());
    EXPECT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(c->Send("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n").ok());
    return std::move(*c);
  }

  store::testing::TempDir dir_;
  store::testing::TempStore store_;
  std::string log_path_;
  std::unique_ptr<net::HttpServer> server_;
};

TEST_F(LogStreamerTest, FollowsHoldNoWorkerAndAreCapped) {
  std::vector<RawClient> follows;
  for (int i = 0; i < 3; ++i) {
    follows.push_back(Get(std::string(kTarget) + "?follow=true"));
    ASSERT_TRUE(follows.back().ReadUntil("line 2\n").ok()) << follows.back().received();
  }
  // The one blocking thread is free: a fourth follow is looked up and refused by the cap.
  RawClient fourth = Get(std::string(kTarget) + "?follow=true");
  auto refused = fourth.ReadResponse(5s);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->status, 429);
  EXPECT_NE(refused->body.find("too many log streams"), std::string::npos) << refused->body;

  // New lines reach every follower.
  std::ofstream(log_path_, std::ios::app) << "line 3\n";
  for (auto& f : follows) EXPECT_TRUE(f.ReadUntil("line 3\n").ok()) << f.received();

  // A follower that leaves frees its place.
  follows.back().Close();
  follows.pop_back();
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    RawClient c = Get(kTarget);
    auto resp = c.ReadResponse(5s);
    ASSERT_TRUE(resp.ok()) << resp.status();
    served = resp->status == 200;
    if (served) {
      EXPECT_EQ(resp->body, "line 1\nline 2\nline 3\n");
    } else {
      std::this_thread::sleep_for(20ms);
    }
  }
  EXPECT_TRUE(served);
}

TEST_F(LogStreamerTest, TailAndLimitStillApply) {
  RawClient tail = Get(std::string(kTarget) + "?tailLines=1");
  auto resp = tail.ReadResponse(5s);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->body, "line 2\n");
  RawClient limited = Get(std::string(kTarget) + "?limitBytes=3");
  resp = limited.ReadResponse(5s);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->body, "lin");
}

TEST_F(LogStreamerTest, AFollowEndsWhenItsSandboxIsDeleted) {
  RawClient follow = Get(std::string(kTarget) + "?follow=true");
  ASSERT_TRUE(follow.ReadUntil("line 2\n").ok());
  ASSERT_TRUE(store_->Delete(api::SandboxKind(), "default", "s1", {}).ok());
  EXPECT_TRUE(follow.ReadUntil("0\r\n\r\n", 10s).ok()) << follow.received();
}

}  // namespace
}  // namespace warren::node
