// The E2B REST API of a real `warren server` (server library, real SQLite store, real HTTP on
// loopback). No node agent runs here: where a test needs sandboxes to change phase, a
// StatusWriter writes the status the node agent would (through the status subresource, as the
// node does). Real sandboxes are covered by tests/e2e/sdk.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "api/json.h"
#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "base/ids.h"
#include "base/strings.h"
#include "base/time_format.h"
#include "net/dial.h"
#include "net/http_client.h"
#include "server/e2b/e2b_component.h"
#include "server/e2b/templates.h"
#include "server/server.h"
#include "store/testing/temp_store.h"

namespace warren::server::e2b {
namespace {

using api::Json;
using namespace std::chrono_literals;

// Plays the node agent's part: Pending → Running+Ready, spec.paused → Paused and back. The
// main container's image decides the rest: "nope" fails the sandbox, "slow" never starts it,
// "nopause" never pauses (a pause still under way).
class StatusWriter {
 public:
  explicit StatusWriter(store::Store& store) : store_(store) {
    auto watcher = store_.Watch(&api::SandboxKind(), {});
    EXPECT_TRUE(watcher.ok());
    watcher_ = std::move(*watcher);
    thread_ = std::thread([this] { Run(); });
  }
  ~StatusWriter() {
    stop_ = true;
    thread_.join();
  }

 private:
  void Run() {
    while (!stop_) {
      auto e = watcher_->Next(50ms);
      if (!e.ok() || !*e || (*e)->type == store::EventType::kDeleted) continue;
      Reconcile(*(*e)->object);
    }
  }
  void Reconcile(api::Object o) {
    if (o.metadata.deletion_timestamp) return;
    auto spec = api::DecodeSpec<api::SandboxSpec>(o);
    auto status = api::DecodeStatus<api::SandboxStatus>(o);
    if (!spec.ok() || !status.ok()) return;
    std::string image = spec->pod_template && !spec->pod_template->spec.containers.empty()
                            ? spec->pod_template->spec.containers[0].image
                            : "";
    api::SandboxStatus want = *status;
    if (image == "slow") return;
    if (image == "nope") {
      want.phase = "Failed";
      want.message = "image \"nope\" not found";
      api::SetCondition(
          want.conditions,
          {.type = "Ready", .status = "False", .reason = "ImageNotFound", .message = want.message},
          base::RealClock().Now());
    } else {
      want.phase = spec->paused && image != "nopause" ? "Paused" : "Running";
      api::SetCondition(want.conditions, {.type = "Ready", .status = "True", .reason = "EnvdReady"},
                        base::RealClock().Now());
    }
    if (want.phase == status->phase && !status->conditions.empty()) return;
    api::EncodeStatus(want, o);
    (void)store_.UpdateStatus(std::move(o));  // a conflict brings a newer event anyway
  }

  store::Store& store_;
  std::unique_ptr<store::Watcher> watcher_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Records what the E2B layer told the gateway.
class RecordingRoutes : public RouteNotifier {
 public:
  void SandboxChanged(const api::Object& sandbox) override {
    std::lock_guard lock(mu_);
    changed.push_back(sandbox.metadata.name);
  }
  void SandboxRemoved(std::string_view id, std::string_view, int64_t) override {
    std::lock_guard lock(mu_);
    removed.push_back(std::string(id));
  }
  std::vector<std::string> Removed() {
    std::lock_guard lock(mu_);
    return removed;
  }
  std::vector<std::string> changed, removed;

 private:
  std::mutex mu_;
};

struct Reply {
  int status = 0;
  Json body;
  net::Headers headers;
};

class E2bApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.port = 0;
    o.data_dir = dir_.path() + "/data";
    o.loop_threads = 1;
    auto server = Server::Create(o);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    E2bParts parts;
    parts.routes = &routes_;
    parts.options.ready_timeout = 3s;
    parts.options.pause_timeout = 3s;
    parts.options.v2_timeouts.max_seconds = 3600;
    auto e2b = E2bComponent::Install(*server_, std::move(parts));
    ASSERT_TRUE(e2b.ok()) << e2b.status();
    e2b_ = *e2b;
    ASSERT_TRUE(server_->Start().ok());
    http_ = *net::HttpClient::ForAddress("127.0.0.1:" + std::to_string(server_->port()));
    admin_ = e2b_->keys().Create({.team = "default", .name = "admin", .admin = true})->key;
    alpha_ = e2b_->keys().Create({.team = "alpha"})->key;
    beta_ = e2b_->keys().Create({.team = "beta"})->key;
  }
  void TearDown() override {
    writer_.reset();
    if (server_) server_->Stop(0ms);
  }

