// An acknowledged write survives kill -9: a child process writes in a burst from several threads
// and reports each acknowledged write on a pipe; the parent kills it mid-burst, reopens the
// database and checks that every acknowledged write is there.

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>

#include "api/kinds.h"
#include "base/strings.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::store {
namespace {

using namespace std::chrono_literals;
using testing::MakeSandbox;

constexpr int kAckFd = 3;
constexpr int kWriterThreads = 8;
constexpr const char* kDirEnv = "WARREN_STORE_CRASH_DIR";

void WriteLine(const std::string& line) {
  // One write(2) of less than PIPE_BUF bytes is atomic, so lines from threads never mix.
  std::string l = line + "\n";
  ssize_t n = write(kAckFd, l.data(), l.size());
  (void)n;
}

// Runs only in the child the crash test starts (it is disabled otherwise).
TEST(CrashChild, DISABLED_WriteUntilKilled) {
  const char* dir = std::getenv(kDirEnv);
  if (dir == nullptr) GTEST_SKIP() << "only run by StoreCrash";
  SqliteStoreOptions options;
  options.path = std::string(dir) + "/store.db";
  auto store = SqliteStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriterThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread creates objects, and updates its own counter object.
      auto counter = (*store)->Create(MakeSandbox(fmt::format("counter-{}", t), {{"n", "0"}}));
      if (!counter.ok()) return;
      WriteLine(fmt::format("C counter-{}", t));
      for (int i = 1;; ++i) {
        std::string name = fmt::format("obj-{}-{}", t, i);
        if ((*store)->Create(MakeSandbox(name)).ok()) WriteLine("C " + name);
        counter->metadata.labels["n"] = std::to_string(i);
        auto updated = (*store)->Update(*counter);
        if (!updated.ok()) return;
        counter = std::move(updated);
        WriteLine(fmt::format("U counter-{} {}", t, i));
      }
    });
  }
  // The parent kills us long before this.
  std::this_thread::sleep_for(120s);
  std::_Exit(3);
}

TEST(StoreCrash, AcknowledgedWritesSurviveKillNine) {
  testing::TempDir dir;
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  // Everything the child needs is prepared before fork: after it only exec-safe calls.
  std::string env_dir = fmt::format("{}={}", kDirEnv, dir.path());
  std::vector<std::string> env_strings = {env_dir};
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=CrashChild.DISABLED_WriteUntilKilled";
  std::string also = "--gtest_also_run_disabled_tests";
  std::string self = "/proc/self/exe";
  char* argv[] = {self.data(), filter.data(), also.data(), nullptr};

  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(fds[1], kAckFd);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execve(argv[0], argv, envp.data());
    _exit(127);
  }
  close(fds[1]);

  std::map<std::string, int> counters;  // acknowledged counter values
  std::vector<std::string> created;
  std::string buffer;
  auto consume = [&](bool until_eof, size_t stop_after) {
    char chunk[4096];
    auto deadline = std::chrono::steady_clock::now() + 60s;
    while (until_eof || created.size() + counters.size() < stop_after) {
      if (std::chrono::steady_clock::now() > deadline) break;
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, 1000) <= 0) continue;
      ssize_t n = read(fds[0], chunk, sizeof(chunk));
      if (n <= 0) break;
      buffer.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = buffer.find('\n')) != std::string::npos) {
        std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        auto parts = base::Split(line, ' ');
        if (parts[0] == "C") created.emplace_back(parts[1]);
        if (parts[0] == "U") counters[std::string(parts[1])] = std::stoi(std::string(parts[2]));
      }
    }
  };
  // Let the burst run, then kill it without warning in the middle of writing.
  consume(false, 400);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << "child exited early";
  consume(true, 0);  // acknowledgements still in the pipe
  close(fds[0]);
  ASSERT_GE(created.size(), 200u);

  SqliteStoreOptions options;
  options.path = dir.path() + "/store.db";
  auto store = SqliteStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  size_t missing = 0;
  for (const auto& name : created) {
    auto r = (*store)->Get(api::SandboxKind(), "default", name);
    if (!r.ok()) {
      ++missing;
      ADD_FAILURE() << "acknowledged create lost: " << name << ": " << r.status();
    }
  }
  for (const auto& [name, acked] : counters) {
    auto r = (*store)->Get(api::SandboxKind(), "default", name);
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_GE(std::stoi(r->metadata.labels.at("n")), acked) << "acknowledged update lost: " << name;
  }
  EXPECT_EQ(missing, 0u);
  // The store keeps working after recovery.
  EXPECT_TRUE((*store)->Create(MakeSandbox("after-crash")).ok());
  std::cout << "acknowledged creates " << created.size() << ", counters " << counters.size()
            << ", all present after kill -9\n";
}

}  // namespace
}  // namespace warren::store
