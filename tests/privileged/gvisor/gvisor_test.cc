// The gVisor runtime class with the real runsc: a sandbox runs its command under
// warren-gvisor-init, is reached through the stdio channel, stops, restarts, is adopted by a
// new runtime (also after its first one was killed with SIGKILL) and leaves nothing behind.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>

#include "base/small_file.h"
#include "base/testing/status_macros.h"
#include "os/cgroup.h"
#include "os/mount.h"
#include "os/pidfd.h"
#include "runtime/gvisor/gvisor_runtime.h"
#include "runtime/gvisor/oci_config.h"
#include "runtime/runtime_router.h"
#include "runtime/testing/busybox_rootfs.h"

namespace warren::runtime::gvisor {
namespace {

using namespace std::chrono_literals;
using runtime::testing::TempDir;
using ::testing::HasSubstr;

bool PathExists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

// Writes `request` and reads until EOF (or 10 s).
std::string Exchange(int fd, const std::string& request) {
  size_t off = 0;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (off < request.size() && std::chrono::steady_clock::now() < deadline) {
    ssize_t n = write(fd, request.data() + off, request.size() - off);
    if (n > 0) off += static_cast<size_t>(n);
    if (n < 0 && errno != EAGAIN) break;
    if (n < 0) {
      pollfd p = {fd, POLLOUT, 0};
      poll(&p, 1, 100);
    }
  }
  std::string out;
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0 && errno == EAGAIN) continue;
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

class GvisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    if (access("/usr/bin/runsc", X_OK) != 0) GTEST_SKIP() << "needs runsc";
    static int counter = 0;
    dir_ = std::make_unique<TempDir>("warren-gvisor");
    layer_ = dir_->path() + "/layer";
    ASSERT_OK(runtime::testing::MakeBusyboxLayer(layer_));
    // An index page for httpd to serve.
    ASSERT_OK(base::WriteFileAtomically(layer_ + "/index.html", "hello from gvisor\n"));
    options_.state_dir = dir_->path() + "/state";
    options_.cgroup_parent = fmt::format("warren-gvtest-{}-{}", getpid(), counter++);
    options_.init_path = WARREN_GVISOR_INIT_PATH;
    rt_ = NewRuntime();
    ASSERT_NE(rt_, nullptr);
  }

  void TearDown() override {
    if (rt_ != nullptr) {
      for (const SandboxInfo& info : rt_->List()) EXPECT_OK(rt_->Destroy(info.id));
      rt_.reset();
    }
    if (!options_.cgroup_parent.empty()) {
      GvisorRuntime::RemoveEmptyCgroups(options_.cgroup_parent);
      // runsc made the parent in every hierarchy; none may be left.
      auto mounts = os::ReadMountInfo();
      ASSERT_TRUE(mounts.ok());
      for (const os::MountEntry& m : *mounts) {
        if (m.fs_type != "cgroup" && m.fs_type != "cgroup2") continue;
        EXPECT_FALSE(PathExists(m.mount_point + "/" + options_.cgroup_parent))
            << "cgroup left behind in " << m.mount_point;
      }
    }
    dir_.reset();
  }

  std::unique_ptr<GvisorRuntime> NewRuntime() {
    auto rt = GvisorRuntime::Create(options_);
    EXPECT_TRUE(rt.ok()) << rt.status();
    return rt.ok() ? std::move(rt).value() : nullptr;
  }

  SandboxSpec ShellSpec(const std::string& id, const std::string& script) const {
    SandboxSpec spec;
    spec.id = id;
    spec.layers = {layer_};
    spec.writable_dir = dir_->path() + "/rw-" + id;
    spec.command = {"/bin/sh", "-c", script};
    spec.env = {"PATH=/bin", "HOME=/root"};
    spec.log_path = dir_->path() + "/" + id + ".log";
    spec.resources.memory_bytes = 256 << 20;
    spec.runtime_class = "gvisor";
    return spec;
  }

  std::string ReadLog(const std::string& id) const {
    auto text = base::ReadSmallFile(dir_->path() + "/" + id + ".log");
    return text.ok() ? *text : std::string();
  }
  // The last `bytes` of a file, for a failure message (runsc's own log of a sandbox).
  static std::string LogTail(const std::string& path, size_t bytes) {
    auto text = base::ReadSmallFile(path, 16 << 20);
    if (!text.ok()) return text.status().ToString();
    return text->size() > bytes ? text->substr(text->size() - bytes) : *text;
  }
  // The log once it holds `text`, or as it is after 10 s.
  std::string WaitForLog(const std::string& id, std::string_view text) const {
    std::string log = ReadLog(id);
    for (int i = 0; i < 500 && log.find(text) == std::string::npos; ++i) {
      std::this_thread::sleep_for(20ms);
      log = ReadLog(id);
    }
    return log;
  }