  void StartNode() { writer_ = std::make_unique<StatusWriter>(server_->store()); }

  Reply Call(const std::string& method, const std::string& target, const std::string& key,
             const std::string& body = "") {
    net::ClientRequest req;
    req.method = method;
    req.target = target;
    if (!key.empty()) req.headers.Set("X-API-Key", key);
    if (!body.empty()) {
      req.headers.Set("Content-Type", "application/json");
      req.body = body;
    }
    req.timeout = 20s;
    auto resp = http_->Do(req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    Reply r;
    if (!resp.ok()) return r;
    r.status = resp->status;
    r.headers = resp->headers;
    if (!resp->body.empty()) {
      auto doc = api::ParseJson(resp->body);
      EXPECT_TRUE(doc.ok()) << method << " " << target << ": " << resp->body;
      if (doc.ok()) r.body = std::move(*doc);
    }
    return r;
  }

  // Asserts an E2B error: that status, and a body of exactly {"code": status, "message": ...}.
  void ExpectError(const Reply& r, int status, std::string_view needle) {
    EXPECT_EQ(r.status, status) << r.body.dump();
    ASSERT_TRUE(r.body.is_object()) << r.body.dump();
    EXPECT_EQ(r.body.size(), 2u) << r.body.dump();
    EXPECT_EQ(r.body.value("code", 0), status) << r.body.dump();
    ASSERT_TRUE(r.body["message"].is_string()) << r.body.dump();
    EXPECT_NE(r.body["message"].get<std::string>().find(needle), std::string::npos)
        << r.body.dump();
  }

  std::string CreateSandbox(const std::string& key, const std::string& body) {
    Reply r = Call("POST", "/v2/sandboxes", key, body);
    EXPECT_EQ(r.status, 201) << r.body.dump();
    return r.body.value("sandboxID", "");
  }

  std::optional<api::Object> Object(const std::string& ns, const std::string& id) {
    auto got = server_->store().Get(api::SandboxKind(), ns, id);
    if (!got.ok()) return std::nullopt;
    return *got;
  }

  void AddTemplate(const std::string& name, const std::string& image) {
    ASSERT_TRUE(EnsureTemplate(server_->store(), "default", name, image).ok());
  }

  store::testing::TempDir dir_;
  RecordingRoutes routes_;
  std::unique_ptr<Server> server_;
  E2bComponent* e2b_ = nullptr;
  std::unique_ptr<net::HttpClient> http_;
  std::unique_ptr<StatusWriter> writer_;
  std::string admin_, alpha_, beta_;
};

TEST_F(E2bApiTest, HealthNeedsNoKeyAndEverythingElseDoes) {
  EXPECT_EQ(Call("GET", "/health", "").status, 200);
  ExpectError(Call("GET", "/v2/sandboxes", ""), 401, "missing API key");
  ExpectError(Call("GET", "/v2/sandboxes", "e2b_" + std::string(40, 'a')), 401, "invalid API key");
  ExpectError(Call("GET", "/v2/sandboxes", "not-a-key"), 401, "invalid API key");
  ExpectError(Call("POST", "/v2/sandboxes", "", R"({"templateID":"base"})"), 401, "API key");
  ExpectError(Call("DELETE", "/sandboxes/iaaaaaaaaaaaaaaaaaaaa", ""), 401, "API key");
  ExpectError(Call("GET", "/templates", ""), 401, "API key");
  ExpectError(Call("GET", "/api-keys", ""), 401, "API key");
}

TEST_F(E2bApiTest, BadInputGetsTheExactStatusAndBody) {
  ExpectError(Call("POST", "/v2/sandboxes", alpha_, "{not json"), 400, "invalid JSON");
  ExpectError(Call("POST", "/sandboxes", alpha_, "[1]"), 400, "JSON object");
  ExpectError(Call("POST", "/v2/sandboxes", alpha_, R"({"templateID":"no-such"})"), 400,
              "template \"no-such\" not found");
  ExpectError(Call("POST", "/v2/sandboxes", alpha_, R"({"templateID":"Bad_Name"})"), 400,
              "not a valid template name");
  ExpectError(Call("POST", "/v2/sandboxes", alpha_, R"({"templateID":"base","timeout":0})"), 400,
              "timeout must be > 0");
  ExpectError(Call("POST", "/v2/sandboxes", alpha_, R"({"templateID":"base","timeout":-1})"), 400,
              "timeout must be > 0");
  ExpectError(Call("POST", "/v2/sandboxes", alpha_, R"({"templateID":"base","timeout":3601})"), 400,
              "above the maximum");
  ExpectError(Call("GET", "/v2/sandboxes?limit=0", alpha_), 400, "limit");
  ExpectError(Call("GET", "/v2/sandboxes?state=zombie", alpha_), 400, "state");
  ExpectError(Call("GET", "/v2/sandboxes?nextToken=zzz", alpha_), 400, "Invalid next token");
  ExpectError(Call("GET", "/sandboxes/iaaaaaaaaaaaaaaaaaaaa/metrics?start=x", alpha_), 400,
              "start");
  ExpectError(Call("POST", "/sandboxes/iaaaaaaaaaaaaaaaaaaaa/timeout", alpha_, "{}"), 400,
              "timeout is required");
  ExpectError(Call("POST", "/sandboxes/iaaaaaaaaaaaaaaaaaaaa/timeout", alpha_, "{\"timeout\":-3}"),
              400, "timeout");
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/sandboxes/iaaaaaaaaaaaaaaaaaaaa"},
           {"DELETE", "/sandboxes/iaaaaaaaaaaaaaaaaaaaa"},
           {"DELETE", "/sandboxes/nonexistingsandbox"},
           {"POST", "/sandboxes/iaaaaaaaaaaaaaaaaaaaa/pause"},
           {"POST", "/v2/sandboxes/iaaaaaaaaaaaaaaaaaaaa/connect"},
           {"POST", "/sandboxes/iaaaaaaaaaaaaaaaaaaaa/connect"},
           {"GET", "/sandboxes/iaaaaaaaaaaaaaaaaaaaa/metrics"}}) {
    ExpectError(Call(method, path, alpha_, method == "POST" ? "{}" : ""), 404, "not found");
  }
  // Nothing half-made remains from any of it.
  auto list = server_->store().List(api::SandboxKind(), {});
  EXPECT_TRUE(list->items.empty());
}

