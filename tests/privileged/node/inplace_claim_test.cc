// Claim-time in-place update against a real `warren server`: a SandboxClaim whose
// spec.inplaceUpdate names another image gets a warm busybox member that now runs that image,
// updated in place (same pool member, same id) before the claim completes.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <thread>

#include "api/json.h"
#include "process.h"
#include "server_sandboxes.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;
using warren::testing::CommandResult;
using warren::testing::ServerProcess;

constexpr char kPool[] = R"(
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata: {name: pool, namespace: default}
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["/bin/sh", "-c", "cat /etc/debian_version 2>/dev/null || echo no-debian; exec sleep 3600"]
        resources: {limits: {memory: 64Mi}}
)";

constexpr char kClaim[] = R"(
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxClaim
metadata: {name: wants-base, namespace: default}
spec:
  templateName: pool
  createOnNoStock: false
  inplaceUpdate:
    image: base
    resources: {limits: {memory: 128Mi}}
)";

api::Json WaitJson(ServerProcess& s, const std::string& path, const std::string& what,
                   const std::function<bool(const api::Json&)>& pred) {
  auto deadline = std::chrono::steady_clock::now() + 90s;
  api::Json obj;
  while (std::chrono::steady_clock::now() < deadline) {
    obj = GetJson(s, path);
    if (obj.is_object() && pred(obj)) return obj;
    std::this_thread::sleep_for(50ms);
  }
  ADD_FAILURE() << what << " not seen: " << api::DumpJson(obj);
  return obj;
}

std::string ConditionReason(const api::Json& o, const std::string& type) {
  const api::Json& st = o.value("status", api::Json::object());
  for (const api::Json& c : st.value("conditions", api::Json::array())) {
    if (c.value("type", "") == type) return c.value("reason", "");
  }
  return "";
}

TEST(InplaceClaim, ASandboxClaimGetsAWarmMemberUpdatedToItsImage) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  setenv("WARREN_ENVD_PATH", WARREN_ENVD_BIN, 1);
  setenv("WARREN_NODE_AGENT", "on", 1);
  auto s = std::make_unique<ServerProcess>();
  const std::string api = "/apis/agents.kruise.io/v1alpha1/namespaces/default";
  ASSERT_EQ(s->Cli({"apply", "-f", "-"}, kPool).exit_code, 0);
  WaitJson(*s, api + "/sandboxsets/pool", "1 available", [](const api::Json& o) {
    return o.value("status", api::Json::object()).value("availableReplicas", 0) == 1;
  });
  api::Json sets = GetJson(*s, api + "/sandboxes");
  ASSERT_EQ(sets.value("items", api::Json::array()).size(), 1u);
  const api::Json member = sets["items"][0];
  const std::string name = member["metadata"].value("name", "");
  const std::string id = member["metadata"]["labels"].value("agents.kruise.io/sandbox-id", "");

  CommandResult claimed = s->Cli({"apply", "-f", "-"}, kClaim);
  ASSERT_EQ(claimed.exit_code, 0) << claimed.err;
  WaitJson(*s, api + "/sandboxclaims/wants-base", "claim Completed", [](const api::Json& o) {
    return o.value("status", api::Json::object()).value("phase", "") == "Completed";
  });
  api::Json sbx = GetSandbox(*s, name);
  ASSERT_TRUE(sbx.is_object()) << "the warm member itself was claimed";
  EXPECT_EQ(sbx["metadata"]["labels"].value("agents.kruise.io/claim-name", ""), "wants-base");
  EXPECT_EQ(sbx["metadata"]["labels"].value("agents.kruise.io/sandbox-id", ""), id);
  EXPECT_EQ(sbx["spec"]["template"]["spec"]["containers"][0].value("image", ""), "base");
  EXPECT_FALSE(sbx["spec"].contains("templateRef"));
  EXPECT_EQ(ConditionReason(sbx, "InplaceUpdate"), "Succeeded") << api::DumpJson(sbx["status"]);
  EXPECT_EQ(ConditionReason(sbx, "Ready"), "SandboxReady") << api::DumpJson(sbx["status"]);

  // It runs the new image: its command ran again, on Debian's files this time.
  auto deadline = std::chrono::steady_clock::now() + 20s;
  CommandResult logs;
  do {
    logs = s->Cli({"logs", name});
  } while (logs.out.find('.') == std::string::npos && std::chrono::steady_clock::now() < deadline &&
           (std::this_thread::sleep_for(50ms), true));
  EXPECT_EQ(logs.out.rfind("no-debian\n", 0), 0u) << "first run, on busybox: " << logs.out;
  EXPECT_NE(logs.out.find('.'), std::string::npos) << "then Debian's version: " << logs.out;

  // An image the node cannot have: the claim ends saying so, instead of taking member after
  // member (each failed update deletes the member it was made on).
  WaitJson(*s, api + "/sandboxsets/pool", "the pool refilled", [](const api::Json& o) {
    return o.value("status", api::Json::object()).value("availableReplicas", 0) == 1;
  });
  std::string bad = kClaim;
  bad.replace(bad.find("wants-base"), 10, "wants-none");
  bad.replace(bad.find("image: base"), 11, "image: no-such-image");
  ASSERT_EQ(s->Cli({"apply", "-f", "-"}, bad).exit_code, 0);
  api::Json ended =
      WaitJson(*s, api + "/sandboxclaims/wants-none", "claim ended", [](const api::Json& o) {
        return o.value("status", api::Json::object()).value("phase", "") == "Completed";
      });
  EXPECT_EQ(ConditionReason(ended, "Completed"), "InplaceUpdateFailed")
      << api::DumpJson(ended["status"]);
  EXPECT_TRUE(Contains(ended["status"].value("message", ""), "no-such-image"))
      << api::DumpJson(ended["status"]);
  EXPECT_EQ(ended["status"].value("claimedReplicas", 0), 0);

  s->Cli({"delete", "sandboxclaim", "wants-none"});
  ASSERT_EQ(s->Cli({"delete", "sandboxset", "pool"}).exit_code, 0);
  ASSERT_EQ(s->Cli({"delete", "sandboxclaim", "wants-base"}).exit_code, 0);
  s->Cli({"delete", "sandbox", name});  // also collected with its claim
  WaitGone(*s, name);
}

}  // namespace
}  // namespace warren::node::testing
