// `warren server --store etcd://…` against a real etcd started by the test: objects created,
// read and watched through the REST API live in etcd (not in the data directory), and a second
// server on the same etcd sees them.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "api/json.h"
#include "base/encoding.h"
#include "process.h"
#include "store/testing/etcd_process.h"

namespace warren::testing {
namespace {

using namespace std::chrono_literals;
using api::Json;

constexpr const char* kTemplates =
    "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxtemplates";

struct Reply {
  int code = 0;
  Json body;
};

Reply Call(net::HttpClient& http, const std::string& method, const std::string& target,
           const std::string& body = "", const std::string& type = "application/json") {
  net::ClientRequest req;
  req.method = method;
  req.target = target;
  req.body = body;
  if (!body.empty()) req.headers.Set("Content-Type", type);
  Reply r;
  auto resp = http.Do(req);
  if (!resp.ok()) return r;
  r.code = resp->status;
  auto j = api::ParseJson(resp->body);
  if (j.ok()) r.body = std::move(*j);
  return r;
}

// The value etcd holds under `key` (empty when none), read straight from etcd.
std::string EtcdValue(const std::string& endpoint, const std::string& key) {
  auto client = net::HttpClient::ForAddress(endpoint);
  if (!client.ok()) return "";
  net::ClientRequest req;
  req.method = "POST";
  req.target = "/v3/kv/range";
  req.body = api::DumpJson(Json{{"key", base::Base64Encode(key)}});
  auto r = (*client)->Do(req);
  if (!r.ok() || r->status != 200) return "";
  Json body = Json::parse(r->body);
  if (!body.contains("kvs")) return "";
  return base::Base64Decode(body["kvs"][0]["value"].get<std::string>()).value_or("");
}

TEST(ServerEtcd, CreateGetAndWatchThroughTheApiLiveInEtcd) {
  store::testing::EtcdCluster etcd(1);
  ServerProcess s("", {"--store", etcd.Url("/warren-it")});
  Json tmpl = Json::parse(R"({"apiVersion": "agents.kruise.io/v1alpha1",
    "kind": "SandboxTemplate", "metadata": {"name": "t"},
    "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "base"}]}}}})");
  Reply created = Call(s.http(), "POST", kTemplates, api::DumpJson(tmpl));
  ASSERT_EQ(created.code, 201) << created.body;
  const std::string rv = created.body["metadata"]["resourceVersion"];
  const std::string uid = created.body["metadata"]["uid"];

  Reply got = Call(s.http(), "GET", std::string(kTemplates) + "/t");
  ASSERT_EQ(got.code, 200);
  EXPECT_EQ(got.body["metadata"]["uid"], uid);
  EXPECT_EQ(got.body["metadata"]["resourceVersion"], rv);

  // It is in etcd under the URL's prefix, and no SQLite database was made.
  std::string stored =
      EtcdValue(etcd.endpoints()[0], "/warren-it/agents.kruise.io/sandboxtemplates/default/t");
  EXPECT_NE(stored.find(uid), std::string::npos) << stored;
  EXPECT_NE(::access((s.data_dir() + "/store.db").c_str(), F_OK), 0);

  // A watch from the create's revision streams the patch and the delete.
  auto watch_client = net::HttpClient::ForAddress(s.address());
  ASSERT_TRUE(watch_client.ok());
  (*watch_client)->SetDefaultHeader("Authorization", "Bearer " + s.admin_key());
  std::mutex mu;
  std::vector<Json> events;
  std::thread watcher([&] {
    net::ClientRequest req;
    req.target = std::string(kTemplates) + "?watch=1&resourceVersion=" + rv;
    std::string buffer;
    auto r = (*watch_client)->DoStreaming(req, nullptr, [&](std::string_view data) {
      buffer.append(data);
      std::lock_guard lock(mu);
      for (size_t nl; (nl = buffer.find('\n')) != std::string::npos; buffer.erase(0, nl + 1)) {
        events.push_back(Json::parse(buffer.substr(0, nl)));
      }
      return events.size() < 2;
    });
    EXPECT_TRUE(r.ok()) << r.status();
  });
  Reply patched =
      Call(s.http(), "PATCH", std::string(kTemplates) + "/t",
           R"({"metadata":{"labels":{"tier":"gold"}}})", "application/merge-patch+json");
  ASSERT_EQ(patched.code, 200) << patched.body;

  // A second server on the same etcd (another data directory) sees the same object.
  {
    ServerProcess other("", {"--store", etcd.Url("/warren-it")});
    Reply seen = Call(other.http(), "GET", std::string(kTemplates) + "/t");
    ASSERT_EQ(seen.code, 200);
    EXPECT_EQ(seen.body["metadata"]["labels"]["tier"], "gold");
    EXPECT_EQ(seen.body["metadata"]["resourceVersion"],
              patched.body["metadata"]["resourceVersion"]);
  }

  ASSERT_EQ(Call(s.http(), "DELETE", std::string(kTemplates) + "/t").code, 200);
  watcher.join();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["type"], "MODIFIED");
  EXPECT_EQ(events[0]["object"]["metadata"]["labels"]["tier"], "gold");
  EXPECT_EQ(events[1]["type"], "DELETED");
  EXPECT_EQ(
      EtcdValue(etcd.endpoints()[0], "/warren-it/agents.kruise.io/sandboxtemplates/default/t"), "");
  EXPECT_EQ(Call(s.http(), "GET", std::string(kTemplates) + "/t").code, 404);
}

// A store URL that is not one is refused at start, with the reason.
TEST(ServerEtcd, ABadStoreUrlIsRefused) {
  store::testing::TempDir dir;
  CommandResult r = RunCommand(
      {WARREN_BIN, "server", "--port", "0", "--data-dir", dir.path(), "--store", "etcd://"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("is not host:port"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace warren::testing