  Status WaitServing(Runtime& rt, const std::string& id, uint16_t port) {
    Status last = Status::Ok();
    for (int i = 0; i < 300; ++i) {
      auto fd = rt.Dial(id, port, 2s);
      if (fd.ok()) return Status::Ok();
      last = fd.status();
      if (last.code() != StatusCode::kUnavailable) return last;
      std::this_thread::sleep_for(20ms);
    }
    return last;
  }

  // A server killed with SIGKILL: `setup` runs in a child process with a runtime of its own;
  // once it returned true, `then` runs there while the test waits `delay` and kills the
  // child. Returns what `setup` returned.
  bool KilledServer(const std::function<bool(GvisorRuntime&)>& setup,
                    const std::function<void(GvisorRuntime&)>& then,
                    std::chrono::milliseconds delay) {
    int ready[2];
    if (pipe(ready) != 0) return false;
    pid_t child = fork();
    if (child < 0) return false;
    if (child == 0) {
      close(ready[0]);
      auto rt = GvisorRuntime::Create(options_);
      const bool ok = rt.ok() && setup(**rt);
      char c = ok ? 'y' : 'n';
      [[maybe_unused]] ssize_t n = write(ready[1], &c, 1);
      if (ok && then) then(**rt);
      for (;;) pause();
    }
    close(ready[1]);
    char c = 0;
    const bool said = read(ready[0], &c, 1) == 1;
    close(ready[0]);
    std::this_thread::sleep_for(delay);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    return said && c == 'y';
  }

  // What of sandbox `id` is left on the host: runsc's state, the root mount, its cgroup, its
  // directory.
  std::vector<std::string> Leftovers(const std::string& id) {
    std::vector<std::string> out;
    const std::string runsc_root = options_.state_dir + "/.runsc";
    if (DIR* d = opendir(runsc_root.c_str())) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] != '.') out.push_back(std::string("runsc state ") + e->d_name);
      }
      closedir(d);
    }
    auto mounts = os::ReadMountInfo();
    if (mounts.ok()) {
      for (const auto& m : *mounts) {
        if (m.mount_point.find(dir_->path()) == 0) out.push_back("mount " + m.mount_point);
      }
    }
    if (mounts.ok()) {
      for (const auto& m : *mounts) {
        if (m.fs_type != "cgroup" && m.fs_type != "cgroup2") continue;
        const std::string d = m.mount_point + "/" + options_.cgroup_parent + "/" + id;
        if (PathExists(d)) out.push_back("cgroup " + d);
      }
    }
    if (PathExists(options_.state_dir + "/" + id)) out.push_back("dir " + id);
    // runsc's sandbox and gofer, and the shim, all name the state dir on their command line.
    if (DIR* d = opendir("/proc")) {
      const std::string needle = options_.state_dir + "/";
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        auto cmdline = base::ReadSmallFile(std::string("/proc/") + e->d_name + "/cmdline");
        if (!cmdline.ok()) continue;
        std::string text = *cmdline;
        std::replace(text.begin(), text.end(), '\0', ' ');
        if (text.find(needle + id) != std::string::npos ||
            text.find(needle + ".runsc") != std::string::npos) {
          out.push_back(std::string("process ") + e->d_name + ": " + text.substr(0, 120));
        }
      }
      closedir(d);
    }
    return out;
  }

  std::unique_ptr<TempDir> dir_;
  std::string layer_;
  GvisorRuntimeOptions options_;
  std::unique_ptr<GvisorRuntime> rt_;
};

TEST_F(GvisorTest, RunsTheCommandAndReportsItsExit) {
  ASSERT_OK(rt_->Create(ShellSpec("exits", "echo hello from inside; echo to-stderr >&2; exit 7")));
  auto info = rt_->Inspect("exits");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state, SandboxState::kCreated);
  ASSERT_OK(rt_->Start("exits"));
  auto exit = rt_->Wait("exits", 30s);
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 7);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_FALSE(exit->unknown);
  EXPECT_THAT(ReadLog("exits"), HasSubstr("hello from inside\n"));
  EXPECT_THAT(ReadLog("exits"), HasSubstr("to-stderr\n"));
  EXPECT_EQ(rt_->Inspect("exits")->state, SandboxState::kStopped);
  // Stopped: runsc's container is gone, the writable layer stays for the next Start.
  EXPECT_THAT(Leftovers("exits"), ::testing::ElementsAre("dir exits"));
}

