// `warren server` (the real binary, its in-process node agent) driven by the `warren` CLI:
// logs, get, and a restart of the server process that adopts a running sandbox and removes an
// orphan.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "api/json.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "image/image_store.h"
#include "node/options.h"
#include "node_fixture.h"
#include "os/cgroup.h"
#include "process.h"
#include "runtime/native/native_runtime.h"
#include "server_sandboxes.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;
using warren::testing::CommandResult;
using warren::testing::ServerProcess;

// A running sandbox, and one whose command ends (it is not restarted).
constexpr char kManifest[] = R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: web, namespace: default}
spec:
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["/bin/sh", "-c", "echo line one; echo line two; exec sleep 3600"]
        resources: {limits: {memory: 64Mi}}
---
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: short, namespace: default}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["/bin/sh", "-c", "echo early; sleep 2; echo late"]
        resources: {limits: {memory: 64Mi}}
)";

TEST(NodeServer, LogsGetAndAServerRestart) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  setenv("WARREN_ENVD_PATH", WARREN_ENVD_BIN, 1);
  setenv("WARREN_NODE_AGENT", "on", 1);  // ServerProcess runs none by default
  auto s = std::make_unique<ServerProcess>();
  const NodeAgentOptions options = NodeAgentOptions::ForDataDir(s->data_dir());

  CommandResult apply = s->Cli({"apply", "-f", "-"}, kManifest);
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  // Follow the short one from the start: the stream ends when its command does.
  CommandResult follow = s->Cli({"logs", "short", "-f"});
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
  EXPECT_EQ(follow.out, "early\nlate\n");
  WaitPhase(*s, "short", "Succeeded");

  api::Json web = WaitPhase(*s, "web", "Running");
  const std::string id = web["metadata"]["labels"].value("agents.kruise.io/sandbox-id", "");
  ASSERT_FALSE(id.empty());
  auto deadline = std::chrono::steady_clock::now() + 20s;
  CommandResult logs;
  do {
    logs = s->Cli({"logs", "web"});
  } while (logs.out != "line one\nline two\n" && std::chrono::steady_clock::now() < deadline &&
           (std::this_thread::sleep_for(50ms), true));
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "line one\nline two\n");
  CommandResult tail = s->Cli({"logs", "sbx/web", "--tail", "1"});
  EXPECT_EQ(tail.out, "line two\n") << tail.err;
  CommandResult missing = s->Cli({"logs", "nosuch"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err,
            "Error from server (NotFound): sandboxes.agents.kruise.io \"nosuch\" not found\n");

  CommandResult get = s->Cli({"get", "sbx"});
  EXPECT_TRUE(Contains(get.out, "NODE")) << get.out;
  EXPECT_TRUE(Contains(get.out, "Running")) << get.out;
  EXPECT_TRUE(Contains(get.out, "Succeeded")) << get.out;
  CommandResult wide = s->Cli({"get", "sbx", "web", "-o", "wide"});
  EXPECT_TRUE(Contains(wide.out, "SANDBOX_ID")) << wide.out;
  EXPECT_TRUE(Contains(wide.out, id)) << wide.out;

  // Restart the server process; meanwhile a sandbox appears that no object asked for.
  const std::vector<int> pids = SandboxPids(options, id);
  ASSERT_FALSE(pids.empty());
  s->Stop();
  ASSERT_EQ(kill(pids.front(), 0), 0) << "sandboxes outlive the server";
  const std::string orphan_id = "iservorphan000000000";
  {
    runtime::native::NativeRuntimeOptions ro;
    ro.state_dir = options.runtime_state_dir;
    ro.cgroup_parent = options.cgroup_parent;
    auto rt = runtime::native::NativeRuntime::Create(ro);
    ASSERT_TRUE(rt.ok()) << rt.status();
    ASSERT_TRUE((*rt)->Adopt().ok());
    auto images = image::ImageStore::Open({.root = options.image_root});
    ASSERT_TRUE(images.ok());
    auto busybox = (*images)->Resolve("busybox");
    ASSERT_TRUE(busybox.ok());
    runtime::SandboxSpec spec;
    spec.id = orphan_id;
    spec.layers = busybox->lower_dirs;
    spec.writable_dir = s->data_dir() + "/orphan-rw";
    spec.command = {"/bin/sleep", "3600"};
    ASSERT_OK((*rt)->Create(spec));
    ASSERT_OK((*rt)->Start(orphan_id));
  }
  ServerProcess again(s->data_dir());
  // Same processes, still serving logs; the orphan destroyed during startup.
  WaitPhase(again, "web", "Running");
  EXPECT_EQ(SandboxPids(options, id), pids);
  EXPECT_EQ(again.Cli({"logs", "web"}).out, "line one\nline two\n");
  Leftovers orphan = LeftoversOf(options, orphan_id, 0);
  EXPECT_TRUE(orphan.items.empty()) << ::testing::PrintToString(orphan.items);

  CommandResult del = again.Cli({"delete", "sbx", "web", "short"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  WaitGone(again, "web");
  WaitGone(again, "short");
  Leftovers left = LeftoversOf(options, id, pids.front(), web["metadata"].value("uid", ""));
  EXPECT_TRUE(left.items.empty()) << ::testing::PrintToString(left.items);
  again.Stop();
  for (const auto& d : os::CgroupHierarchies::Detect()->DirsFor(options.cgroup_parent)) {
    rmdir(d.c_str());
  }
}

TEST(NodeServer, ExecStreamsACommandsOutputAndReturnsItsExitCode) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  setenv("WARREN_ENVD_PATH", WARREN_ENVD_BIN, 1);
  setenv("WARREN_NODE_AGENT", "on", 1);
  auto s = std::make_unique<ServerProcess>();  // loopback-only sandboxes
  ASSERT_EQ(s->Cli({"apply", "-f", "-"}, BusyboxSandbox("shell")).exit_code, 0);
  WaitPhase(*s, "shell", "Running");
  std::string gateway =
      "127.0.0.1:" +
      std::string(base::TrimSpace(base::ReadSmallFile(s->data_dir() + "/gateway.port").value()));
  auto exec = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"exec", "shell", "--sandbox-url", gateway};
    argv.insert(argv.end(), args.begin(), args.end());
    return s->Cli(argv);
  };
  CommandResult r =
      exec({"-e", "WHO=exec", "--", "/bin/sh", "-c", "echo out $WHO; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out, "out exec\n");
  EXPECT_EQ(r.err, "err\n");
  CommandResult ok = exec({"-w", "/tmp", "--", "pwd"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "/tmp\n");
  CommandResult missing = s->Cli({"exec", "nosuch", "--sandbox-url", gateway, "--", "true"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(Contains(missing.err, "nosuch")) << missing.err;
  CommandResult none = exec({});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_TRUE(Contains(none.err, "no command")) << none.err;

  // Output comes while the command still runs: the first line is read before it ends.
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    setenv("WARREN_SERVER", s->address().c_str(), 1);
    setenv("WARREN_API_KEY", s->admin_key().c_str(), 1);
    setenv("HOME", s->data_dir().c_str(), 1);
    execl(WARREN_BIN, WARREN_BIN, "exec", "shell", "--sandbox-url", gateway.c_str(), "--",
          "/bin/sh", "-c", "echo first; sleep 30; echo second", nullptr);
    _exit(127);
  }
  close(out[1]);
  std::string first;
  char c;
  while (first.find('\n') == std::string::npos && read(out[0], &c, 1) == 1) first += c;
  EXPECT_EQ(first, "first\n");
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), 0) << "the command still runs";
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(out[0]);
  ASSERT_EQ(s->Cli({"delete", "sandbox", "shell"}).exit_code, 0);
  WaitGone(*s, "shell");
}

}  // namespace
}  // namespace warren::node::testing
