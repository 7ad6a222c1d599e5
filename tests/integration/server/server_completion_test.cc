// `warren completion bash`: the script parses, and bash completes verbs, kinds, flags and — by
// asking a real `warren server` — Sandbox names, when its function runs the way bash runs it
// (COMP_WORDS and COMP_CWORD set, the answer in COMPREPLY). `warren completion zsh` is driven
// in a real interactive zsh on a pseudo-terminal, keys typed and Tab pressed.

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "process.h"

namespace warren::testing {
namespace {

class Completion : public ::testing::Test {
 protected:
  void SetUp() override {
    CommandResult script = RunCommand({WARREN_BIN, "completion", "bash"});
    ASSERT_EQ(script.exit_code, 0) << script.err;
    path_ = temp_.path() + "/warren.bash";
    std::ofstream(path_) << script.out;
  }
  // COMPREPLY, space-separated, for a command line whose last word is being typed.
  std::string Complete(const std::vector<std::string>& words,
                       const std::map<std::string, std::string>& env = {}) {
    std::string array;
    for (const auto& w : words) array += " '" + w + "'";
    std::string program = "source '" + path_ + "' && COMP_WORDS=(" + array +
                          ") && COMP_CWORD=" + std::to_string(words.size() - 1) +
                          " && _warren && echo \"${COMPREPLY[*]}\"";
    CommandResult r = RunCommand({"/bin/bash", "-c", program}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.empty() ? r.out : r.out.substr(0, r.out.size() - 1);
  }

  store::testing::TempDir temp_;
  std::string path_;
};

TEST_F(Completion, TheScriptIsValidBashAndZshGetsTheSame) {
  CommandResult check = RunCommand({"/bin/bash", "-n", path_});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  CommandResult zsh = RunCommand({WARREN_BIN, "completion", "zsh"});
  EXPECT_EQ(zsh.exit_code, 0);
  EXPECT_TRUE(zsh.out.starts_with("#compdef warren\n")) << zsh.out;
  CommandResult fish = RunCommand({WARREN_BIN, "completion", "fish"});
  EXPECT_EQ(fish.exit_code, 1);
  EXPECT_NE(fish.err.find("bash or zsh"), std::string::npos) << fish.err;
}

// zsh runs the bash function through its bashcompinit emulation, whose compgen does not filter
// by the word typed (zsh's own matching does): only a real completion shows what a user gets.
// zsh's zpty module types into an interactive `zsh -f -i` and reads what it draws; each read
// waits for the text it expects (the whole run is bounded by `timeout`).
TEST_F(Completion, ZshCompletesInARealInteractiveShell) {
  ASSERT_EQ(access("/usr/bin/zsh", X_OK), 0) << "zsh is installed by scripts/install-deps";
  CommandResult script = RunCommand({WARREN_BIN, "completion", "zsh"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  const std::string zsh_script = temp_.path() + "/_warren.zsh";
  std::ofstream(zsh_script) << script.out;
  const std::string driver = temp_.path() + "/drive.zsh";
  std::ofstream(driver) << R"(zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "autoload -U compinit && compinit -u -D && source $1 && PS1='READY> '"
zpty -r z out '*READY> '
zpty -w -n z $'warren ge\t'
zpty -r z out '*warren get*'
print -r -- "VERB-COMPLETED"
zpty -w -n z $'sb\t'
zpty -r z out '*sbx*'
print -r -- "LISTED: ${out//$'\e'/}"
zpty -w -n z $'\C-uwarren --nam\t'
zpty -r z out '*--namespace*'
print -r -- "FLAG-COMPLETED"
zpty -d z
)";
  CommandResult r =
      RunCommand({"/usr/bin/timeout", "30", "/usr/bin/zsh", "-f", driver, zsh_script});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("VERB-COMPLETED"), std::string::npos) << r.out;
  auto listed = r.out.find("LISTED: ");
  ASSERT_NE(listed, std::string::npos) << r.out;
  std::string list = r.out.substr(listed);
  EXPECT_NE(list.find("sbc  sbs  sbt  sbx"), std::string::npos) << list;
  EXPECT_EQ(list.find("sandboxes"), std::string::npos) << "only what matches what was typed";
  EXPECT_NE(r.out.find("FLAG-COMPLETED"), std::string::npos) << r.out;
}

TEST_F(Completion, CompletesVerbsKindsAndFlags) {
  EXPECT_EQ(Complete({"warren", "ge"}), "get");
  EXPECT_EQ(Complete({"warren", "to"}), "top");
  EXPECT_EQ(Complete({"warren", "get", "sb"}), "sbc sbs sbt sbx");
  EXPECT_EQ(Complete({"warren", "-n", "x", "describe", "sandboxs"}), "sandboxsets");
  EXPECT_EQ(Complete({"warren", "get", "sbx", "--out"}), "--output");
  EXPECT_EQ(Complete({"warren", "get", "sbx", "-o", "y"}), "yaml");
  EXPECT_EQ(Complete({"warren", "top", "--sort", ""}), "cpu memory");
  EXPECT_EQ(Complete({"warren", "completion", ""}), "bash zsh");
  EXPECT_EQ(Complete({"warren", "apikey", "cr"}), "create");
  EXPECT_EQ(Complete({"warren", "apikey", "create", "--te"}), "--team");
  EXPECT_EQ(Complete({"warren", "status", "s"}), "sbs sandboxset suo sandboxupdateops");
  EXPECT_EQ(Complete({"warren", "set", ""}), "image");
  EXPECT_EQ(Complete({"warren", "set", "image", "sb"}), "sbs");
  EXPECT_EQ(Complete({"warren", "set", "image", "sbs", "p", "--ti"}), "--timeout");
  EXPECT_EQ(Complete({"warren", "create", "s"}), "suo sandboxupdateops");
  EXPECT_EQ(Complete({"warren", "create", "suo", "--max"}), "--max-unavailable");
  EXPECT_EQ(Complete({"warren", "restart", "sb"}), "sbx");
  EXPECT_EQ(Complete({"warren", "restart", "sbx", "x", "--al"}), "--all");
  EXPECT_EQ(Complete({"warren", "exec", "-i", "x", "--", "l"}), "") << "the command is the shell's";
}

TEST_F(Completion, CompletesSandboxNamesFromTheServer) {
  ServerProcess s;  // no node agent: the objects are listed all the same
  ASSERT_EQ(s.Cli({"apply", "-f", "-"}, R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: alpha, namespace: default}
spec: {template: {spec: {containers: [{name: main, image: busybox}]}}}
---
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: beta, namespace: default}
spec: {template: {spec: {containers: [{name: main, image: busybox}]}}}
)")
                .exit_code,
            0);
  std::map<std::string, std::string> env = {
      {"WARREN_SERVER", s.address()}, {"HOME", s.data_dir()}, {"WARREN_API_KEY", s.admin_key()}};
  EXPECT_EQ(Complete({WARREN_BIN, "exec", ""}, env), "alpha beta");
  EXPECT_EQ(Complete({WARREN_BIN, "exec", "-it", "b"}, env), "beta");
  EXPECT_EQ(Complete({WARREN_BIN, "get", "sbx", "a"}, env), "alpha");
  EXPECT_EQ(Complete({WARREN_BIN, "top", ""}, env), "sbx alpha beta");
  EXPECT_EQ(Complete({WARREN_BIN, "-n", "elsewhere", "logs", ""}, env), "");
}

}  // namespace
}  // namespace warren::testing