TEST_F(GvisorTest, DialReachesAServerInsideAndRefusesAClosedPort) {
  ASSERT_OK(rt_->Create(ShellSpec("web", "exec httpd -f -p 127.0.0.1:8080 -h /")));
  ASSERT_OK(rt_->Start("web"));
  ASSERT_OK(WaitServing(*rt_, "web", 8080));
  // Two connections at once, each its own stream.
  auto a = rt_->Dial("web", 8080, 5s);
  auto b = rt_->Dial("web", 8080, 5s);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  std::string rb = Exchange(b->get(), "GET /index.html HTTP/1.0\r\n\r\n");
  std::string ra = Exchange(a->get(), "GET /index.html HTTP/1.0\r\n\r\n");
  EXPECT_THAT(ra, HasSubstr("200 OK"));
  EXPECT_THAT(ra, HasSubstr("hello from gvisor"));
  EXPECT_THAT(rb, HasSubstr("hello from gvisor"));
  auto closed = rt_->Dial("web", 8081, 5s);
  EXPECT_EQ(closed.status().code(), StatusCode::kUnavailable) << closed.status();
  EXPECT_THAT(closed.status().message(), HasSubstr("nothing listens on 127.0.0.1:8081"));
}

TEST_F(GvisorTest, CarriesLargeTransfersBothWays) {
  // A byte-for-byte echo server: 4 MiB up and back through the windowed channel.
  ASSERT_OK(rt_->Create(ShellSpec("echo", "exec nc -ll -p 9000 -e cat")));
  ASSERT_OK(rt_->Start("echo"));
  ASSERT_OK(WaitServing(*rt_, "echo", 9000));
  auto fd = rt_->Dial("echo", 9000, 5s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  std::string payload(4 << 20, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>((i * 131) >> 3);
  std::string got;
  size_t sent = 0;
  char buf[65536];
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (got.size() < payload.size() && std::chrono::steady_clock::now() < deadline) {
    pollfd p = {fd->get(), static_cast<short>(POLLIN | (sent < payload.size() ? POLLOUT : 0)), 0};
    if (poll(&p, 1, 200) <= 0) continue;
    if ((p.revents & POLLOUT) && sent < payload.size()) {
      ssize_t n =
          write(fd->get(), payload.data() + sent, std::min<size_t>(65536, payload.size() - sent));
      if (n > 0) sent += static_cast<size_t>(n);
    }
    if (p.revents & POLLIN) {
      ssize_t n = read(fd->get(), buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
  }
  ASSERT_EQ(got.size(), payload.size());
  EXPECT_TRUE(got == payload);
}

TEST_F(GvisorTest, StopKeepsTheWritableLayerAndDestroyLeavesNothing) {
  ASSERT_OK(rt_->Create(ShellSpec(
      "keeps", "cat /root/mark 2>/dev/null; echo written > /root/mark; echo up; exec sleep 1000")));
  ASSERT_OK(rt_->Start("keeps"));
  // Start returns once the shell is exec'd, not once it has run: a Stop before it wrote the mark
  // killed it first (the test failed 2 in 5 so, the mark never written).
  ASSERT_THAT(WaitForLog("keeps", "up"), HasSubstr("up"));
  int shim = *rt_->ShimPid("keeps");
  uint64_t shim_start = *os::ProcessStartTime(shim);
  auto running = Leftovers("keeps");
  EXPECT_TRUE(std::any_of(running.begin(), running.end(), [](const std::string& l) {
    return l.rfind("process ", 0) == 0;
  })) << "the census sees a running sandbox's processes";
  // sleep ignores nothing: SIGTERM to the init is forwarded and ends it.
  ASSERT_OK(rt_->Stop("keeps", 5s));
  auto info = rt_->Inspect("keeps");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state, SandboxState::kStopped);
  ASSERT_TRUE(info->last_exit.has_value());
  EXPECT_EQ(info->last_exit->signal, SIGTERM);
  EXPECT_NE(os::ProcessStartTime(shim).value_or(0), shim_start) << "the shim ended with it";
  EXPECT_THAT(Leftovers("keeps"), ::testing::ElementsAre("dir keeps"));

  // Started again on the same files.
  ASSERT_OK(rt_->Start("keeps"));
  EXPECT_THAT(WaitForLog("keeps", "written"), HasSubstr("written"));
  // Pause and resume through runsc.
  ASSERT_OK(rt_->Pause("keeps"));
  EXPECT_EQ(rt_->Inspect("keeps")->state, SandboxState::kPaused);
  ASSERT_OK(rt_->Resume("keeps"));
  EXPECT_EQ(rt_->Inspect("keeps")->state, SandboxState::kRunning);
  auto stats = rt_->Stats("keeps");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT(stats->memory_bytes, 0u);
  EXPECT_EQ(stats->memory_limit_bytes, 256u << 20);

  shim = *rt_->ShimPid("keeps");
  shim_start = *os::ProcessStartTime(shim);
  const std::string writable = dir_->path() + "/rw-keeps";
  ASSERT_OK(rt_->Destroy("keeps"));
  EXPECT_THAT(Leftovers("keeps"), ::testing::IsEmpty());
  EXPECT_FALSE(PathExists(writable));
  EXPECT_NE(os::ProcessStartTime(shim).value_or(0), shim_start) << "shim left running";
  EXPECT_EQ(rt_->Inspect("keeps").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(rt_->Destroy("keeps").code(), StatusCode::kNotFound);
}

TEST_F(GvisorTest, BadInputIsRefusedClearly) {
  SandboxSpec egress = ShellSpec("egress", "true");
  egress.egress = true;
  Status s = rt_->Create(egress);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("no network link out"));

  SandboxSpec layer = ShellSpec("nolayer", "true");
  layer.layers = {dir_->path() + "/missing"};
  EXPECT_EQ(rt_->Create(layer).code(), StatusCode::kNotFound);

  ASSERT_OK(rt_->Create(ShellSpec("twice", "true")));
  EXPECT_EQ(rt_->Create(ShellSpec("twice", "true")).code(), StatusCode::kAlreadyExists);

  SandboxSpec missing = ShellSpec("nocmd", "true");
  missing.command = {"/bin/not-there"};
  ASSERT_OK(rt_->Create(missing));
  s = rt_->Start("nocmd");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("/bin/not-there"));
  EXPECT_NE(rt_->Inspect("nocmd")->state, SandboxState::kRunning);
  EXPECT_THAT(Leftovers("nocmd"), ::testing::ElementsAre("dir nocmd"));

  // Through the router: a class the node does not run is named.
  std::map<std::string, RuntimePtr, std::less<>> classes;
  classes.emplace("gvisor", std::move(rt_));
  RuntimeRouter router(std::move(classes), "gvisor");
  SandboxSpec kata = ShellSpec("kata", "true");
  kata.runtime_class = "kata";
  s = router.Create(kata);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("runtime class \"kata\" is not available"));
  // Give the runtime back for TearDown's cleanup.
  for (const char* id : {"twice", "nocmd"}) EXPECT_OK(router.Destroy(id));
}

TEST_F(GvisorTest, ANewRuntimeAdoptsWhatRuns) {
  ASSERT_OK(rt_->Create(ShellSpec("kept", "exec httpd -f -p 127.0.0.1:8080 -h /")));
  ASSERT_OK(rt_->Start("kept"));
  ASSERT_OK(WaitServing(*rt_, "kept", 8080));
  ASSERT_OK(rt_->Create(ShellSpec("ended", "exit 3")));
  ASSERT_OK(rt_->Start("ended"));
  ASSERT_TRUE(rt_->Wait("ended", 30s).ok());
  rt_.reset();  // the server "restarts"

  rt_ = NewRuntime();
  ASSERT_NE(rt_, nullptr);
  auto report = rt_->Adopt();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->orphans.empty());
  ASSERT_EQ(report->adopted.size(), 2u);
  EXPECT_EQ(rt_->Inspect("kept")->state, SandboxState::kRunning);
  EXPECT_EQ(rt_->Inspect("ended")->state, SandboxState::kStopped);
  auto fd = rt_->Dial("kept", 8080, 5s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_THAT(Exchange(fd->get(), "GET /index.html HTTP/1.0\r\n\r\n"),
              HasSubstr("hello from gvisor"));
  // Its exit is still seen by the new runtime.
  ASSERT_OK(rt_->Stop("kept", 5s));
  EXPECT_EQ(rt_->Inspect("kept")->last_exit->signal, SIGTERM);
}

TEST_F(GvisorTest, AdoptsAfterTheServerIsKilled) {
  // The runtime lives in a child process that is killed with SIGKILL once its sandbox runs:
  // the shim and the sandbox must outlive it (no tie to the process that made them).
  rt_.reset();
  ASSERT_TRUE(KilledServer(
      [&](GvisorRuntime& rt) {
        return rt.Create(ShellSpec("survivor", "exec httpd -f -p 127.0.0.1:8080 -h /")).ok() &&
               rt.Start("survivor").ok();
      },
      nullptr, 0ms));

  rt_ = NewRuntime();
  ASSERT_NE(rt_, nullptr);
  auto report = rt_->Adopt();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->adopted.size(), 1u);
  EXPECT_EQ(report->adopted[0].state, SandboxState::kRunning);
  ASSERT_OK(WaitServing(*rt_, "survivor", 8080));
  auto fd = rt_->Dial("survivor", 8080, 5s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_THAT(Exchange(fd->get(), "GET /index.html HTTP/1.0\r\n\r\n"),
              HasSubstr("hello from gvisor"));
  ASSERT_OK(rt_->Destroy("survivor"));
  EXPECT_THAT(Leftovers("survivor"), ::testing::IsEmpty());
}

// The counter lives in the shell's memory (and /dev/shm, the Sentry's memory): after a
// hibernate, a restart of the runtime and a restore it goes on from where it was rather than
// from 1, and the sandbox answers on the same channel through a new shim. (Each count is
// renamed into place: httpd could serve a file truncated for rewriting, read as 0.)
TEST_F(GvisorTest, HibernateKeepsProcessesAndMemoryAcrossARestore) {
  ASSERT_OK(rt_->Create(ShellSpec("counter",
                                  "httpd -p 127.0.0.1:8080 -h /dev/shm; i=0; "
                                  "while true; do i=$((i+1)); echo $i > /dev/shm/next; mv "
                                  "/dev/shm/next /dev/shm/count; sleep 0.05; done")));
  ASSERT_OK(rt_->Start("counter"));
  ASSERT_OK(WaitServing(*rt_, "counter", 8080));
  auto count = [&]() -> long {
    auto fd = rt_->Dial("counter", 8080, 5s);
    if (!fd.ok()) return -1;
    std::string r = Exchange(fd->get(), "GET /count HTTP/1.0\r\n\r\n");
    size_t body = r.find("\r\n\r\n");
    return body == std::string::npos ? -1 : std::atol(r.c_str() + body + 4);
  };
  std::this_thread::sleep_for(1s);
  long before = count();
  ASSERT_GT(before, 3);

  ASSERT_OK(rt_->Hibernate("counter"));
  EXPECT_EQ(rt_->Inspect("counter")->state, SandboxState::kPaused);
  EXPECT_EQ(rt_->Inspect("counter")->pid, 0) << "no process holds it";
  EXPECT_EQ(rt_->Dial("counter", 8080, 1s).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(PathExists(options_.state_dir + "/counter/checkpoint"));
  for (const std::string& l : Leftovers("counter")) {
    EXPECT_EQ(l, "dir counter") << "a hibernated sandbox holds no runsc state, mount or cgroup";
  }
  std::this_thread::sleep_for(500ms);

  // A new runtime finds it hibernated and restores it.
  rt_.reset();
  rt_ = NewRuntime();
  ASSERT_NE(rt_, nullptr);
  auto report = rt_->Adopt();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->adopted.size(), 1u);
  EXPECT_EQ(report->adopted[0].state, SandboxState::kPaused);
  ASSERT_OK(rt_->Resume("counter"));
  EXPECT_EQ(rt_->Inspect("counter")->state, SandboxState::kRunning);
  ASSERT_OK(WaitServing(*rt_, "counter", 8080));
  long after = count();
  EXPECT_GE(after, before) << "the counter started over: its process was not restored";
  EXPECT_LT(after, before + 40) << "it did not run while hibernated";
  std::this_thread::sleep_for(500ms);
  EXPECT_GT(count(), after) << "and it runs on";
  EXPECT_FALSE(PathExists(options_.state_dir + "/counter/checkpoint")) << "the image is spent";

  // A server killed after the restore but before it removed the spent image: the next one
  // finds the sandbox running (not a hibernate to finish) and removes the image.
  ASSERT_EQ(mkdir((options_.state_dir + "/counter/checkpoint").c_str(), 0700), 0);
  ASSERT_OK(base::WriteFileAtomically(options_.state_dir + "/counter/checkpoint/checkpoint.img",
                                      "spent"));
  rt_.reset();
  rt_ = NewRuntime();
  ASSERT_NE(rt_, nullptr);
  report = rt_->Adopt();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->adopted.size(), 1u);
  EXPECT_EQ(report->adopted[0].state, SandboxState::kRunning);
  EXPECT_FALSE(PathExists(options_.state_dir + "/counter/checkpoint"));
  const long adopted = count();
  EXPECT_GE(adopted, after) << "the restored sandbox was not kept";

  // Its exit is still reported through the new shim.
  ASSERT_OK(rt_->Stop("counter", 5s));
  EXPECT_EQ(rt_->Inspect("counter")->last_exit->signal, SIGTERM);
  ASSERT_OK(rt_->Destroy("counter"));
  EXPECT_THAT(Leftovers("counter"), ::testing::IsEmpty());
}

