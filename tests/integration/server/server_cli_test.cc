// The `warren` CLI binary against a real `warren server` process.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "api/json.h"
#include "process.h"

namespace warren::testing {
namespace {

using namespace std::chrono_literals;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ServerCli, ApplyGetDescribeTheExamples) {
  ServerProcess s;
  CommandResult apply = s.Cli({"apply", "-f", WARREN_EXAMPLES_DIR});
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  EXPECT_TRUE(Contains(apply.out, "sandboxset.agents.kruise.io/code-interpreter created"))
      << apply.out;
  EXPECT_TRUE(Contains(apply.out, "sandbox.agents.kruise.io/my-sandbox created")) << apply.out;
  EXPECT_TRUE(Contains(apply.out, "sandboxclaim.agents.kruise.io/my-claim created")) << apply.out;

  CommandResult get = s.Cli({"get", "sbs,sbx", "-o", "wide"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_TRUE(Contains(get.out, "NAME")) << get.out;
  EXPECT_TRUE(Contains(get.out, "DESIRED")) << get.out;
  EXPECT_TRUE(Contains(get.out, "sandboxset.agents.kruise.io/code-interpreter   3")) << get.out;
  EXPECT_TRUE(Contains(get.out, "sandbox.agents.kruise.io/my-sandbox")) << get.out;
  EXPECT_TRUE(Contains(get.out, "2030-01-01T00:00:00Z")) << get.out;
  EXPECT_TRUE(Contains(get.out, "AGE")) << get.out;

  CommandResult describe = s.Cli({"describe", "sbs", "code-interpreter"});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_TRUE(Contains(describe.out, "Name:         code-interpreter")) << describe.out;
  EXPECT_TRUE(Contains(describe.out, "Kind:         SandboxSet")) << describe.out;
  EXPECT_TRUE(Contains(describe.out, "Replicas:  3")) << describe.out;
  EXPECT_TRUE(Contains(describe.out, "Max Unavailable:  20%")) << describe.out;
  EXPECT_TRUE(Contains(describe.out, "Events:")) << describe.out;

  // Applying again changes nothing; a changed manifest from stdin is configured.
  CommandResult again = s.Cli({"apply", "-f", WARREN_EXAMPLES_DIR});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_TRUE(Contains(again.out, "sandboxset.agents.kruise.io/code-interpreter unchanged"))
      << again.out;
  std::ifstream f(std::string(WARREN_EXAMPLES_DIR) + "/sandboxset.yaml");
  std::string manifest((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  manifest.replace(manifest.find("replicas: 3"), 11, "replicas: 4");
  const std::string label = "  labels:\n    app: code-interpreter\nspec:";
  manifest.replace(manifest.find(label), label.size(), "spec:");  // drop the label
  CommandResult changed = s.Cli({"apply", "-f", "-"}, manifest);
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  EXPECT_TRUE(Contains(changed.out, "code-interpreter configured")) << changed.out;
  CommandResult json = s.Cli({"get", "sbs", "code-interpreter", "-o", "json"});
  auto obj = api::ParseJson(json.out);
  ASSERT_TRUE(obj.ok()) << json.out;
  EXPECT_EQ((*obj)["spec"]["replicas"], 4);
  EXPECT_FALSE((*obj)["metadata"].contains("labels")) << "a label removed from the manifest goes";

  CommandResult scale = s.Cli({"scale", "sbs", "code-interpreter", "--replicas", "6"});
  EXPECT_EQ(scale.exit_code, 0) << scale.err;
  EXPECT_TRUE(Contains(scale.out, "sandboxset.agents.kruise.io/code-interpreter scaled"));
  CommandResult yaml = s.Cli({"get", "sbs/code-interpreter", "-o", "yaml"});
  EXPECT_TRUE(Contains(yaml.out, "replicas: 6")) << yaml.out;
  // The SandboxSet's own members (made by the pool controller) are left out.
  CommandResult names =
      s.Cli({"get", "sbx,sbc", "-o", "name", "-l", "!agents.kruise.io/sandbox-pool"});
  EXPECT_EQ(names.out,
            "sandbox.agents.kruise.io/my-sandbox\nsandboxclaim.agents.kruise.io/my-claim\n");

  CommandResult del = s.Cli({"delete", "sbx", "my-sandbox"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_EQ(del.out, "sandbox.agents.kruise.io \"my-sandbox\" deleted\n");
  CommandResult gone = s.Cli({"get", "sbx", "my-sandbox"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_EQ(gone.err,
            "Error from server (NotFound): sandboxes.agents.kruise.io \"my-sandbox\" not found\n");
  CommandResult none = s.Cli({"get", "sbx", "-l", "!agents.kruise.io/sandbox-pool"});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_EQ(none.err, "No resources found in default namespace.\n");

  CommandResult version = s.Cli({"version"});
  EXPECT_TRUE(Contains(version.out, "Client Version: v")) << version.out;
  EXPECT_TRUE(Contains(version.out, "Server Version: v")) << version.out;
}

TEST(ServerCli, BadInputIsReportedLikeKubectl) {
  ServerProcess s;
  struct Case {
    std::vector<std::string> args;
    std::string input;
    std::string err_part;
  };
  std::vector<Case> cases = {
      {{"get", "widgets"}, "", "error: the server doesn't have a resource type \"widgets\""},
      {{"apply", "-f", "/nonexistent.yaml"},
       "",
       "error: the path \"/nonexistent.yaml\" does not exist"},
      {{"apply", "-f", "-"}, "kind: [broken\n", "error: error parsing STDIN: invalid YAML at line"},
      {{"apply", "-f", "-"},
       "apiVersion: agents.kruise.io/v1alpha1\nkind: SandboxSet\nmetadata: {name: p}\n"
       "spec: {replicas: -3, templateRef: {name: t}}\n",
       "Error from server (Invalid): error when creating \"STDIN\": SandboxSet.agents.kruise.io "
       "\"p\" is invalid: spec.replicas: Invalid value: -3: must be >= 0"},
      {{"apply", "-f", "-"},
       "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
       "no matches for kind \"Widget\" in version \"example.com/v1\""},
      {{"-n", "team", "apply", "-f", "-"},
       "apiVersion: agents.kruise.io/v1alpha1\nkind: SandboxSet\nmetadata: {name: p, namespace: "
       "other}\nspec: {templateRef: {name: t}}\n",
       "does not match the namespace \"team\""},
      {{"get", "sbs", "-o", "table"}, "", "unable to match a printer"},
      {{"get", "sbs", "-l", "a in (x"}, "", "unable to parse label selector"},
      {{"scale", "sbx", "x", "--replicas", "2"}, "", "cannot be scaled"},
      {{"delete", "sbs", "missing"}, "", "Error from server (NotFound)"},
      {{"--server", "127.0.0.1:1", "get", "sbs"},
       "",
       "error: cannot reach the warren server at "
       "127.0.0.1:1"},
  };
  for (const auto& c : cases) {
    CommandResult r = s.Cli(c.args, c.input);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_NE(r.exit_code, 0) << joined;
    EXPECT_TRUE(Contains(r.err, c.err_part)) << joined << "\nstderr: " << r.err;
  }
}

// `warren get -w` prints a row for each change as it happens.
TEST(ServerCli, GetWatchFollowsChanges) {
  ServerProcess s;
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  std::string bin = WARREN_BIN;
  std::string server = "--server=" + s.address();
  std::string home = "HOME=" + s.data_dir();
  std::vector<char*> argv = {bin.data(),
                             server.data(),
                             const_cast<char*>("get"),
                             const_cast<char*>("sbs"),
                             const_cast<char*>("-w"),
                             nullptr};
  char* envp[] = {home.data(), nullptr};
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out[1], 1);
    execve(argv[0], argv.data(), envp);
    _exit(127);
  }
  close(out[1]);
  std::this_thread::sleep_for(300ms);  // let it list and start watching
  CommandResult created =
      s.Cli({"apply", "-f", "-"},
            "apiVersion: agents.kruise.io/v1alpha1\nkind: SandboxSet\nmetadata: {name: watched}\n"
            "spec: {replicas: 2, templateRef: {name: t}}\n");
  ASSERT_EQ(created.exit_code, 0) << created.err;
  std::string seen;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (seen.find("watched") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[1024];
    ssize_t n = read(out[0], buf, sizeof(buf));
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
  }
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  close(out[0]);
  EXPECT_TRUE(Contains(seen, "NAME")) << seen;
  EXPECT_TRUE(Contains(seen, "watched   2")) << seen;
}

}  // namespace
}  // namespace warren::testing
