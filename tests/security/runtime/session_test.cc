// pid 1 runs in a session of its own with no controlling terminal: a server started from a
// terminal does not hand that terminal to its sandboxes (where /dev/tty would reach it).
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "base/small_file.h"
#include "base/strings.h"
#include "security_fixture.h"

namespace warren::runtime::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Fields 6 (session) and 7 (tty_nr) of /proc/<pid>/stat, after the ")" that ends the name.
struct SessionFields {
  long session = -1;
  long tty_nr = -1;
};
SessionFields ReadSession(const std::string& stat) {
  SessionFields f;
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return f;
  auto fields = base::SplitNonEmpty(std::string_view(stat).substr(close + 1), ' ');
  // state ppid pgrp session tty_nr ...
  if (fields.size() > 4) {
    f.session = base::ParseInt64(fields[3]).value_or(-1);
    f.tty_nr = base::ParseInt64(fields[4]).value_or(-1);
  }
  return f;
}

// What the child that owns a terminal reports back (a pipe carries it to the test).
struct Report {
  int started = 0;    // 1 when the sandbox ran
  long session = -1;  // pid 1's session, seen from the host
  long tty_nr = -1;   // pid 1's controlling terminal, seen from the host (0: none)
  long host_session = -1;
  char log[512] = {};
};

class SessionTest : public AttackTest {};

TEST_F(SessionTest, PidOneHasItsOwnSessionAndNoControllingTerminal) {
  // The runtime runs in a child that is a session leader with a pseudo-terminal as its
  // controlling terminal, as a server started from an operator's shell would be.
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  int pipefd[2];
  ASSERT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
  rt_.reset();  // the child makes its own; no threads of ours are copied into it
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Report r;
    if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) != 0) _exit(3);
    auto rt = native::NativeRuntime::Create(Options());
    if (!rt.ok()) _exit(4);
    SandboxSpec spec =
        ShellSpec("tty", "echo STOLEN-BY-THE-SANDBOX > /dev/tty 2>&1; echo tty-write=$?; sleep 2");
    if ((*rt)->Create(spec).ok() && (*rt)->Start("tty").ok()) {
      r.started = 1;
      auto pid = (*rt)->Pid("tty");
      if (pid.ok()) {
        auto stat = base::ReadSmallFile(fmt::format("/proc/{}/stat", *pid));
        SessionFields f = ReadSession(stat.ok() ? *stat : "");
        r.session = f.session;
        r.tty_nr = f.tty_nr;
      }
      r.host_session = getsid(0);
      (void)(*rt)->Wait("tty", std::chrono::seconds(30));
      std::string log = ReadLog("tty");
      snprintf(r.log, sizeof r.log, "%s", log.c_str());
    }
    (void)(*rt)->Destroy("tty");
    (void)!write(pipefd[1], &r, sizeof r);
    _exit(0);
  }
  close(pipefd[1]);
  close(slave);
  Report r;
  ssize_t got = read(pipefd[0], &r, sizeof r);
  close(pipefd[0]);
  int status = 0;
  waitpid(child, &status, 0);
  // What reached the terminal: the operator would have seen it.
  std::string seen;
  fcntl(master, F_SETFL, O_NONBLOCK);
  char buf[512];
  ssize_t n;
  while ((n = read(master, buf, sizeof buf)) > 0) seen.append(buf, static_cast<size_t>(n));
  close(master);

  ASSERT_EQ(got, static_cast<ssize_t>(sizeof r));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_EQ(r.started, 1);
  EXPECT_EQ(r.tty_nr, 0) << "pid 1 has a controlling terminal";
  EXPECT_NE(r.session, r.host_session) << "pid 1 shares the server's session";
  EXPECT_GT(r.session, 0);
  EXPECT_THAT(seen, Not(HasSubstr("STOLEN-BY-THE-SANDBOX")));
  EXPECT_THAT(std::string(r.log), HasSubstr("tty-write=1"));
  EXPECT_THAT(std::string(r.log), HasSubstr("No such device or address"));
}

}  // namespace
}  // namespace warren::runtime::testing