// A memory capture: the source is checkpointed, its writable layer read while nothing runs,
// and it goes on as the same processes; every sandbox started from the image goes on from the
// captured count (the counter lives in /dev/shm, the Sentry's memory), its own from then on.
TEST_F(GvisorTest, CaptureMemoryGivesClonesThatGoOnWhereTheSourceWas) {
  const std::string script =
      "echo here > /marker; httpd -p 127.0.0.1:8080 -h /dev/shm; i=0; "
      "while true; do i=$((i+1)); echo $i > /dev/shm/next; mv /dev/shm/next /dev/shm/count; sleep "
      "0.05; done";
  ASSERT_OK(rt_->Create(ShellSpec("source", script)));
  ASSERT_OK(rt_->Start("source"));
  ASSERT_OK(WaitServing(*rt_, "source", 8080));
  auto count = [&](const std::string& id) -> long {
    auto fd = rt_->Dial(id, 8080, 5s);
    if (!fd.ok()) return -1;
    std::string r = Exchange(fd->get(), "GET /count HTTP/1.0\r\n\r\n");
    size_t body = r.find("\r\n\r\n");
    return body == std::string::npos ? -1 : std::atol(r.c_str() + body + 4);
  };
  std::this_thread::sleep_for(1s);
  const long before = count("source");
  ASSERT_GT(before, 3);
  const std::string image = dir_->path() + "/memory";

  // Bad input first: nothing is captured, the source is not disturbed.
  auto no_read = [](const WritableLayerView&) { return Status::Ok(); };
  EXPECT_EQ(rt_->CaptureMemory("nosuch", image, no_read).code(), StatusCode::kNotFound);
  EXPECT_EQ(rt_->CaptureMemory("source", "relative/dir", no_read).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(rt_->CaptureMemory("source", dir_->path() + "/no/parent", no_read).code(),
            StatusCode::kInvalidArgument);
  ASSERT_EQ(mkdir(image.c_str(), 0700), 0);
  EXPECT_EQ(rt_->CaptureMemory("source", image, no_read).code(), StatusCode::kAlreadyExists);
  ASSERT_EQ(rmdir(image.c_str()), 0);
  // A read that fails: no image, and the source runs on all the same.
  EXPECT_EQ(rt_->CaptureMemory("source", image,
                               [](const WritableLayerView&) { return InternalError("no room"); })
                .code(),
            StatusCode::kInternal);
  EXPECT_FALSE(PathExists(image));
  EXPECT_FALSE(PathExists(image + ".partial"));
  ASSERT_OK(WaitServing(*rt_, "source", 8080));
  EXPECT_GE(count("source"), before);

  bool saw_marker = false;
  ASSERT_OK(rt_->CaptureMemory("source", image, [&](const WritableLayerView& layer) {
    struct stat st {};
    saw_marker = fstatat(layer.fd, "marker", &st, AT_SYMLINK_NOFOLLOW) == 0;
    return Status::Ok();
  }));
  EXPECT_TRUE(saw_marker) << "the read did not see the source's writable layer";
  EXPECT_TRUE(PathExists(image + "/checkpoint.img"));
  EXPECT_FALSE(PathExists(options_.state_dir + "/source/checkpoint")) << "the source's is spent";
  EXPECT_EQ(rt_->Inspect("source")->state, SandboxState::kRunning);
  ASSERT_OK(WaitServing(*rt_, "source", 8080));
  const long captured = count("source");
  EXPECT_GE(captured, before) << "the source started over";

  for (const std::string id : {"clone-a", "clone-b"}) {
    SandboxSpec spec = ShellSpec(id, "echo not restored; sleep 0.5; exit 3");
    spec.restore_image = image;
    ASSERT_OK(rt_->Create(spec));
    ASSERT_OK(rt_->Start(id));
    ASSERT_OK(WaitServing(*rt_, id, 8080));
    const long n = count(id);
    EXPECT_GE(n, before) << id << ": the counter started over";
    std::this_thread::sleep_for(300ms);
    EXPECT_GT(count(id), n) << id << " does not run on";
  }
  EXPECT_TRUE(PathExists(image + "/checkpoint.img")) << "one image serves every clone";
  // A clone hibernates and comes back like any sandbox.
  const long hibernated_at = count("clone-b");
  ASSERT_OK(rt_->Hibernate("clone-b"));
  ASSERT_OK(rt_->Resume("clone-b"));
  ASSERT_OK(WaitServing(*rt_, "clone-b", 8080));
  EXPECT_GE(count("clone-b"), hibernated_at) << "the clone started over after its hibernate";
  // Each its own: one stopped, the other and the source run on; a clone started again after
  // a stop runs its command rather than the image.
  ASSERT_OK(rt_->Stop("clone-a", 2s));
  EXPECT_GT(count("clone-b"), 0);
  EXPECT_GT(count("source"), captured);
  ASSERT_OK(rt_->Start("clone-a"));
  auto exited = rt_->Wait("clone-a", 20s);
  ASSERT_TRUE(exited.ok()) << exited.status();
  EXPECT_EQ(exited->exit_code, 3);
  EXPECT_THAT(ReadLog("clone-a"), HasSubstr("not restored"));

  // A clone whose image is gone is refused at its start, naming it.
  SandboxSpec lost = ShellSpec("clone-c", "exit 0");
  lost.restore_image = dir_->path() + "/gone";
  ASSERT_OK(rt_->Create(lost));
  Status started = rt_->Start("clone-c");
  EXPECT_EQ(started.code(), StatusCode::kFailedPrecondition) << started;
  EXPECT_THAT(started.message(), HasSubstr(dir_->path() + "/gone"));

  // Destroyed at once (a SIGKILL to every process of the container did not reach a clone's
  // restored processes, which kept it up until its cgroup was killed 20 s later).
  for (const std::string id : {"source", "clone-a", "clone-b", "clone-c"}) {
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_OK(rt_->Destroy(id));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, options_.kill_timeout) << id;
  }
  for (const std::string id : {"source", "clone-a", "clone-b", "clone-c"}) {
    EXPECT_THAT(Leftovers(id), ::testing::IsEmpty());
  }
}

