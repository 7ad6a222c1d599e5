// What a tenant could reach in a real sandbox, and must not: an unclaimed warm-pool member
// (closed from birth: nobody can start anything in it before a claim hands it out, so a
// claimant gets a sandbox in which nothing runs but what the template started), another team's
// sandbox through the gateway, and the node's secret in pid 1's environment.

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "e2b_client.h"

namespace warren::pool_testing {
namespace {

using namespace std::chrono_literals;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class SandboxSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (real sandboxes)";
    server_.EnableNodeAgent();
    key_ = BootstrapAdminKey(server_);
    server_.Start();
    int port = 0;
    std::ifstream(server_.data_dir() + "/gateway.port") >> port;
    ASSERT_GT(port, 0);
    gateway_ = std::move(*net::HttpClient::ForAddress("127.0.0.1:" + std::to_string(port)));
  }

  // A request through the gateway to a sandbox's port, with `token` when not empty.
  net::Response Gateway(const std::string& id, const std::string& port, const std::string& method,
                        const std::string& target, const std::string& token,
                        const std::string& body = "") {
    net::ClientRequest req{.method = method, .target = target};
    req.headers.Set("E2b-Sandbox-Id", id);
    req.headers.Set("E2b-Sandbox-Port", port);
    if (!token.empty()) req.headers.Set("X-Access-Token", token);
    if (!body.empty()) {
      req.headers.Set("Content-Type", "application/json");
      req.headers.Set("Connect-Protocol-Version", "1");
      req.body = body;
    }
    auto r = gateway_->Do(req);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : net::Response{};
  }

  WarrenServer server_;
  std::string key_;
  std::unique_ptr<net::HttpClient> gateway_;
};

TEST_F(SandboxSecurityTest, AnUnclaimedMemberIsClosedAndItsClaimantFindsNothingRunning) {
  server_.Apply(PoolManifest("closed", 1));
  ASSERT_TRUE(Eventually([&] { return AvailableReplicas(server_, "closed") >= 1; }, 300s))
      << server_.log();
  auto members = ListSandboxes(server_, "agents.kruise.io/sandbox-pool=closed");
  ASSERT_TRUE(members.ok() && members->size() == 1u);
  std::string id = (*members)[0]["metadata"]["labels"]["agents.kruise.io/sandbox-id"];
  // No token, a made-up one, envd's port or any other: 401, and nothing is started.
  for (const std::string& token : {std::string(), std::string(64, 'a')}) {
    EXPECT_EQ(Gateway(id, "49983", "GET", "/envs", token).status, 401);
    EXPECT_EQ(Gateway(id, "49983", "POST", "/process.Process/Start", token,
                      R"({"process":{"cmd":"/bin/sleep","args":["3600"]}})")
                  .status,
              401);
    EXPECT_EQ(Gateway(id, "8080", "GET", "/", token).status, 401);
  }
  // The claim: the member is handed out with a token of its own, and nothing runs in it.
  E2bClient e2b(server_, key_);
  auto created = e2b.Create("closed");
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ((*created)["sandboxID"], id) << "the pool's only member";
  std::string token = (*created)["envdAccessToken"];
  ASSERT_EQ(token.size(), 64u);
  net::Response listed = Gateway(id, "49983", "POST", "/process.Process/List", token, "{}");
  ASSERT_EQ(listed.status, 200) << listed.body;
  auto processes = api::ParseJson(listed.body);
  ASSERT_TRUE(processes.ok());
  EXPECT_TRUE(!processes->contains("processes") || (*processes)["processes"].empty())
      << listed.body;
  EXPECT_EQ(Gateway(id, "49983", "GET", "/envs", "").status, 401) << "still closed to others";
  ASSERT_TRUE(e2b.Kill(id).ok());
}