// A body above the limit is refused before it is read: announced by Content-Length (a raw
// socket, so the client cannot trip over the server closing while it still sends).
TEST_F(E2bApiTest, AnOversizedBodyIs413) {
  auto fd = net::DialTcp("127.0.0.1", server_->port(), 2s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  std::string head =
      "POST /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: " + alpha_ +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(2u << 20) +
      "\r\n\r\n{";
  ASSERT_EQ(::write(fd->get(), head.data(), head.size()), static_cast<ssize_t>(head.size()));
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd->get(), buf, sizeof buf)) > 0;) got.append(buf, n);
  EXPECT_TRUE(got.starts_with("HTTP/1.1 413")) << got;
  auto body = api::ParseJson(got.substr(got.find("\r\n\r\n") + 4));
  ASSERT_TRUE(body.ok()) << got;
  EXPECT_EQ((*body)["code"], 413);
  EXPECT_TRUE((*body)["message"].is_string());
}

TEST_F(E2bApiTest, CreateReturnsOnceReadyWithEveryRequiredField) {
  StartNode();
  Reply r = Call("POST", "/v2/sandboxes", alpha_,
                 R"({"templateID":"base","metadata":{"my key":"a&b=c"},"envVars":{"FOO":"bar"},
                     "timeout":120})");
  ASSERT_EQ(r.status, 201) << r.body.dump();
  for (const char* field : {"sandboxID", "templateID", "clientID", "envdVersion", "envdAccessToken",
                            "trafficAccessToken", "domain", "alias"}) {
    EXPECT_TRUE(r.body.contains(field)) << field << " missing: " << r.body.dump();
  }
  std::string id = r.body["sandboxID"];
  EXPECT_TRUE(base::IsValidSandboxId(id)) << id;
  EXPECT_EQ(r.body["templateID"], "base");
  EXPECT_EQ(r.body["envdVersion"], "0.6.4");
  std::string token = r.body["envdAccessToken"];
  EXPECT_EQ(token.size(), 64u);
  EXPECT_TRUE(r.body["trafficAccessToken"].is_null());
  EXPECT_TRUE(r.body["domain"].is_null());

  auto o = Object("alpha", id);
  ASSERT_TRUE(o);
  // The token and the env vars are on the object, sealed: not readable by its readers.
  const api::SandboxSecrets& secrets = server_->secrets();
  EXPECT_EQ(*secrets.AccessToken(*o), token);
  std::string text = api::ObjectToJsonText(*o);
  EXPECT_EQ(text.find(token), std::string::npos) << text;
  EXPECT_EQ(text.find("bar"), std::string::npos) << text;
  EXPECT_EQ(o->metadata.labels.at("agents.kruise.io/sandbox-id"), id);
  auto init = api::ParseJson(*secrets.InitRequest(*o));
  ASSERT_TRUE(init.ok());
  EXPECT_EQ((*init)["envVars"]["FOO"], "bar");
  EXPECT_EQ((*init)["accessToken"], token);
  EXPECT_EQ((*init)["defaultUser"], "user");
  auto end = base::ParseRfc3339(o->spec()["shutdownTime"].get<std::string>());
  auto left = *end - base::RealClock().Now();
  EXPECT_GT(left, 110s);
  EXPECT_LE(left, 122s);
  EXPECT_FALSE(o->spec().contains("pauseTime"));

  Reply info = Call("GET", "/sandboxes/" + id, alpha_);
  ASSERT_EQ(info.status, 200);
  for (const char* field :
       {"sandboxID", "templateID", "clientID", "startedAt", "endAt", "cpuCount", "memoryMB",
        "diskSizeMB", "metadata", "state", "envdVersion", "envdAccessToken", "lifecycle"}) {
    EXPECT_TRUE(info.body.contains(field)) << field << " missing: " << info.body.dump();
  }
  EXPECT_EQ(info.body["state"], "running");
  EXPECT_EQ(info.body["metadata"]["my key"], "a&b=c");
  EXPECT_EQ(info.body["lifecycle"]["onTimeout"], "kill");
  EXPECT_TRUE(info.body["envdAccessToken"].is_null())
      << "only create and connect hand out the token: " << info.body.dump();
  EXPECT_EQ(routes_.changed.size(), 1u) << "the gateway hears of the new sandbox at once";
}