// The class is offered only where runsc runs: a missing binary, and one that is there but
// does not run, are both refused with what was wrong.
TEST_F(GvisorTest, ARunscThatIsMissingOrDoesNotRunIsRefused) {
  GvisorRuntimeOptions o = options_;
  o.state_dir = dir_->path() + "/other-state";
  o.runsc_path = dir_->path() + "/no-such-runsc";
  auto missing = GvisorRuntime::Create(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("runsc is not installed"));
  o.runsc_path = dir_->path() + "/broken-runsc";
  ASSERT_OK(base::WriteFileAtomically(o.runsc_path, "#!/bin/sh\nexit 3\n"));
  ASSERT_EQ(chmod(o.runsc_path.c_str(), 0755), 0);
  auto broken = GvisorRuntime::Create(o);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(broken.status().message(), HasSubstr("--version did not run"));
}

// A server killed with SIGKILL in the middle of a hibernate: the next runtime finds the
// sandbox either hibernated (the checkpoint finished without it) or running as it was, never
// lost, with its counter going on, and no image, mount, cgroup or runsc state left behind.
TEST_F(GvisorTest, AHibernateCutShortByAKill9EndsHibernatedOrRunning) {
  rt_.reset();
  for (int delay_ms : {0, 300, 900}) {
    SCOPED_TRACE(fmt::format("killed {} ms into the hibernate", delay_ms));
    const std::string id = fmt::format("cut{}", delay_ms);
    // 48 MB in the Sentry's memory, so the checkpoint takes a while.
    ASSERT_TRUE(KilledServer(
        [&](GvisorRuntime& rt) {
          bool ok = rt.Create(ShellSpec(id,
                                        "head -c 50331648 /dev/urandom > /dev/shm/blob; "
                                        "httpd -p 127.0.0.1:8080 -h /dev/shm; i=0; while true; "
                                        "do i=$((i+1)); echo $i > /dev/shm/next; mv /dev/shm/next "
                                        "/dev/shm/count; sleep 0.05; "
                                        "done"))
                        .ok() &&
                    rt.Start(id).ok() && WaitServing(rt, id, 8080).ok();
          if (ok) std::this_thread::sleep_for(500ms);
          return ok;
        },
        [&](GvisorRuntime& rt) { (void)rt.Hibernate(id); }, std::chrono::milliseconds(delay_ms)));

    rt_ = NewRuntime();
    ASSERT_NE(rt_, nullptr);
    auto report = rt_->Adopt();
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_EQ(report->adopted.size(), 1u);
    const SandboxInfo& adopted = report->adopted[0];
    ASSERT_TRUE(adopted.state == SandboxState::kRunning ||
                (adopted.state == SandboxState::kPaused && adopted.pid == 0))
        << "neither running nor hibernated: " << SandboxStateName(adopted.state)
        << "; runsc's log ends: " << LogTail(options_.state_dir + "/" + id + "/runsc.log", 2000);
    EXPECT_FALSE(PathExists(options_.state_dir + "/" + id + "/checkpoint.partial"));
    if (adopted.state == SandboxState::kPaused) {
      EXPECT_TRUE(PathExists(options_.state_dir + "/" + id + "/checkpoint"));
      for (const std::string& l : Leftovers(id)) EXPECT_EQ(l, "dir " + id);
      ASSERT_OK(rt_->Resume(id));
    }
    ASSERT_OK(WaitServing(*rt_, id, 8080));
    auto count = [&]() -> long {
      auto fd = rt_->Dial(id, 8080, 5s);
      if (!fd.ok()) return -1;
      std::string r = Exchange(fd->get(), "GET /count HTTP/1.0\r\n\r\n");
      size_t body = r.find("\r\n\r\n");
      return body == std::string::npos ? -1 : std::atol(r.c_str() + body + 4);
    };
    // /dev/shm is the Sentry's memory: a count there at all is the processes' state kept (the
    // sandbox is never started afresh by adoption); under load it may be a small one.
    const long first = count();
    EXPECT_GT(first, 0) << "the counter's memory was lost";
    long later = first;
    for (int i = 0; i < 100 && later <= first; ++i) {
      std::this_thread::sleep_for(50ms);
      later = count();
    }
    EXPECT_GT(later, first) << "and it counts on";
    ASSERT_OK(rt_->Destroy(id));
    EXPECT_THAT(Leftovers(id), ::testing::IsEmpty());
    rt_.reset();
  }
}

