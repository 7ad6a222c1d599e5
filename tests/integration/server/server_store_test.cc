// The store's guarantees as a user of the REST API sees them, against a real `warren server`
// process with its SQLite file or on etcd: optimistic concurrency under contention, finalizers,
// owner reference garbage collection, and durability of acknowledged writes across `kill -9`.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "api/json.h"
#include "process.h"
#include "store/testing/backend_store.h"
#include "store/testing/etcd_process.h"

namespace warren::testing {
namespace {

using namespace std::chrono_literals;
using api::Json;

// SandboxTemplates: no controller of the server writes them, so every write here is the test's.
constexpr const char* kTemplates =
    "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxtemplates";

Json TemplateJson(const std::string& name) {
  return Json::parse(fmt::format(R"({{
    "apiVersion": "agents.kruise.io/v1alpha1", "kind": "SandboxTemplate",
    "metadata": {{"name": "{}"}},
    "spec": {{"template": {{"spec": {{"containers": [{{"name": "main", "image": "base"}}]}}}}}}}})",
                                 name));
}

struct Reply {
  int code = 0;
  Json body;
  std::string raw;
};

Reply Call(net::HttpClient& http, const std::string& method, const std::string& target,
           const std::string& body = "",
           const std::string& content_type = "application/merge-patch+json") {
  net::ClientRequest req;
  req.method = method;
  req.target = target;
  req.body = body;
  if (!body.empty()) req.headers.Set("Content-Type", content_type);
  Reply r;
  auto resp = http.Do(req);
  if (!resp.ok()) return r;  // code 0: no answer (the server was killed)
  r.code = resp->status;
  r.raw = resp->body;
  auto j = api::ParseJson(resp->body);
  if (j.ok()) r.body = std::move(*j);
  return r;
}

std::unique_ptr<net::HttpClient> NewClient(const ServerProcess& s) {
  auto c = net::HttpClient::ForAddress(s.address());
  EXPECT_TRUE(c.ok()) << c.status();
  if (c.ok()) (*c)->SetDefaultHeader("Authorization", "Bearer " + s.admin_key());
  return c.ok() ? std::move(*c) : nullptr;
}

// Every test runs on both stores: SQLite in the data directory, and etcd started for the test
// (`--store etcd://…`), where a killed server loses nothing etcd acknowledged either.
class ServerStore : public ::testing::TestWithParam<store::testing::Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == store::testing::Backend::kEtcd) {
      etcd_ = std::make_unique<store::testing::EtcdCluster>(1);
    }
  }
  std::vector<std::string> StoreArgs() const {
    if (!etcd_) return {};
    return {"--store", etcd_->Url()};
  }

 private:
  std::unique_ptr<store::testing::EtcdCluster> etcd_;
};

