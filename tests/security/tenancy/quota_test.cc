// Per-team quota (ResourceQuota) against a real server: the embedded ledger, and a real Redis
// that is killed in the middle of a burst of creates and comes back empty. A create over quota
// is 403 Forbidden (Kubernetes' Status) through the resource API and 429 through E2B; a Redis
// that is away lets creates through (counted, and an Event says so) and the usage reconverges
// once it is back; 1,000 create/delete cycles across Redis and server crashes leak nothing.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <regex>
#include <thread>

#include "api/json.h"
#include "redis_process.h"
#include "tenancy_fixture.h"

namespace warren::testing {
namespace {

using api::Json;
using namespace std::chrono_literals;

template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds timeout = 20s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return pred();
}

class QuotaTest : public TenancyTest {
 protected:
  void SetUp() override {}  // each test boots the server it needs

  void SetQuota(const std::string& ns, Json hard) {
    Json q = {{"apiVersion", "warren.dev/v1alpha1"},
              {"kind", "ResourceQuota"},
              {"metadata", {{"name", "team"}, {"namespace", ns}}},
              {"spec", {{"hard", hard}}}};
    Reply r = Call("POST", "/apis/warren.dev/v1alpha1/namespaces/" + ns + "/resourcequotas",
                   admin_key_, q.dump());
    ASSERT_EQ(r.status, 201) << r.text;
  }

  // status.used of the namespace's quota, as the team reads it.
  Json Used(const std::string& ns, const std::string& key) {
    Reply r =
        Call("GET", "/apis/warren.dev/v1alpha1/namespaces/" + ns + "/resourcequotas/team", key);
    return r.json["status"]["used"];
  }
  bool UsedSandboxesIs(const std::string& ns, int n) {
    Json used = Used(ns, admin_key_);
    return used.is_object() && used.value("sandboxes", "") == std::to_string(n);
  }

  int Create(const std::string& key, const std::string& ns, const std::string& name,
             const std::string& cpu = "") {
    Json pod = PodTemplate();
    if (!cpu.empty()) pod["spec"]["containers"][0]["resources"] = {{"limits", {{"cpu", cpu}}}};
    Json o = {{"apiVersion", "agents.kruise.io/v1alpha1"},
              {"kind", "Sandbox"},
              {"metadata", {{"name", name}}},
              {"spec", {{"template", pod}}}};
    last_ = Call("POST", "/apis/agents.kruise.io/v1alpha1/namespaces/" + ns + "/sandboxes", key,
                 o.dump());
    return last_.status;
  }
  int Delete(const std::string& key, const std::string& ns, const std::string& name) {
    return Call("DELETE", "/apis/agents.kruise.io/v1alpha1/namespaces/" + ns + "/sandboxes/" + name,
                key)
        .status;
  }

  // warren_quota_decisions_total{result} from the admin's /metrics.
  double Decisions(const std::string& result) {
    Reply m = Call("GET", "/metrics", admin_key_);
    std::smatch match;
    std::regex re("warren_quota_decisions_total\\{result=\"" + result + "\"\\} ([0-9.e+]+)");
    return std::regex_search(m.text, match, re) ? std::stod(match[1]) : 0;
  }

  Reply last_;
};

TEST_F(QuotaTest, ATeamIsHeldToItsQuotaAndGetsItBackWhenASandboxGoes) {
  Boot({});
  SetQuota("team-a", {{"sandboxes", "2"}, {"cpu", "5"}});
  EXPECT_EQ(Create(team_a_key_, "team-a", "one"), 201) << last_.text;
  EXPECT_EQ(Create(team_a_key_, "team-a", "two"), 201) << last_.text;
  EXPECT_EQ(Create(team_a_key_, "team-a", "three"), 403);
  EXPECT_EQ(last_.json.value("reason", ""), "Forbidden") << last_.text;
  EXPECT_NE(last_.text.find("exceeded quota: team, requested: sandboxes=1, used: sandboxes=2, "
                            "limited: sandboxes=2"),
            std::string::npos)
      << last_.text;
  // Through E2B: 429 in E2B's error shape, naming the limit.
  Reply e2b = Call("POST", "/v2/sandboxes", team_a_key_, R"({"templateID":"base"})");
  EXPECT_EQ(e2b.status, 429) << e2b.text;
  EXPECT_EQ(e2b.json.value("code", 0), 429);
  EXPECT_NE(e2b.json.value("message", "").find("exceeded quota"), std::string::npos) << e2b.text;
  // The team reads its usage; another team has no quota and is not held.
  EXPECT_TRUE(Eventually([&] { return UsedSandboxesIs("team-a", 2); }));
  EXPECT_EQ(Used("team-a", team_a_key_).value("cpu", ""), "4");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Create(team_b_key_, "team-b", fmt::format("b{}", i)), 201);
  // A sandbox that goes gives its place back.
  ASSERT_EQ(Delete(team_a_key_, "team-a", "one"), 200);
  EXPECT_TRUE(Eventually([&] { return Create(team_a_key_, "team-a", "three") == 201; }))
      << last_.text;
  // CPU is counted too: 2 + 2 (defaults) + 2 would pass 5.
  ASSERT_EQ(Delete(team_a_key_, "team-a", "two"), 200);
  EXPECT_TRUE(Eventually([&] { return UsedSandboxesIs("team-a", 1); }));
  EXPECT_EQ(Create(team_a_key_, "team-a", "big", "4"), 403);
  EXPECT_NE(last_.text.find("requested: cpu=4, used: cpu=2, limited: cpu=5"), std::string::npos)
      << last_.text;
  EXPECT_EQ(Create(team_a_key_, "team-a", "small", "500m"), 201) << last_.text;
}

