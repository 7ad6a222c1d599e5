// The `warren` CLI binary against a real `warren server` process.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "api/json.h"
#include "image/testing/oci_builder.h"
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
  // The pool goes first, so the claim finds it (the directory's file order would put it last).
  EXPECT_TRUE(apply.out.starts_with("sandboxset.agents.kruise.io/code-interpreter created\n"))
      << apply.out;

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

  // delete -f removes what the manifests name, claims before their pool.
  CommandResult del_files =
      s.Cli({"delete", "-f", WARREN_EXAMPLES_DIR, "--ignore-not-found", "--no-wait"});
  EXPECT_EQ(del_files.exit_code, 0) << del_files.err;
  EXPECT_EQ(del_files.out,
            "sandboxclaim.agents.kruise.io \"my-claim\" deleted\n"
            "sandboxset.agents.kruise.io \"code-interpreter\" deleted\n");
  CommandResult again_files = s.Cli({"delete", "-f", WARREN_EXAMPLES_DIR});
  EXPECT_EQ(again_files.exit_code, 1);
  EXPECT_TRUE(Contains(again_files.err, "Error from server (NotFound)")) << again_files.err;

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

// Where the CLI finds its server and namespace: --server over $WARREN_SERVER over
// ~/.warren/config; -n over the config's namespace; -A lists every namespace.
TEST(ServerCli, ServerAndNamespaceFromFlagsEnvironmentAndConfig) {
  ServerProcess s;
  const std::string home = s.data_dir();
  auto run = [&](const std::vector<std::string>& args, const std::string& env_server,
                 const std::string& input = "") {
    std::vector<std::string> argv = {WARREN_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"WARREN_SERVER", env_server}, {"HOME", home}}, input);
  };
  const std::string unreachable = "127.0.0.1:1";
  // No config yet: the environment decides, and the flag beats it.
  EXPECT_EQ(run({"get", "sbt"}, s.address()).exit_code, 0);
  // An unreachable server is reported once, with the reason and where the address came from.
  CommandResult env_wrong = run({"get", "sbt,sbx"}, unreachable);
  EXPECT_NE(env_wrong.exit_code, 0);
  EXPECT_TRUE(env_wrong.err.starts_with(
      "error: cannot reach the warren server at 127.0.0.1:1: Connection refused (is `warren "
      "server` running there?"))
      << env_wrong.err;
  EXPECT_EQ(std::count(env_wrong.err.begin(), env_wrong.err.end(), '\n'), 1) << env_wrong.err;
  EXPECT_EQ(run({"--server", s.address(), "get", "sbt"}, unreachable).exit_code, 0);

  // ~/.warren/config names the server and the namespace when nothing else does (and holds the
  // key, as `warren apikey bootstrap` left it there).
  {
    std::ofstream config(home + "/.warren/config");
    config << "server: " << s.address() << "\nnamespace: team\napiKey: " << s.admin_key() << "\n";
  }
  const std::string manifest =
      "apiVersion: agents.kruise.io/v1alpha1\nkind: SandboxTemplate\n"
      "metadata: {name: tpl, labels: {app: cfg}}\n"
      "spec:\n  template:\n    spec:\n      containers: [{name: main, image: base}]\n";
  CommandResult applied = run({"apply", "-f", "-"}, "", manifest);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_EQ(applied.out, "sandboxtemplate.agents.kruise.io/tpl created\n");
  ASSERT_EQ(run({"-n", "default", "apply", "-f", "-"}, "", manifest).exit_code, 0);
  CommandResult in_team = run({"get", "sbt", "-o", "name", "-l", "app=cfg"}, "");
  EXPECT_EQ(in_team.out, "sandboxtemplate.agents.kruise.io/tpl\n") << in_team.err;
  CommandResult json = run({"get", "sbt", "tpl", "-o", "json"}, "");
  auto obj = api::ParseJson(json.out);
  ASSERT_TRUE(obj.ok()) << json.out << json.err;
  EXPECT_EQ((*obj)["metadata"]["namespace"], "team");
  // The environment beats the config.
  EXPECT_NE(run({"get", "sbt"}, unreachable).exit_code, 0);

  CommandResult all = run({"get", "sbt", "-A", "-l", "app=cfg"}, "");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  std::istringstream lines(all.out);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_TRUE(header.starts_with("NAMESPACE   NAME")) << all.out;
  EXPECT_TRUE(first.starts_with("default     tpl")) << all.out;
  EXPECT_TRUE(second.starts_with("team        tpl")) << all.out;
}