TEST_F(E2bApiTest, V1CreateAnswers201AndHonoursSecureFalse) {
  StartNode();
  Reply r = Call("POST", "/sandboxes", alpha_,
                 R"({"templateID":"base","timeout":300,"secure":true,"allow_internet_access":true,
                     "metadata":{},"envVars":{}})");
  ASSERT_EQ(r.status, 201) << r.body.dump();
  EXPECT_EQ(r.body["envdAccessToken"].get<std::string>().size(), 64u);
  Reply open = Call("POST", "/sandboxes", alpha_, R"({"templateID":"base","secure":false})");
  ASSERT_EQ(open.status, 201) << open.body.dump();
  EXPECT_TRUE(open.body["envdAccessToken"].is_null());
  // v1's default timeout is 15 s.
  auto o = Object("alpha", open.body["sandboxID"]);
  auto end = base::ParseRfc3339(o->spec()["shutdownTime"].get<std::string>());
  EXPECT_LE(*end - base::RealClock().Now(), 17s);
}

TEST_F(E2bApiTest, ACreateThatNeverGetsReadyIs504AndLeavesNothingBehind) {
  StartNode();
  AddTemplate("slow", "slow");
  Reply r = Call("POST", "/v2/sandboxes", alpha_, R"({"templateID":"slow"})");
  ExpectError(r, 504, "was not Running and Ready within");
  auto list = server_->store().List(api::SandboxKind(), {});
  for (const auto& o : list->items) EXPECT_TRUE(o.metadata.deletion_timestamp) << o.Key();
}