// A server killed with SIGKILL in the middle of a Start (runsc create, start, the command's
// exec): the next runtime finds the sandbox running, or as it was before the Start with
// nothing of runsc left (no unmanaged Sentry, no "already exists" at the next Start).
TEST_F(GvisorTest, AStartCutShortByAKill9EndsRunningOrNotStarted) {
  rt_.reset();
  for (int delay_ms : {0, 150, 400}) {
    SCOPED_TRACE(fmt::format("killed {} ms into the start", delay_ms));
    const std::string id = fmt::format("start{}", delay_ms);
    ASSERT_TRUE(KilledServer(
        [&](GvisorRuntime& rt) {
          return rt.Create(ShellSpec(id, "exec httpd -f -p 127.0.0.1:8080 -h /")).ok();
        },
        [&](GvisorRuntime& rt) { (void)rt.Start(id); }, std::chrono::milliseconds(delay_ms)));
    rt_ = NewRuntime();
    ASSERT_NE(rt_, nullptr);
    auto report = rt_->Adopt();
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_EQ(report->adopted.size(), 1u);
    const SandboxInfo& adopted = report->adopted[0];
    if (adopted.state != SandboxState::kRunning) {
      EXPECT_EQ(adopted.state, SandboxState::kCreated);
      EXPECT_EQ(adopted.pid, 0);
      EXPECT_THAT(Leftovers(id), ::testing::ElementsAre("dir " + id))
          << "a start cut short left runsc state, a mount or a cgroup";
      ASSERT_OK(rt_->Start(id));
    }
    ASSERT_OK(WaitServing(*rt_, id, 8080));
    ASSERT_OK(rt_->Destroy(id));
    EXPECT_THAT(Leftovers(id), ::testing::IsEmpty());
    rt_.reset();
  }
}