// Every kind answers to its kubectl-style short name, singular and plural.
TEST(ServerCli, ShortNamesOfEveryKind) {
  ServerProcess s;
  struct Kind {
    std::string short_name, singular, plural;
  } kinds[] = {{"sbx", "sandbox", "sandboxes"},
               {"sbs", "sandboxset", "sandboxsets"},
               {"sbc", "sandboxclaim", "sandboxclaims"},
               {"sbt", "sandboxtemplate", "sandboxtemplates"},
               {"suo", "sandboxupdateops", "sandboxupdateops"},
               {"cp", "checkpoint", "checkpoints"}};
  for (const auto& k : kinds) {
    for (const auto& name : {k.short_name, k.singular, k.plural}) {
      // The E2B layer keeps a "base" SandboxTemplate; the other kinds are empty.
      CommandResult r = s.Cli({"get", name});
      EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
      EXPECT_TRUE(r.err == "No resources found in default namespace.\n" ||
                  r.out.starts_with("NAME "))
          << name << ": " << r.out << r.err;
    }
    CommandResult missing = s.Cli({"get", k.short_name, "nothing-here"});
    EXPECT_TRUE(Contains(missing.err, k.plural + ".agents.kruise.io \"nothing-here\" not found"))
        << missing.err;
  }
}