TEST_F(E2bApiTest, ACreateWhoseClientGivesUpStopsWaitingAndLeavesNothingBehind) {
  StartNode();
  AddTemplate("slow", "slow");
  // Asks to wait ten minutes for a sandbox that never gets ready, then hangs up.
  std::string body =
      R"({"templateID":"slow","metadata":{"e2b.agents.kruise.io/wait-ready-timeout-seconds":"600"}})";
  auto fd = net::DialTcp("127.0.0.1", server_->port(), 5s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  std::string req =
      "POST /v2/sandboxes HTTP/1.1\r\nHost: t\r\nX-API-Key: " + alpha_ +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  ASSERT_EQ(write(fd->get(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
  auto created = [&] {
    auto list = server_->store().List(api::SandboxKind(), {});
    return list.ok() && !list->items.empty();
  };
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!created() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(created());
  fd->reset();
  // The wait ends at once and the sandbox is deleted, long before its ten minutes.
  auto discarded = [&] {
    auto list = server_->store().List(api::SandboxKind(), {});
    if (!list.ok()) return false;
    for (const auto& o : list->items) {
      if (!o.metadata.deletion_timestamp) return false;
    }
    return true;
  };
  deadline = std::chrono::steady_clock::now() + 10s;
  while (!discarded() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(discarded());
}

TEST_F(E2bApiTest, ACreateThatFailsReportsTheNodesReason) {
  StartNode();
  AddTemplate("broken", "nope");
  Reply r = Call("POST", "/v2/sandboxes", alpha_, R"({"templateID":"broken"})");
  ExpectError(r, 500, "image \"nope\" not found");
  auto list = server_->store().List(api::SandboxKind(), {});
  EXPECT_TRUE(list->items.empty());
}

TEST_F(E2bApiTest, AnotherTeamsSandboxIsNotFoundAndAdminsSeeEverything) {
  StartNode();
  std::string id = CreateSandbox(alpha_, R"({"templateID":"base"})");
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/sandboxes/" + id},
           {"DELETE", "/sandboxes/" + id},
           {"POST", "/sandboxes/" + id + "/pause"},
           {"POST", "/sandboxes/" + id + "/timeout"},
           {"POST", "/v2/sandboxes/" + id + "/connect"}}) {
    ExpectError(Call(method, path, beta_, path.ends_with("timeout") ? R"({"timeout":5})" : "{}"),
                404, "not found");
  }
  EXPECT_TRUE(Call("GET", "/v2/sandboxes", beta_).body.empty());
  EXPECT_EQ(Call("GET", "/v2/sandboxes", alpha_).body.size(), 1u);
  EXPECT_EQ(Call("GET", "/v2/sandboxes", admin_).body.size(), 1u);
  EXPECT_EQ(Call("GET", "/sandboxes/" + id, admin_).status, 200);
  EXPECT_TRUE(Object("alpha", id)) << "beta's kill must not have touched it";
}

TEST_F(E2bApiTest, ListFiltersByMetadataAndPagesWithXNextToken) {
  StartNode();
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(CreateSandbox(alpha_, R"({"templateID":"base","metadata":{"suite":"page","n":")" +
                                            std::to_string(i) + R"("}})"));
  }
  CreateSandbox(alpha_, R"({"templateID":"base","metadata":{"suite":"other"}})");
  std::string filter = "metadata=suite%253Dpage";  // both SDKs encode k=v twice more
  std::vector<std::string> seen;
  std::string token;
  for (int page = 0; page < 5; ++page) {
    std::string target = "/v2/sandboxes?limit=1&" + filter;
    if (!token.empty()) target += "&nextToken=" + base::PercentEncode(token);
    Reply r = Call("GET", target, alpha_);
    ASSERT_EQ(r.status, 200) << r.body.dump();
    ASSERT_EQ(r.body.size(), 1u);
    seen.push_back(r.body[0]["sandboxID"]);
    auto next = r.headers.Get("X-Next-Token");
    if (!next) break;
    token = std::string(*next);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{ids[2], ids[1], ids[0]})) << "newest first";
  Reply all = Call("GET", "/v2/sandboxes?limit=100", alpha_);
  EXPECT_EQ(all.body.size(), 4u);
  EXPECT_FALSE(all.headers.Get("X-Next-Token")) << "no header on the last page";
  for (const char* field : {"sandboxID", "templateID", "clientID", "startedAt", "endAt", "cpuCount",
                            "memoryMB", "diskSizeMB", "metadata", "state", "envdVersion"}) {
    EXPECT_TRUE(all.body[0].contains(field)) << field;
  }
}

