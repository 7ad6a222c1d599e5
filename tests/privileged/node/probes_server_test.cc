// Probes through a whole `warren server` (its node agent, controllers and gateway): a pool
// member whose readiness probe fails is not claimed until it passes, and an AutoPausePolicy
// pauses an idle sandbox that the next request through the gateway resumes.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "api/json.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "net/http_client.h"
#include "process.h"
#include "server_sandboxes.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;
using warren::testing::CommandResult;
using warren::testing::ServerProcess;

api::Json Get(ServerProcess& s, const std::string& path) { return GetJson(s, path); }

const api::Json* Condition(const api::Json& obj, const std::string& type) {
  if (!obj.is_object() || !obj.contains("status") || !obj["status"].contains("conditions")) {
    return nullptr;
  }
  for (const api::Json& c : obj["status"]["conditions"]) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

std::string ConditionStatus(const api::Json& obj, const std::string& type) {
  const api::Json* c = Condition(obj, type);
  return c ? c->value("status", "") : "";
}

// Polls `fn` every 50 ms for up to `timeout`; the last value it saw.
template <class Fn>
bool Eventually(Fn fn, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (fn()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return fn();
}

class ProbeServer : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    setenv("WARREN_ENVD_PATH", WARREN_ENVD_BIN, 1);
    setenv("WARREN_NODE_AGENT", "on", 1);
    server_ = std::make_unique<ServerProcess>();
  }
  // SIGTERM leaves sandboxes running by design: delete them (and the pools and claims that
  // would make more) first.
  void TearDown() override {
    if (server_ == nullptr) return;
    for (const char* kind : {"sbc", "sbs", "sbx"}) {
      CommandResult r = server_->Cli({"delete", kind, "--all"});
      EXPECT_EQ(r.exit_code, 0) << kind << ": " << r.err;
    }
    EXPECT_TRUE(Eventually(
        [&] {
          api::Json list = Get(*server_, "/apis/agents.kruise.io/v1alpha1/sandboxes");
          return list.is_object() && list["items"].empty();
        },
        60s))
        << "sandboxes left behind";
  }
  void Apply(const std::string& yaml) {
    CommandResult r = server_->Cli({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  std::unique_ptr<ServerProcess> server_;
};

TEST_F(ProbeServer, ClaimsSkipAPoolMemberUntilItsReadinessProbePasses) {
  Apply(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata: {name: slowpool, namespace: default}
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["/bin/sh", "-c", "sleep 6; mkdir -p /www; echo ok > /www/index.html; exec httpd -f -p 8080 -h /www"]
        resources: {limits: {memory: 64Mi}}
        readinessProbe: {httpGet: {path: /index.html, port: 8080}, periodSeconds: 1}
)");
  // The member runs (envd answers) but is not Ready: its server is still starting.
  std::string member;
  ASSERT_TRUE(Eventually(
      [&] {
        api::Json list =
            Get(*server_, "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes");
        if (!list.is_object() || list["items"].empty()) return false;
        const api::Json& m = list["items"][0];
        member = m["metadata"].value("name", "");
        return m.contains("status") && m["status"].value("phase", "") == "Running";
      },
      60s));
  api::Json m = GetSandbox(*server_, member);
  EXPECT_EQ(ConditionStatus(m, "Ready"), "False") << api::DumpJson(m);
  EXPECT_EQ(Condition(m, "Ready")->value("reason", ""), "ReadinessProbeFailed");

  Apply(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxClaim
metadata: {name: want, namespace: default}
spec: {templateName: slowpool, replicas: 1, createOnNoStock: false, claimTimeout: 2m}
)");
  // While readiness fails the claim takes nothing (and makes nothing: createOnNoStock false).
  std::this_thread::sleep_for(1500ms);
  m = GetSandbox(*server_, member);
  if (ConditionStatus(m, "Ready") != "True") {
    api::Json claim =
        Get(*server_, "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxclaims/want");
    EXPECT_EQ(claim["status"].value("claimedReplicas", 0), 0) << api::DumpJson(claim);
    EXPECT_NE(m["metadata"]["labels"].value("agents.kruise.io/sandbox-claimed", ""), "true");
  } else {
    ADD_FAILURE() << "the member became Ready within 1.5 s of running; the server starts after 6 s";
  }
  // Once the server answers, the member is Ready and the claim takes it.
  ASSERT_TRUE(Eventually(
      [&] {
        api::Json claim =
            Get(*server_, "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxclaims/want");
        return claim.is_object() && claim.contains("status") &&
               claim["status"].value("claimedReplicas", 0) == 1;
      },
      60s));
  m = GetSandbox(*server_, member);
  EXPECT_EQ(ConditionStatus(m, "Ready"), "True") << api::DumpJson(m);
  EXPECT_EQ(m["metadata"]["labels"].value("agents.kruise.io/sandbox-claimed", ""), "true");
}

TEST_F(ProbeServer, AnIdleSandboxIsAutoPausedAndTheNextRequestResumesIt) {
  // Busy for 3 s, then idle; the policy pauses after 5 s of idle reports (and, after a resume,
  // after 5 s more of them).
  Apply(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: idler, namespace: default}
spec:
  probes:
  - {name: idle, containerName: main, exec: {command: [cat, /tmp/state]}, periodSeconds: 1}
  autoPausePolicy:
    pause:
      whenProbedIdleState: {probe: idle, messageRegex: "^idle", thresholdDuration: 5s}
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["/bin/sh", "-c", "mkdir -p /www; echo hello > /www/index.html; echo busy > /tmp/state; httpd -p 8080 -h /www; sleep 3; echo idle > /tmp/state; exec sleep 3600"]
        resources: {limits: {memory: 64Mi}}
)");
  api::Json running = WaitPhase(*server_, "idler", "Running");
  const std::string id = running["metadata"]["labels"].value("agents.kruise.io/sandbox-id", "");
  ASSERT_FALSE(id.empty());
  api::Json paused = WaitPhase(*server_, "idler", "Paused");
  EXPECT_TRUE(paused["spec"].value("paused", false));
  const api::Json* why = Condition(paused, "SandboxPaused");
  ASSERT_NE(why, nullptr) << api::DumpJson(paused);
  EXPECT_EQ(why->value("reason", ""), "AutoPaused");
  EXPECT_NE(why->value("message", "").find("probe idle reported idle (\"idle\") for 5s"),
            std::string::npos)
      << api::DumpJson(*why);
  EXPECT_EQ(ConditionStatus(paused, "agents.kruise.io/idle"), "True");

  // A request to its server through the gateway wakes it and is answered.
  const std::string gateway =
      "127.0.0.1:" + std::string(base::TrimSpace(
                         base::ReadSmallFile(server_->data_dir() + "/gateway.port").value()));
  auto client = net::HttpClient::ForAddress(gateway);
  ASSERT_TRUE(client.ok()) << client.status();
  net::ClientRequest req;
  req.target = "/index.html";
  req.headers.Set("E2b-Sandbox-Id", id);
  req.headers.Set("E2b-Sandbox-Port", "8080");
  req.timeout = 30s;
  auto resp = (*client)->Do(req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 200) << resp->body;
  EXPECT_EQ(resp->body, "hello\n");
  api::Json woke = GetSandbox(*server_, "idler");
  EXPECT_EQ(woke["status"].value("phase", ""), "Running") << api::DumpJson(woke);
  EXPECT_FALSE(woke["spec"].value("paused", false)) << api::DumpJson(woke);
  EXPECT_EQ(woke["status"].value("message", ""), "");  // the pause is over, and so its why
  // Still idle: the policy pauses it again once the threshold has passed anew.
  WaitPhase(*server_, "idler", "Paused");
}

}  // namespace
}  // namespace warren::node::testing
