// Spawn as envd uses it: what the child inherits (and must not), who it runs as, and how a
// failed step is reported.
#include "os/spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "os/spawn_reaper.h"

namespace warren::os {
namespace {

using namespace std::chrono_literals;

struct Finished {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  return text;
}

Result<Finished> RunToExit(SpawnOptions options) {
  auto status = std::make_shared<std::promise<int>>();
  auto exited = status->get_future();
  ASSIGN_OR_RETURN(SpawnedChild child, ChildReaper::Get().Spawn(options, [status](int ws) {
    status->set_value(WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
  }));
  child.stdin_w.reset();
  Finished f;
  f.out = ReadAll(child.stdout_r.get());
  f.err = ReadAll(child.stderr_r.get());
  if (exited.wait_for(10s) != std::future_status::ready) return DeadlineExceededError("no exit");
  f.exit_code = exited.get();
  return f;
}

SpawnOptions Shell(const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.env = {"PATH=/usr/bin:/bin"};
  return o;
}

TEST(SpawnTest, OutputErrorsAndExitCodeComeBack) {
  auto f = RunToExit(Shell("echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->out, "out\n");
  EXPECT_EQ(f->err, "err\n");
  EXPECT_EQ(f->exit_code, 3);
}

TEST(SpawnTest, ChildStartsWithDefaultSignalsAndNoneBlocked) {
  struct sigaction handler {};
  handler.sa_handler = [](int) {};
  struct sigaction old_usr1 {};
  sigaction(SIGUSR1, &handler, &old_usr1);
  signal(SIGPIPE, SIG_IGN);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &block, &old_mask);

  SpawnOptions o;
  o.argv = {"/bin/cat", "/proc/self/status"};  // cat installs no handlers of its own
  auto f = RunToExit(o);

  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGUSR1, &old_usr1, nullptr);
  signal(SIGPIPE, SIG_DFL);
  ASSERT_TRUE(f.ok()) << f.status();
  for (const char* line : {"SigBlk:\t0000000000000000\n", "SigIgn:\t0000000000000000\n",
                           "SigCgt:\t0000000000000000\n"}) {
    EXPECT_NE(f->out.find(line), std::string::npos) << line << " in\n" << f->out;
  }
}

TEST(SpawnTest, DescriptorsOfTheCallerDoNotLeakIntoTheChild) {
  int leaky = fcntl(STDERR_FILENO, F_DUPFD, 100);  // not close-on-exec
  ASSERT_GE(leaky, 100);
  SpawnOptions o;
  o.argv = {"/bin/ls", "/proc/self/fd"};
  auto f = RunToExit(o);
  close(leaky);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->out, "0\n1\n2\n3\n");  // stdio and ls's own directory
}

TEST(SpawnTest, RunsAsTheGivenUserWithoutChangingTheCaller) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to change user";
  SpawnOptions o = Shell("id -u; id -g; id -G");
  o.credentials = Credentials{.uid = 65534, .gid = 65534, .groups = {65534, 100}};
  auto f = RunToExit(o);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->out, "65534\n65534\n65534 100\n");
  // The child shared our memory until exec; none of our threads may have been switched with it.
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.starts_with("Uid:") || line.starts_with("Gid:")) {
        EXPECT_EQ(line.substr(4).find_first_not_of("\t0"), std::string::npos) << line;
      }
    }
  }
  EXPECT_EQ(getuid(), 0u);
}

TEST(SpawnTest, FailedStepsAreErrorsNamingTheStep) {
  SpawnOptions missing;
  missing.argv = {"no-such-program-here"};
  auto r = RunToExit(missing);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status();

  SpawnOptions bad_cwd = Shell("true");
  bad_cwd.cwd = "/no/such/dir";
  r = RunToExit(bad_cwd);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("chdir '/no/such/dir'"), std::string::npos) << r.status();

  SpawnOptions not_executable;
  not_executable.argv = {"/etc/hostname"};
  r = RunToExit(not_executable);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exec '/etc/hostname'"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace warren::os