TEST_F(E2bApiTest, KillIs204ThenGoneEverywhereAtOnce) {
  StartNode();
  std::string id = CreateSandbox(alpha_, R"({"templateID":"base"})");
  Reply killed = Call("DELETE", "/sandboxes/" + id, alpha_);
  EXPECT_EQ(killed.status, 204);
  EXPECT_TRUE(killed.body.is_null()) << "204 has no body";
  EXPECT_TRUE(Call("GET", "/v2/sandboxes", alpha_).body.empty());
  ExpectError(Call("GET", "/sandboxes/" + id, alpha_), 404, "not found");
  ExpectError(Call("DELETE", "/sandboxes/" + id, alpha_), 404, "not found");
  ExpectError(Call("POST", "/v2/sandboxes/" + id + "/connect", alpha_, "{}"), 404, "not found");
  EXPECT_EQ(routes_.Removed(), std::vector<std::string>{id}) << "the gateway hears at once";
}

// A request that wakes the sandbox (autoResume, a connect) while its pause is under way: the
// pause says so at once, rather than a 504 once its wait for Paused runs out.
TEST_F(E2bApiTest, APauseOvertakenByAResumeSaysSo) {
  StartNode();
  AddTemplate("nopause", "nopause");
  std::string id = CreateSandbox(alpha_, R"({"templateID":"nopause","timeout":600})");
  std::thread resumer([&] {
    for (int i = 0; i < 200; ++i) {
      auto o = Object("alpha", id);
      if (o && std::as_const(*o).spec().value("paused", false)) {
        (void)server_->store().Patch(api::SandboxKind(), "alpha", o->metadata.name,
                                     Json{{"spec", {{"paused", false}}}});
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
  });
  Reply r = Call("POST", "/sandboxes/" + id + "/pause", alpha_, "{}");
  resumer.join();
  ExpectError(r, 409, "was resumed before its pause finished");
  EXPECT_EQ(Call("GET", "/sandboxes/" + id, alpha_).body["state"], "running");
}

TEST_F(E2bApiTest, PauseConnectAndTimeoutsFollowE2bSemantics) {
  StartNode();
  std::string id = CreateSandbox(alpha_, R"({"templateID":"base","timeout":600})");
  auto end_of = [&] {
    auto o = Object("alpha", id);
    return *base::ParseRfc3339(o->spec()["shutdownTime"].get<std::string>());
  };
  base::WallTime first_end = end_of();
  // Connect on a running sandbox only extends: 60 s is shorter, nothing changes.
  Reply c = Call("POST", "/v2/sandboxes/" + id + "/connect", alpha_, R"({"timeout":60})");
  EXPECT_EQ(c.status, 200) << c.body.dump();
  EXPECT_EQ(c.body["sandboxID"], id);
  EXPECT_EQ(end_of(), first_end);
  Call("POST", "/v2/sandboxes/" + id + "/connect", alpha_, R"({"timeout":1200})");
  EXPECT_GT(end_of(), first_end + 500s);
  // setTimeout may shorten.
  EXPECT_EQ(Call("POST", "/sandboxes/" + id + "/timeout", alpha_, R"({"timeout":5})").status, 204);
  EXPECT_LE(end_of() - base::RealClock().Now(), 6s);

  EXPECT_EQ(Call("POST", "/sandboxes/" + id + "/pause", alpha_, "{}").status, 204);
  EXPECT_EQ(Object("alpha", id)->status()["phase"], "Paused") << "pause waits for Paused";
  EXPECT_FALSE(Object("alpha", id)->spec().contains("shutdownTime"))
      << "a paused sandbox keeps until killed or resumed";
  ExpectError(Call("POST", "/sandboxes/" + id + "/pause", alpha_, "{}"), 409, "already paused");
  EXPECT_EQ(Call("GET", "/sandboxes/" + id, alpha_).body["state"], "paused");
  EXPECT_EQ(Call("GET", "/v2/sandboxes?state=paused", alpha_).body.size(), 1u);
  EXPECT_TRUE(Call("GET", "/v2/sandboxes?state=running", alpha_).body.empty());

  Reply resumed = Call("POST", "/v2/sandboxes/" + id + "/connect", alpha_, R"({"timeout":90})");
  EXPECT_EQ(resumed.status, 201) << resumed.body.dump();
  EXPECT_EQ(resumed.body["envdAccessToken"], *server_->secrets().AccessToken(*Object("alpha", id)))
      << "the token survives pause and resume";
  EXPECT_EQ(Object("alpha", id)->status()["phase"], "Running");
  auto left = end_of() - base::RealClock().Now();
  EXPECT_GT(left, 80s);
  EXPECT_LE(left, 92s);
  ExpectError(Call("POST", "/sandboxes/" + id + "/resume", alpha_, "{}"), 409, "already running");
}

TEST_F(E2bApiTest, AutoPauseSetsPauseTimeInsteadOfShutdown) {
  StartNode();
  std::string id = CreateSandbox(alpha_, R"({"templateID":"base","timeout":30,"autoPause":true,
                               "autoResume":{"enabled":true}})");
  auto o = Object("alpha", id);
  EXPECT_TRUE(o->spec().contains("pauseTime"));
  EXPECT_FALSE(o->spec().contains("shutdownTime"));
  EXPECT_EQ(o->metadata.annotations.at("warren.dev/auto-resume"), "true");
  Reply info = Call("GET", "/sandboxes/" + id, alpha_);
  EXPECT_EQ(info.body["lifecycle"]["onTimeout"], "pause");
  EXPECT_EQ(info.body["lifecycle"]["autoResume"], true);
  std::string never = CreateSandbox(
      alpha_, R"({"templateID":"base","metadata":{"e2b.agents.kruise.io/never-timeout":"true"}})");
  auto n = Object("alpha", never);
  EXPECT_FALSE(n->spec().contains("shutdownTime"));
  EXPECT_FALSE(n->spec().contains("pauseTime"));
  EXPECT_TRUE(Call("GET", "/sandboxes/" + never, alpha_).body["metadata"].empty());
}

TEST_F(E2bApiTest, TemplatesListsWhatAKeyCanCreateFrom) {
  AddTemplate("python", "base");
  Reply r = Call("GET", "/templates", alpha_);
  ASSERT_EQ(r.status, 200);
  std::set<std::string> names;
  for (const auto& t : r.body) names.insert(t["templateID"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"base", "python"}));
}