TEST_F(QuotaTest, ARestartedServerRebuildsUsageFromTheStore) {
  Boot({});
  SetQuota("team-a", {{"sandboxes", "2"}});
  ASSERT_EQ(Create(team_a_key_, "team-a", "one"), 201);
  ASSERT_EQ(Create(team_a_key_, "team-a", "two"), 201);
  // The same data directory: the embedded ledger is rebuilt before the first create is judged.
  CrashAndRestart({});
  EXPECT_EQ(Create(team_a_key_, "team-a", "three"), 403) << last_.text;
  ASSERT_EQ(Delete(team_a_key_, "team-a", "one"), 200);
  EXPECT_TRUE(Eventually([&] { return Create(team_a_key_, "team-a", "three") == 201; }));
}

TEST_F(QuotaTest, RedisKilledInABurstFailsOpenThenUsageReconverges) {
  RedisProcess redis;
  Boot({"--quota-redis", redis.address(), "--quota-breaker-open", "300",
        "--quota-reconcile-interval", "1000"});
  SetQuota("team-a", {{"sandboxes", "4"}});
  for (int i = 0; i < 4; ++i) ASSERT_EQ(Create(team_a_key_, "team-a", fmt::format("s{}", i)), 201);
  ASSERT_EQ(Create(team_a_key_, "team-a", "over"), 403) << last_.text;
  const double failed_open_before = Decisions("fail_open");

  // A burst of creates from four clients; Redis dies in the middle of it.
  std::atomic<int> created{0}, refused{0}, other{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      auto client = net::HttpClient::ForAddress(server_->address());
      for (int i = 0; i < 10; ++i) {
        Json o = {{"apiVersion", "agents.kruise.io/v1alpha1"},
                  {"kind", "Sandbox"},
                  {"metadata", {{"name", fmt::format("burst-{}-{}", c, i)}}},
                  {"spec", {{"template", PodTemplate()}}}};
        net::ClientRequest req{.method = "POST",
                               .target =
                                   "/apis/agents.kruise.io/v1alpha1/namespaces/team-a/"
                                   "sandboxes"};
        req.headers.Set("Authorization", "Bearer " + team_a_key_);
        req.headers.Set("Content-Type", "application/json");
        req.body = o.dump();
        auto r = (*client)->Do(req);
        if (r.ok() && r->status == 201) {
          ++created;
        } else if (r.ok() && r->status == 403) {
          ++refused;
        } else {
          ++other;
        }
        std::this_thread::sleep_for(20ms);
      }
    });
  }
  std::this_thread::sleep_for(60ms);
  redis.Kill();
  for (auto& t : clients) t.join();
  EXPECT_EQ(other.load(), 0) << "every create answered 201 or 403, none failed otherwise";
  EXPECT_GT(created.load(), 0) << "creates went on while Redis was away";
  EXPECT_GT(Decisions("fail_open"), failed_open_before);
  Reply events = Call("GET", "/apis/warren.dev/v1alpha1/namespaces/team-a/events", admin_key_);
  EXPECT_NE(events.text.find("QuotaNotEnforced"), std::string::npos) << events.text;

  // Back, empty: the ledger is rebuilt from the store and enforcement resumes.
  redis.Start();
  int live = 4 + created.load();
  EXPECT_TRUE(Eventually([&] { return UsedSandboxesIs("team-a", live); }, 30s))
      << Used("team-a", admin_key_).dump();
  EXPECT_EQ(Create(team_a_key_, "team-a", "after"), 403) << last_.text;
  // Everything deleted: nothing is held.
  for (const Json& item : Items(Call(
           "GET", "/apis/agents.kruise.io/v1alpha1/namespaces/team-a/sandboxes", team_a_key_))) {
    Delete(team_a_key_, "team-a", item["metadata"].value("name", ""));
  }
  EXPECT_TRUE(Eventually([&] { return UsedSandboxesIs("team-a", 0); }, 30s))
      << Used("team-a", admin_key_).dump();
}

TEST_F(QuotaTest, AThousandCreateDeleteCyclesWithFaultsLeakNoQuota) {
  RedisProcess redis;
  std::vector<std::string> args = {
      "--quota-redis", redis.address(), "--quota-breaker-open", "200", "--quota-reconcile-interval",
      "1000"};
  Boot(args);
  SetQuota("team-a", {{"sandboxes", "3"}});
  int refused = 0;
  for (int i = 0; i < 1000; ++i) {
    if (i == 250) redis.Kill();
    if (i == 450) redis.Start();
    if (i == 700) {
      // A crash of the server with a create and a delete behind it.
      CrashAndRestart(args);
    }
    std::string name = fmt::format("c{}", i);
    // A sandbox's end is released as the server sees it go (a watch): a create right behind a
    // delete may find it not released yet, but never for long. Refused for good = leaked.
    int code = 0;
    Eventually([&] { return (code = Create(team_a_key_, "team-a", name)) != 403; }, 15s);
    if (code == 403) {
      ++refused;
      continue;
    }
    ASSERT_EQ(code, 201) << i << ": " << last_.text;
    ASSERT_EQ(Delete(team_a_key_, "team-a", name), 200) << i;
  }
  EXPECT_EQ(refused, 0);
  EXPECT_TRUE(Eventually([&] { return UsedSandboxesIs("team-a", 0); }, 30s))
      << Used("team-a", admin_key_).dump();
  // And the whole quota is there to use.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Create(team_a_key_, "team-a", fmt::format("f{}", i)), 201);
  EXPECT_EQ(Create(team_a_key_, "team-a", "f3"), 403) << last_.text;
}

}  // namespace
}  // namespace warren::testing