TEST_F(SandboxSecurityTest, PidOnesEnvironmentNoLongerHoldsTheNodeSecret) {
  E2bClient e2b(server_, key_);
  auto created = e2b.Create("base");
  ASSERT_TRUE(created.ok()) << created.status();
  std::string id = (*created)["sandboxID"];
  // Root in the sandbox could read /proc/1/environ; read it from the host, where it is the
  // same memory.
  int envds = 0;
  DIR* proc = opendir("/proc");
  ASSERT_NE(proc, nullptr);
  while (dirent* e = readdir(proc)) {
    std::string pid = e->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cgroup = ReadAll("/proc/" + pid + "/cgroup");
    std::string cmdline = ReadAll("/proc/" + pid + "/cmdline");
    if (cgroup.find("/" + id) == std::string::npos || cmdline.find("envd") == std::string::npos) {
      continue;
    }
    ++envds;
    std::string environ = ReadAll("/proc/" + pid + "/environ");
    for (const char* name : {"WARREN_ENVD_NODE_SECRET=", "WARREN_ENVD_ACCESS_TOKEN="}) {
      auto at = environ.find(name);
      ASSERT_NE(at, std::string::npos) << name;
      std::string value = environ.substr(at + strlen(name));
      value = value.substr(0, value.find('\0'));
      EXPECT_EQ(value.find_first_not_of('x'), std::string::npos) << name << value;
    }
  }
  closedir(proc);
  EXPECT_EQ(envds, 1) << "pid 1 of sandbox " << id;
  ASSERT_TRUE(e2b.Kill(id).ok());
}

TEST_F(SandboxSecurityTest, AnotherTeamsKeyCannotReachASandboxAndItsTokenIsSealed) {
  // Team keys made by the admin, as an operator would.
  auto make = [&](const std::string& team) {
    net::ClientRequest req{.method = "POST", .target = "/api-keys"};
    req.headers.Set("X-API-Key", key_);
    req.headers.Set("Content-Type", "application/json");
    req.body = api::Json{{"team", team}}.dump();
    auto r = server_.http().Do(req);
    EXPECT_TRUE(r.ok() && r->status == 201);
    return api::ParseJson(r->body)->value("key", "");
  };
  std::string alice = make("alice"), mallory = make("mallory");
  // alice's sandbox, from the built-in template (shared from "default").
  E2bClient as_alice(server_, alice);
  auto created = as_alice.Create("base", true, api::Json{{"SECRET_ENV", "s3cr3t-value"}});
  ASSERT_TRUE(created.ok()) << created.status();
  std::string id = (*created)["sandboxID"];
  std::string token = (*created)["envdAccessToken"];
  for (const std::string& target : {"/sandboxes/" + id, "/sandboxes/" + id + "/metrics"}) {
    net::ClientRequest req{.method = "GET", .target = target};
    req.headers.Set("X-API-Key", mallory);
    EXPECT_EQ(server_.http().Do(req)->status, 404) << target;
  }
  E2bClient as_mallory(server_, mallory);
  EXPECT_FALSE(as_mallory.Kill(id).ok());
  // Without alice's token, nothing through the gateway.
  EXPECT_EQ(Gateway(id, "49983", "GET", "/envs", "").status, 401);
  EXPECT_EQ(Gateway(id, "49983", "GET", "/envs", token).status, 200);
  // Her token and env vars are nowhere in the object, for any reader (the admin included).
  auto objects = ListSandboxes(server_, "agents.kruise.io/sandbox-id=" + id);
  ASSERT_TRUE(objects.ok() && objects->size() == 1u);
  std::string text = (*objects)[0].dump();
  EXPECT_EQ(text.find(token), std::string::npos);
  EXPECT_EQ(text.find("s3cr3t-value"), std::string::npos);
  // GET (unlike create and connect) does not return it.
  net::ClientRequest info{.method = "GET", .target = "/sandboxes/" + id};
  info.headers.Set("X-API-Key", alice);
  auto got = server_.http().Do(info);
  ASSERT_TRUE(got.ok() && got->status == 200);
  EXPECT_EQ(got->body.find(token), std::string::npos) << got->body;
  ASSERT_TRUE(as_alice.Kill(id).ok());
}

}  // namespace
}  // namespace warren::pool_testing
