// The CLI verbs that need running sandboxes, against `warren server` with its node agent:
// `warren top` (usage samples from the node).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "api/json.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "process.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;
using warren::testing::CommandResult;
using warren::testing::RunCommand;
using warren::testing::ServerProcess;

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

api::Json GetSandbox(ServerProcess& s, const std::string& name) {
  net::ClientRequest req;
  req.target = "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes/" + name;
  auto resp = s.http().Do(req);
  if (!resp.ok() || resp->status != 200) return api::Json();
  auto j = api::ParseJson(resp->body);
  return j.ok() ? *j : api::Json();
}

api::Json WaitRunning(ServerProcess& s, const std::string& name) {
  auto deadline = std::chrono::steady_clock::now() + 60s;
  api::Json obj;
  while (std::chrono::steady_clock::now() < deadline) {
    obj = GetSandbox(s, name);
    if (obj.is_object() && obj.contains("status") && obj["status"].is_object() &&
        obj["status"].value("phase", "") == "Running") {
      return obj;
    }
    std::this_thread::sleep_for(30ms);
  }
  ADD_FAILURE() << name << " never ran: " << api::DumpJson(obj);
  return obj;
}

constexpr char kManifest[] = R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: box, namespace: default}
spec:
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["/bin/sh", "-c", "exec sleep 3600"]
        resources: {limits: {memory: 64Mi}}
)";

// A server with a node agent and one running busybox Sandbox, "box".
class CliVerbs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    setenv("WARREN_ENVD_PATH", WARREN_ENVD_BIN, 1);
    setenv("WARREN_NODE_AGENT", "on", 1);
    server_ = std::make_unique<ServerProcess>();  // loopback-only sandboxes
    ASSERT_EQ(server_->Cli({"apply", "-f", "-"}, kManifest).exit_code, 0);
    api::Json box = WaitRunning(*server_, "box");
    id_ = box["metadata"]["labels"].value("agents.kruise.io/sandbox-id", "");
    gateway_ =
        "127.0.0.1:" + std::string(base::TrimSpace(
                           base::ReadSmallFile(server_->data_dir() + "/gateway.port").value()));
  }
  std::map<std::string, std::string> CliEnv() const {
    return {{"WARREN_SERVER", server_->address()},
            {"HOME", server_->data_dir()},
            {"WARREN_API_KEY", server_->admin_key()}};
  }

  std::unique_ptr<ServerProcess> server_;
  std::string id_;
  std::string gateway_;
};

TEST_F(CliVerbs, TopShowsEachSandboxsCpuAndMemoryOnceSampled) {
  ASSERT_FALSE(id_.empty());
  // The node samples every 5 s: until the first, the row has dashes.
  CommandResult top;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  do {
    top = server_->Cli({"top"});
    ASSERT_EQ(top.exit_code, 0) << top.err;
    if (!Contains(top.out, "   -   ")) break;
    std::this_thread::sleep_for(500ms);
  } while (std::chrono::steady_clock::now() < deadline);
  auto lines = base::Split(top.out, '\n');
  ASSERT_GE(lines.size(), 2u) << top.out;
  EXPECT_EQ(base::SplitNonEmpty(lines[0], ' '),
            (std::vector<std::string_view>{"NAME", "SANDBOX-ID", "CPU(cores)", "CPU%",
                                           "MEMORY(bytes)", "MEM-LIMIT", "DISK"}))
      << top.out;
  EXPECT_TRUE(std::string(lines[1]).starts_with("box    " + id_)) << top.out;
  EXPECT_TRUE(Contains(top.out, "64Mi")) << "the memory limit: " << top.out;
  EXPECT_FALSE(Contains(top.out, "   -   ")) << "sampled by now: " << top.out;

  CommandResult all = server_->Cli({"top", "-A", "--sort", "memory"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_TRUE(all.out.starts_with("NAMESPACE   NAME   SANDBOX-ID")) << all.out;
  EXPECT_TRUE(Contains(all.out, "\ndefault     box    " + id_)) << all.out;
  CommandResult one = server_->Cli({"top", "sbx", "box"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_TRUE(Contains(one.out, "\nbox    " + id_)) << one.out;

  CommandResult missing = server_->Cli({"top", "nosuch"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(Contains(missing.err, "NotFound")) << missing.err;
  CommandResult other_kind = server_->Cli({"top", "sbs"});
  EXPECT_EQ(other_kind.exit_code, 1);
  EXPECT_TRUE(Contains(other_kind.err, "sandboxes only")) << other_kind.err;

  // A team key sees its own namespace only: the admin's sandbox is not listed.
  CommandResult key = server_->Cli({"apikey", "create", "--team", "acme"});
  ASSERT_EQ(key.exit_code, 0) << key.err;
  std::string team_key(base::TrimSpace(key.out.substr(key.out.rfind("\n\n") + 2)));
  auto env = CliEnv();
  env["WARREN_API_KEY"] = team_key;
  CommandResult team = RunCommand({WARREN_BIN, "top"}, env);
  EXPECT_EQ(team.exit_code, 0) << team.err;
  EXPECT_FALSE(Contains(team.out, id_)) << team.out;
  EXPECT_TRUE(Contains(team.err, "No resources found in acme namespace")) << team.err;

  // -w prints again every interval, until interrupted.
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    for (const auto& [k, v] : CliEnv()) setenv(k.c_str(), v.c_str(), 1);
    execl(WARREN_BIN, WARREN_BIN, "top", "-w", "--interval", "1", nullptr);
    _exit(127);
  }
  close(out[1]);
  std::string watched;
  char buf[4096];
  auto headers = [&] {
    size_t n = 0;
    for (size_t at = 0; (at = watched.find("NAME ", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  while (headers() < 2) {
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    watched.append(buf, n);
  }
  EXPECT_EQ(headers(), 2u) << watched;
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), 0) << "still watching";
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(out[0]);
}

}  // namespace
}  // namespace warren::node::testing