TEST_F(E2bApiTest, ApiKeysAreManagedByAdminsAndTeamsOnlyForThemselves) {
  Reply made = Call("POST", "/api-keys", admin_, R"({"team":"gamma","name":"g1"})");
  ASSERT_EQ(made.status, 201) << made.body.dump();
  std::string key = made.body["key"];
  EXPECT_EQ(Call("GET", "/v2/sandboxes", key).status, 200) << "the new key works at once";
  ExpectError(Call("POST", "/api-keys", alpha_, R"({"team":"gamma"})"), 403, "own team");
  ExpectError(Call("POST", "/api-keys", alpha_, R"({"admin":true})"), 403, "own team");
  EXPECT_EQ(Call("POST", "/api-keys", alpha_, R"({"name":"alpha-2"})").status, 201);
  EXPECT_EQ(Call("GET", "/api-keys", alpha_).body.size(), 2u);
  EXPECT_EQ(Call("GET", "/api-keys", admin_).body.size(), 5u);
  ExpectError(Call("DELETE", "/api-keys/g1", alpha_), 404, "not found");
  ExpectError(Call("DELETE", "/api-keys/admin", admin_), 409, "last admin key");
  ExpectError(Call("POST", "/api-keys", admin_, R"({"team":"Not Valid"})"), 400, "team");
  ExpectError(Call("POST", "/api-keys", admin_, R"({"team":7})"), 400, "team must be a string");
  ExpectError(Call("POST", "/api-keys", admin_, "{nope"), 400, "invalid JSON");
  EXPECT_EQ(
      Call("POST", "/api-keys", admin_, R"({"team":"nulls","name":null,"admin":null})").status,
      201);
  EXPECT_EQ(Call("DELETE", "/api-keys/g1", admin_).status, 204);
  ExpectError(Call("GET", "/v2/sandboxes", key), 401, "invalid API key");
}

}  // namespace
}  // namespace warren::server::e2b
