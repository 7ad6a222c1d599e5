// The CLI verbs that need running sandboxes, against `warren server` with its node agent:
// `warren top` (usage samples from the node), `warren exec -i/-t` (a PTY in the sandbox,
// driven here through a real pseudo-terminal, as a user's terminal would) and `warren status`
// (a SandboxSet's rollout).

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>

#include "api/json.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "base/unique_fd.h"
#include "process.h"
#include "server_sandboxes.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;
using warren::testing::CommandResult;
using warren::testing::RunCommand;
using warren::testing::ServerProcess;

// A server with a node agent and one running busybox Sandbox, "box".
class CliVerbs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    setenv("WARREN_ENVD_PATH", WARREN_ENVD_BIN, 1);
    setenv("WARREN_NODE_AGENT", "on", 1);
    server_ = std::make_unique<ServerProcess>();  // loopback-only sandboxes
    ASSERT_EQ(server_->Cli({"apply", "-f", "-"}, BusyboxSandbox("box")).exit_code, 0);
    api::Json box = WaitPhase(*server_, "box", "Running");
    id_ = box["metadata"]["labels"].value("agents.kruise.io/sandbox-id", "");
    gateway_ =
        "127.0.0.1:" + std::string(base::TrimSpace(
                           base::ReadSmallFile(server_->data_dir() + "/gateway.port").value()));
  }
  // A server stopped with SIGTERM leaves its sandboxes running (adopted at its next start):
  // delete them, and the pools that would make more, and wait until they are gone.
  void TearDown() override {
    if (server_ == nullptr) return;
    CommandResult pools = server_->Cli({"delete", "sbs", "--all"});
    EXPECT_EQ(pools.exit_code, 0) << pools.err;
    CommandResult boxes = server_->Cli({"delete", "sbx", "--all"});
    EXPECT_EQ(boxes.exit_code, 0) << boxes.err;
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

// `sh -c SCRIPT` on a fresh pseudo-terminal of the given size, as a terminal emulator runs a
// shell. The test reads and writes the master side; destroying it kills what still runs.
class PtySession {
 public:
  PtySession(uint16_t cols, uint16_t rows, const std::string& script,
             const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
    std::vector<std::string> argv = {"/bin/sh", "-c", script};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    winsize ws{};
    ws.ws_col = cols;
    ws.ws_row = rows;
    int master = -1;
    pid_ = forkpty(&master, nullptr, nullptr, &ws);
    if (pid_ == 0) {
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    master_.reset(master);
  }
  ~PtySession() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }

  // Everything read so far, once `part` is in it (or the time is up, or the terminal closed).
  const std::string& ReadUntil(const std::string& part, std::chrono::seconds limit = 30s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!Contains(seen_, part) && std::chrono::steady_clock::now() < deadline) {
      pollfd p{master_.get(), POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      ssize_t n = read(master_.get(), buf, sizeof buf);
      if (n <= 0) break;  // EIO: every slave fd closed
      seen_.append(buf, n);
    }
    return seen_;
  }
  void Write(const std::string& bytes) {
    ASSERT_EQ(write(master_.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  // As a terminal emulator does when its window changes: the foreground job gets SIGWINCH.
  void Resize(uint16_t cols, uint16_t rows) {
    winsize ws{};
    ws.ws_col = cols;
    ws.ws_row = rows;
    ASSERT_EQ(ioctl(master_.get(), TIOCSWINSZ, &ws), 0);
  }
  // The shell's exit status.
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  base::UniqueFd master_;
  std::string seen_;
};

// After the session: `stty -a` shows the terminal cooked again (line editing and echo on).
void ExpectCooked(const std::string& after) {
  EXPECT_TRUE(Contains(after, " icanon ") && !Contains(after, "-icanon")) << after;
  EXPECT_TRUE(Contains(after, " echo ") && !Contains(after, "-echo ")) << after;
}

// The shell around `warren exec`: runs it, then reports its exit code and the terminal's state.
constexpr char kAroundExec[] =
    R"("$0" exec -it box --sandbox-url "$1" -- /bin/sh -c "$2"; echo "rc=$?"; stty -a)";

TEST_F(CliVerbs, ExecItRunsOnAPtySizedLikeTheTerminalAndPutsTheTerminalBack) {
  PtySession pty(
      101, 33, kAroundExec,
      {WARREN_BIN, gateway_, "tty; stty size; read x; echo got-$x; read y; stty size; exit 4"},
      CliEnv());
  EXPECT_TRUE(Contains(pty.ReadUntil("33 101\r\n"), "33 101\r\n")) << "the local size";
  EXPECT_TRUE(Contains(pty.ReadUntil("/dev/pts/"), "/dev/pts/")) << "a tty in the sandbox";
  pty.Write("hello\r");
  EXPECT_TRUE(Contains(pty.ReadUntil("got-hello"), "got-hello"));
  // A resize reaches the sandbox's PTY (SIGWINCH → Update) before the next line is read.
  pty.Resize(120, 40);
  std::this_thread::sleep_for(1s);
  pty.Write("\r");
  const std::string& all = pty.ReadUntil("rc=");
  EXPECT_TRUE(Contains(all, "40 120\r\n")) << all;
  std::string after = pty.ReadUntil("echoke");  // the end of stty -a's flags
  ASSERT_TRUE(Contains(after, "rc=4\r\n")) << after;
  ExpectCooked(after.substr(after.find("rc=4")));
  // Raw while it ran: the sandbox's PTY echoed the input, the local terminal did not as well.
  EXPECT_EQ(after.find("\nhello\r\n"), after.rfind("\nhello\r\n")) << after;
  EXPECT_EQ(pty.Wait(), 0);
}

TEST_F(CliVerbs, ExecItPutsTheTerminalBackWhenTerminated) {
  PtySession pty(80, 24, kAroundExec, {WARREN_BIN, gateway_, "echo ready; sleep 60"}, CliEnv());
  ASSERT_TRUE(Contains(pty.ReadUntil("ready"), "ready"));
  // `warren` is the shell's child.
  std::ifstream children(fmt::format("/proc/{}/task/{}/children", pty.pid(), pty.pid()));
  pid_t warren = 0;
  children >> warren;
  ASSERT_GT(warren, 0);
  ASSERT_EQ(kill(warren, SIGTERM), 0);
  std::string after = pty.ReadUntil("echoke", 15s);
  ASSERT_TRUE(Contains(after, "rc=143\r\n")) << after;
  ExpectCooked(after.substr(after.find("rc=143")));
  EXPECT_EQ(pty.Wait(), 0);
  // The command went with the session.
  CommandResult ps = server_->Cli({"exec", "box", "--sandbox-url", gateway_, "--", "/bin/sh", "-c",
                                   "ps | grep -c '[s]leep 60'"});
  EXPECT_EQ(ps.out, "0\n") << ps.err;
}

TEST_F(CliVerbs, ExecIPassesStdinAndTAloneGetsADefaultSize) {
  CommandResult cat =
      server_->Cli({"exec", "-i", "box", "--sandbox-url", gateway_, "--", "cat"}, "a\nb\n");
  EXPECT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_EQ(cat.out, "a\nb\n");
  CommandResult code = server_->Cli(
      {"exec", "-i", "box", "--sandbox-url", gateway_, "--", "/bin/sh", "-c", "read x; exit $x"},
      "7\n");
  EXPECT_EQ(code.exit_code, 7) << code.err;
  // stdin and stdout are pipes here: a PTY of 80x24.
  CommandResult size =
      server_->Cli({"exec", "-t", "box", "--sandbox-url", gateway_, "--", "stty", "size"});
  EXPECT_EQ(size.exit_code, 0) << size.err;
  EXPECT_EQ(size.out, "24 80\r\n");
}

constexpr char kPool[] = R"(
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata: {name: pool, namespace: default}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: main
        image: IMAGE
        command: ["/bin/sh", "-c", "exec sleep 3600"]
        resources: {limits: {memory: 64Mi}}
)";

std::string PoolWithImage(const std::string& image) {
  std::string m = kPool;
  m.replace(m.find("IMAGE"), 5, image);
  return m;
}

TEST_F(CliVerbs, StatusFollowsASandboxSetsRolloutAndSaysWhyItIsStuck) {
  ASSERT_EQ(server_->Cli({"apply", "-f", "-"}, PoolWithImage("busybox")).exit_code, 0);
  auto until = [&](const std::function<bool(const CommandResult&)>& done) {
    CommandResult r;
    auto deadline = std::chrono::steady_clock::now() + 90s;
    do {
      r = server_->Cli({"status", "sbs", "pool"});
      if (r.exit_code != 0 || done(r)) break;
      std::this_thread::sleep_for(300ms);
    } while (std::chrono::steady_clock::now() < deadline);
    return r;
  };
  CommandResult ready = until([](const CommandResult& r) { return Contains(r.out, "Ready"); });
  EXPECT_EQ(ready.exit_code, 0) << ready.err;
  EXPECT_EQ(ready.out, "pool  Ready  2/2 updated  2/2 available\n");

  // A new template with an image the node does not have: the rollout stalls on it.
  ASSERT_EQ(server_->Cli({"apply", "-f", "-"}, PoolWithImage("no-such-image")).exit_code, 0);
  CommandResult stuck =
      until([](const CommandResult& r) { return Contains(r.out, "no-such-image"); });
  EXPECT_EQ(stuck.exit_code, 0) << stuck.err;
  EXPECT_TRUE(stuck.out.starts_with("pool  Updating  ")) << stuck.out;
  EXPECT_TRUE(Contains(stuck.out, "\n  sandbox pool-")) << stuck.out;
  EXPECT_TRUE(Contains(stuck.out, "no-such-image")) << stuck.out;

  CommandResult slash = server_->Cli({"status", "sbs/pool"});
  EXPECT_TRUE(slash.out.starts_with("pool  Updating  ")) << slash.out << slash.err;
  CommandResult other = server_->Cli({"status", "sbx", "box"});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_TRUE(Contains(other.err, "not sandboxes")) << other.err;
  CommandResult missing = server_->Cli({"status", "sbs", "nosuch"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(Contains(missing.err, "NotFound")) << missing.err;
}

// `scale -w` and `set image -w` print a progress bar as the pool moves; a wait that times out
// says which members are stuck and why, and fails.
TEST_F(CliVerbs, ScaleAndSetImageWaitWithAProgressBar) {
  ASSERT_EQ(server_->Cli({"apply", "-f", "-"}, PoolWithImage("busybox")).exit_code, 0);
  CommandResult scaled =
      server_->Cli({"scale", "sbs", "pool", "--replicas", "3", "-w", "--timeout", "90s"});
  ASSERT_EQ(scaled.exit_code, 0) << scaled.out << scaled.err;
  EXPECT_TRUE(scaled.out.starts_with("sandboxset.agents.kruise.io/pool scaled\npool  Scaling  ["))
      << scaled.out;
  EXPECT_TRUE(scaled.out.ends_with("pool  Ready  [##########]  3/3 available\n")) << scaled.out;
  std::string members =
      server_->Cli({"get", "sbx", "-l", "agents.kruise.io/sandbox-pool=pool", "-o", "name"}).out;
  EXPECT_EQ(std::count(members.begin(), members.end(), '\n'), 3) << members;

  CommandResult stuck =
      server_->Cli({"set", "image", "sbs", "pool", "main=no-such-image", "-w", "--timeout", "20s"});
  EXPECT_EQ(stuck.exit_code, 1);
  EXPECT_TRUE(Contains(stuck.out, "pool  Updating  [")) << stuck.out;
  EXPECT_TRUE(Contains(stuck.out, "\n  sandbox pool-")) << stuck.out;
  EXPECT_TRUE(Contains(stuck.err, "timed out after")) << stuck.err;

  CommandResult not_a_set = server_->Cli({"scale", "sbx", "box", "--replicas", "1", "-w"});
  EXPECT_EQ(not_a_set.exit_code, 1);
}

}  // namespace
}  // namespace warren::node::testing