// 32 clients, each on its own connection, update one object with the resourceVersion they all
// read. For every revision exactly one wins; the others get 409 Conflict naming the object.
// Round after round nothing is lost: the counter ends at the number of wins.
TEST_P(ServerStore, ThirtyTwoWritersOnOneObjectOneWinsEachRevision) {
  ServerProcess s("", StoreArgs());
  const std::string path = std::string(kTemplates) + "/contended";
  ASSERT_EQ(Call(s.http(), "POST", kTemplates, api::DumpJson(TemplateJson("contended")),
                 "application/json")
                .code,
            201);
  constexpr int kWriters = 32;
  constexpr int kRounds = 5;
  std::vector<std::unique_ptr<net::HttpClient>> clients;
  for (int i = 0; i < kWriters; ++i) clients.push_back(NewClient(s));
  int total_wins = 0;
  for (int round = 0; round < kRounds; ++round) {
    Reply current = Call(s.http(), "GET", path);
    ASSERT_EQ(current.code, 200);
    const std::string rv = current.body["metadata"]["resourceVersion"];
    std::atomic<int> wins = 0, conflicts = 0, other = 0;
    std::mutex mu;
    std::set<std::string> winner_versions;
    std::string odd_answer;
    std::atomic<int> ready = 0;
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back([&, w] {
        Json patch = {{"metadata",
                       {{"resourceVersion", rv},
                        {"annotations", {{"writer", std::to_string(w)}, {"round", rv}}}}}};
        ++ready;
        while (ready.load() < kWriters) std::this_thread::yield();  // start together
        Reply r = Call(*clients[w], "PATCH", path, api::DumpJson(patch));
        if (r.code == 200) {
          ++wins;
          std::lock_guard lock(mu);
          winner_versions.insert(r.body["metadata"]["resourceVersion"].get<std::string>());
        } else if (r.code == 409 && r.body.value("reason", "") == "Conflict" &&
                   r.body.value("message", "")
                           .find("sandboxtemplates.agents.kruise.io "
                                 "\"contended\"") != std::string::npos) {
          ++conflicts;
        } else {
          ++other;
          std::lock_guard lock(mu);
          odd_answer = std::to_string(r.code) + " " + r.raw.substr(0, 300);
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(wins.load(), 1) << "round " << round;
    EXPECT_EQ(conflicts.load(), kWriters - 1) << "round " << round;
    EXPECT_EQ(other.load(), 0) << odd_answer;
    total_wins += wins.load();
    // The stored object is the winner's write.
    Reply after = Call(s.http(), "GET", path);
    ASSERT_EQ(winner_versions.size(), 1u);
    EXPECT_EQ(after.body["metadata"]["resourceVersion"], *winner_versions.begin());
    EXPECT_EQ(after.body["metadata"]["annotations"]["round"], rv);
  }
  EXPECT_EQ(total_wins, kRounds);
}

// DELETE of an object with a finalizer only marks it; removing the finalizer lets it go.
TEST_P(ServerStore, FinalizersHoldADeleteUntilRemoved) {
  ServerProcess s("", StoreArgs());
  Json obj = TemplateJson("held");
  obj["metadata"]["finalizers"] = {"example.com/cleanup"};
  ASSERT_EQ(Call(s.http(), "POST", kTemplates, api::DumpJson(obj), "application/json").code, 201);
  const std::string path = std::string(kTemplates) + "/held";

  Reply deleted = Call(s.http(), "DELETE", path);
  EXPECT_TRUE(deleted.code == 200 || deleted.code == 202) << deleted.raw;
  Reply marked = Call(s.http(), "GET", path);
  ASSERT_EQ(marked.code, 200) << "a finalizer keeps the object";
  EXPECT_TRUE(marked.body["metadata"].contains("deletionTimestamp")) << marked.raw;
  // No new finalizers once deleting.
  Reply more = Call(s.http(), "PATCH", path,
                    R"({"metadata":{"finalizers":["example.com/cleanup","example.com/other"]}})");
  EXPECT_EQ(more.code, 422) << more.raw;
  EXPECT_NE(more.body.value("message", "").find("metadata.finalizers"), std::string::npos)
      << more.raw;

  Reply released = Call(s.http(), "PATCH", path, R"({"metadata":{"finalizers":null}})");
  EXPECT_EQ(released.code, 200) << released.raw;
  Reply gone = Call(s.http(), "GET", path);
  EXPECT_EQ(gone.code, 404) << gone.raw;
}

// Deleting an owner deletes its dependents in the background; Orphan keeps them.
TEST_P(ServerStore, OwnerReferencesDriveGarbageCollection) {
  ServerProcess s("", StoreArgs());
  auto make_owner = [&](const std::string& name) {
    Reply r =
        Call(s.http(), "POST", kTemplates, api::DumpJson(TemplateJson(name)), "application/json");
    EXPECT_EQ(r.code, 201) << r.raw;
    return r.body["metadata"]["uid"].get<std::string>();
  };
  auto make_dependent = [&](const std::string& name, const std::string& owner,
                            const std::string& uid) {
    Json d = TemplateJson(name);
    d["metadata"]["ownerReferences"] = {{{"apiVersion", "agents.kruise.io/v1alpha1"},
                                         {"kind", "SandboxTemplate"},
                                         {"name", owner},
                                         {"uid", uid}}};
    Reply r = Call(s.http(), "POST", kTemplates, api::DumpJson(d), "application/json");
    EXPECT_EQ(r.code, 201) << r.raw;
  };
  std::string uid = make_owner("owner");
  make_dependent("child-a", "owner", uid);
  make_dependent("child-b", "owner", uid);
  std::string kept_uid = make_owner("kept-owner");
  make_dependent("orphan", "kept-owner", kept_uid);

  ASSERT_EQ(Call(s.http(), "DELETE", std::string(kTemplates) + "/owner").code, 200);
  ASSERT_EQ(
      Call(s.http(), "DELETE", std::string(kTemplates) + "/kept-owner?propagationPolicy=Orphan")
          .code,
      200);
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline &&
         (Call(s.http(), "GET", std::string(kTemplates) + "/child-a").code != 404 ||
          Call(s.http(), "GET", std::string(kTemplates) + "/child-b").code != 404)) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(Call(s.http(), "GET", std::string(kTemplates) + "/child-a").code, 404);
  EXPECT_EQ(Call(s.http(), "GET", std::string(kTemplates) + "/child-b").code, 404);
  Reply orphan = Call(s.http(), "GET", std::string(kTemplates) + "/orphan");
  ASSERT_EQ(orphan.code, 200) << "Orphan propagation keeps the dependent";
  EXPECT_FALSE(orphan.body["metadata"].contains("ownerReferences")) << orphan.raw;
}

// Writers create objects as fast as the server acknowledges them; the server gets SIGKILL in the
// middle. After a restart on the same data directory every acknowledged (201) object is there.
TEST_P(ServerStore, AcknowledgedWritesSurviveKillNine) {
  store::testing::TempDir dir;
  std::vector<std::string> acknowledged;
  std::mutex mu;
  {
    ServerProcess s(dir.path(), StoreArgs());
    constexpr int kWriters = 8;
    std::atomic<bool> stop = false;
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back([&, w, client = NewClient(s)] {
        for (int i = 0; !stop.load(); ++i) {
          std::string name = fmt::format("w{}-{}", w, i);
          Reply r = Call(*client, "POST", kTemplates, api::DumpJson(TemplateJson(name)),
                         "application/json");
          if (r.code == 0) return;  // the server is gone
          ASSERT_EQ(r.code, 201) << r.raw;
          std::lock_guard lock(mu);
          acknowledged.push_back(name);
        }
      });
    }
    // Kill once a good number of writes went through, so the kill lands mid-burst.
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lock(mu);
        if (acknowledged.size() >= 1000) break;
      }
      std::this_thread::sleep_for(5ms);
    }
    s.Kill();
    stop = true;
    for (auto& t : threads) t.join();
  }
  ASSERT_GE(acknowledged.size(), 1000u);
  ServerProcess again(dir.path(), StoreArgs());
  std::set<std::string> present;
  Reply list = Call(again.http(), "GET", kTemplates);
  ASSERT_EQ(list.code, 200) << list.raw.substr(0, 300);
  for (const auto& item : list.body["items"]) present.insert(item["metadata"]["name"]);
  size_t missing = 0;
  for (const auto& name : acknowledged) {
    if (!present.count(name)) {
      ++missing;
      ADD_FAILURE() << "acknowledged " << name << " is gone";
      if (missing > 5) break;
    }
  }
  EXPECT_GE(present.size(), acknowledged.size());
  // The server still works after the crash.
  EXPECT_EQ(Call(again.http(), "POST", kTemplates, api::DumpJson(TemplateJson("after")),
                 "application/json")
                .code,
            201);
}

INSTANTIATE_TEST_SUITE_P(, ServerStore,
                         ::testing::Values(store::testing::Backend::kSqlite,
                                           store::testing::Backend::kEtcd),
                         [](const auto& info) { return store::testing::BackendName(info.param); });

}  // namespace
}  // namespace warren::testing