// The rollout verbs against a server without a node agent: what they refuse, what they write,
// and how `status` reports a SandboxUpdateOps (whose sandboxes are never Running here, so
// the controller completes it with none selected).
TEST(ServerCli, RolloutVerbsWriteWhatOkactlsDoAndRefuseWhatTheyCannot) {
  ServerProcess s;
  const std::string manifests = R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxTemplate
metadata: {name: py}
spec: {template: {spec: {containers: [{name: main, image: base}]}}}
---
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata: {name: by-ref}
spec: {replicas: 0, templateRef: {name: py}}
---
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata: {name: inline}
spec:
  replicas: 0
  template: {spec: {containers: [{name: main, image: base}, {name: side, image: base}]}}
---
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: one, labels: {app: a}}
spec: {template: {spec: {containers: [{name: main, image: base}]}}}
)";
  CommandResult apply = s.Cli({"apply", "-f", "-"}, manifests);
  ASSERT_EQ(apply.exit_code, 0) << apply.err;

  CommandResult by_ref = s.Cli({"set", "image", "sbs", "by-ref", "main=base:2"});
  EXPECT_EQ(by_ref.exit_code, 1);
  EXPECT_TRUE(Contains(by_ref.err, "uses templateRef \"py\"")) << by_ref.err;
  CommandResult set = s.Cli({"set", "image", "sbs", "inline", "side=other:1"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(set.out, "sandboxset.agents.kruise.io/inline image updated\n");
  CommandResult got = s.Cli({"get", "sbs", "inline", "-o", "json"});
  api::Json sbs = api::ParseJson(got.out).value();
  EXPECT_EQ(sbs["spec"]["template"]["spec"]["containers"][0]["image"], "base");
  EXPECT_EQ(sbs["spec"]["template"]["spec"]["containers"][1]["image"], "other:1");
  // Zero replicas: the rollout is done at once.
  CommandResult waited = s.Cli({"set", "image", "sbs", "inline", "side=other:2", "-w"});
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_TRUE(Contains(waited.out, "inline  Ready  [##########]  0/0 updated  0/0 available"))
      << waited.out;

  CommandResult none = s.Cli({"create", "suo", "-l", "app=nothing", "main=base:2"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_TRUE(Contains(none.err,
                       "no sandbox in namespace \"default\" matches selector "
                       "\"app=nothing\""))
      << none.err;
  CommandResult created = s.Cli({"create", "suo", "-l", "app=a", "main=base:2", "--max-unavailable",
                                 "2", "--partition", "0"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  ASSERT_TRUE(created.out.starts_with("sandboxupdateops.agents.kruise.io/suo-")) << created.out;
  const size_t slash = created.out.find('/');
  const std::string name = created.out.substr(slash + 1, created.out.find(' ') - slash - 1);
  CommandResult ops = s.Cli({"get", "suo", name, "-o", "json"});
  api::Json suo = api::ParseJson(ops.out).value();
  EXPECT_EQ(suo["spec"]["selector"]["matchLabels"]["app"], "a");
  EXPECT_EQ(suo["spec"]["patch"]["spec"]["containers"][0]["image"], "base:2");
  EXPECT_EQ(suo["spec"]["updateStrategy"]["maxUnavailable"], 2);
  CommandResult status;
  for (int i = 0; i < 100; ++i) {
    status = s.Cli({"status", "suo", name});
    if (Contains(status.out, "Completed")) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(status.out, name + "  Completed  0/0 updated  0 updating  0 failed\n");
  CommandResult table = s.Cli({"get", "suo"});
  EXPECT_TRUE(Contains(table.out, "PHASE       REPLICAS   UPDATED   UPDATING   FAILED   AGE"))
      << table.out;

  // A Failed ops: `status` says why and exits non-zero.
  net::ClientRequest req;
  req.method = "PATCH";
  req.target =
      "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxupdateops/" + name + "/status";
  req.body = R"({"status": {"phase": "Failed", "conditions": [
    {"type": "Progressing", "status": "False", "reason": "SandboxUpdateFailed",
     "message": "sandbox \"one\" failed to update: preUpgrade hook exited with code 3"}]}})";
  req.headers.Set("Content-Type", "application/merge-patch+json");
  auto patched = s.http().Do(req);
  ASSERT_TRUE(patched.ok() && patched->status == 200) << (patched.ok() ? patched->body : "");
  CommandResult failed = s.Cli({"status", "suo", name});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_TRUE(Contains(failed.out, name + "  Failed     0/0 updated  0 updating  0 failed"))
      << failed.out;
  EXPECT_TRUE(Contains(failed.err, "SandboxUpdateFailed"));
  EXPECT_TRUE(Contains(failed.err, "preUpgrade hook exited with code 3")) << failed.err;

  CommandResult restart = s.Cli({"restart", "sbx", "one", "--all"});
  EXPECT_EQ(restart.exit_code, 1);
  EXPECT_TRUE(Contains(restart.err, "sandbox \"one\" is not started, not Running")) << restart.err;
  CommandResult neither = s.Cli({"restart", "sbx", "one"});
  EXPECT_EQ(neither.exit_code, 1);
  EXPECT_TRUE(Contains(neither.err, "--all or -c")) << neither.err;
}

// `warren image import|ls|rm` over a local image store (no server needed).
TEST(ServerCli, ImageVerbsImportListRemove) {
  store::testing::TempDir dir;
  const std::string layout = dir.path() + "/layout";
  const std::string root = dir.path() + "/images";
  image::testing::OciLayoutBuilder b(layout);
  b.AddImage({b.AddLayer({image::testing::TarEntry::File("hello", "world")})}, {}, "demo:1");
  b.WriteIndex();
  auto image = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {WARREN_BIN, "image", "--root", root};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  };
  CommandResult imported = image({"import", layout, "--name", "demo:2"});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_TRUE(imported.out.starts_with("NAME     DIGEST")) << imported.out;
  EXPECT_TRUE(Contains(imported.out, "\ndemo:2   ")) << imported.out;
  CommandResult listed = image({"ls"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(Contains(listed.out, "UNPACKED")) << listed.out;
  EXPECT_TRUE(Contains(listed.out, "demo:2")) << listed.out;
  CommandResult removed = image({"rm", "demo:2"});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_TRUE(Contains(removed.out, "demo:2   removed")) << removed.out;
  EXPECT_TRUE(Contains(removed.out, "(gc)     1 layers")) << removed.out;
  EXPECT_EQ(image({"ls"}).out.find("demo:2"), std::string::npos);

  CommandResult missing = image({"rm", "nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(Contains(missing.err, "error: not every image was removed")) << missing.err;
  CommandResult bad_path = image({"import", dir.path() + "/absent"});
  EXPECT_EQ(bad_path.exit_code, 1);
  EXPECT_TRUE(Contains(bad_path.err, "absent")) << bad_path.err;
  CommandResult bad_pull = image({"pull", "not a reference"});
  EXPECT_EQ(bad_pull.exit_code, 1);
  EXPECT_TRUE(bad_pull.err.starts_with("error: ")) << bad_pull.err;
}

}  // namespace
}  // namespace warren::testing