// warren-envd-gvisor (Asio's select reactor) can be checkpointed with its listener and a
// keep-alive connection open, and serves on after the restore: the epoll build cannot (runsc
// 20221219 refuses to save a TCP socket an epoll instance watches, and the sandbox dies).
TEST_F(GvisorTest, HibernateWithEnvdInsideKeepsItServing) {
  ASSERT_EQ(system(fmt::format("cp {} {}/warren-envd", WARREN_ENVD_GVISOR_PATH, layer_).c_str()),
            0);
  SandboxSpec spec = ShellSpec("envd", "");
  spec.command = {"/warren-envd", "--listen", "127.0.0.1:49983"};
  ASSERT_OK(rt_->Create(spec));
  ASSERT_OK(rt_->Start("envd"));
  ASSERT_OK(WaitServing(*rt_, "envd", 49983));
  const std::string health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  auto kept = rt_->Dial("envd", 49983, 5s);
  ASSERT_OK(kept.status());
  ASSERT_EQ(write(kept->get(), health.data(), health.size()), static_cast<ssize_t>(health.size()));
  {
    char buf[512];
    pollfd p = {kept->get(), POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 10000), 1);
    ssize_t n = read(kept->get(), buf, sizeof buf);
    ASSERT_GT(n, 0);
    EXPECT_THAT(std::string(buf, static_cast<size_t>(n)), HasSubstr("204"));
  }

  ASSERT_OK(rt_->Hibernate("envd"));
  EXPECT_EQ(rt_->Inspect("envd")->state, SandboxState::kPaused);
  ASSERT_OK(rt_->Resume("envd"));
  ASSERT_OK(WaitServing(*rt_, "envd", 49983));
  auto fd = rt_->Dial("envd", 49983, 5s);
  ASSERT_OK(fd.status());
  EXPECT_THAT(Exchange(fd->get(), "GET /health HTTP/1.0\r\n\r\n"), HasSubstr("204"));
}

}  // namespace
}  // namespace warren::runtime::gvisor
