// A restarted server takes over the sandboxes that kept running, and reports what is left of
// the ones that did not.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "base/dir_names.h"
#include "base/scope_guard.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "census.h"
#include "os/cgroup.h"
#include "os/pidfd.h"
#include "sandbox_fixture.h"

namespace warren::runtime::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

Status WaitUntilServing(Runtime& rt, const std::string& id, uint16_t port) {
  for (int i = 0; i < 500; ++i) {
    auto fd = rt.Dial(id, port, 1s);
    if (fd.ok()) return Status::Ok();
    if (fd.status().code() != StatusCode::kUnavailable) return fd.status();
    std::this_thread::sleep_for(10ms);
  }
  return DeadlineExceededError("not serving");
}

const SandboxInfo* Find(const AdoptionReport& r, const std::string& id) {
  for (const SandboxInfo& i : r.adopted) {
    if (i.id == id) return &i;
  }
  return nullptr;
}

int ThreadCount() {
  auto status = base::ReadSmallFile("/proc/self/status");
  if (!status.ok()) return -1;
  for (std::string_view l : base::Split(*status, '\n')) {
    if (l.rfind("Threads:", 0) == 0) {
      return static_cast<int>(base::ParseInt64(base::TrimSpace(l.substr(8))).value_or(-1));
    }
  }
  return -1;
}

TEST_F(SandboxTest, ANewRuntimeAdoptsWhatTheOldOneLeftRunning) {
  ASSERT_OK(rt_->Create(ShellSpec("web", "httpd -f -p 127.0.0.1:8080 -h /")));
  ASSERT_OK(rt_->Start("web"));
  ASSERT_OK(WaitUntilServing(*rt_, "web", 8080));
  ASSERT_OK(rt_->Create(ShellSpec("frozen", "sleep 1000")));
  ASSERT_OK(rt_->Start("frozen"));
  ASSERT_OK(rt_->Pause("frozen"));
  ASSERT_OK(rt_->Create(ShellSpec("done", "exit 4")));
  ASSERT_OK(rt_->Start("done"));
  ASSERT_TRUE(rt_->Wait("done", 10s).ok());
  ASSERT_OK(rt_->Create(ShellSpec("fresh", "true")));
  pid_t web_pid = *rt_->Pid("web");
  uint64_t web_start = *os::ProcessStartTime(web_pid);

  // The server "restarts": the runtime goes away without destroying anything.
  rt_.reset();
  EXPECT_TRUE(ProcessAlive(web_pid, web_start)) << "sandboxes outlive the runtime";

  rt_ = NewRuntime();
  ASSERT_NE(rt_, nullptr);
  EXPECT_TRUE(rt_->List().empty()) << "nothing is ours before Adopt";
  auto report = rt_->Adopt();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->orphans, ::testing::IsEmpty());
  ASSERT_EQ(report->adopted.size(), 4u);
  ASSERT_NE(Find(*report, "web"), nullptr);
  EXPECT_EQ(Find(*report, "web")->state, SandboxState::kRunning);
  EXPECT_EQ(Find(*report, "web")->pid, web_pid);
  EXPECT_EQ(Find(*report, "frozen")->state, SandboxState::kPaused);
  EXPECT_EQ(Find(*report, "done")->state, SandboxState::kStopped);
  EXPECT_EQ(Find(*report, "done")->last_exit->exit_code, 4);
  EXPECT_EQ(Find(*report, "fresh")->state, SandboxState::kCreated);

  // Adopted sandboxes are fully usable.
  ASSERT_OK(WaitUntilServing(*rt_, "web", 8080));
  ASSERT_OK(rt_->Resume("frozen"));
  ASSERT_OK(rt_->Start("fresh"));
  ASSERT_OK(rt_->Start("done"));
  auto stats = rt_->Stats("web");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT(stats->memory_bytes, 0u);
  // Adopting twice changes nothing.
  auto again = rt_->Adopt();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->adopted.empty());
  ASSERT_OK(rt_->Stop("web", 100ms));
  EXPECT_EQ(rt_->Inspect("web")->last_exit->signal, SIGKILL);
  EXPECT_FALSE(ProcessAlive(web_pid, web_start));
  // TearDown destroys everything and checks no cgroup is left.
}

TEST_F(SandboxTest, AdoptsSandboxesOfAServerProcessThatExited) {
  // As under systemd: a subreaper inherits the sandboxes of a server that died, so their exit
  // status stays known.
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  rt_.reset();
  // A joined thread still counts until the kernel has released it, a moment after join.
  for (int i = 0; i < 200 && ThreadCount() != 1; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(ThreadCount(), 1) << "fork() below needs a single-threaded process";
  pid_t server = fork();
  ASSERT_GE(server, 0);
  if (server == 0) {
    // The short-lived "server": starts a sandbox and exits without cleaning up.
    auto rt = native::NativeRuntime::Create(Options());
    if (!rt.ok()) _exit(10);
    if (!(*rt)->Create(ShellSpec("survivor", "httpd -f -p 127.0.0.1:8080 -h /")).ok()) _exit(11);
    if (!(*rt)->Start("survivor").ok()) _exit(12);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(server, &status, 0), server);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);

  rt_ = NewRuntime();
  auto report = rt_->Adopt();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->adopted.size(), 1u);
  EXPECT_EQ(report->adopted[0].state, SandboxState::kRunning);
  ASSERT_OK(WaitUntilServing(*rt_, "survivor", 8080));
  ASSERT_OK(rt_->Stop("survivor", 100ms));
  auto info = rt_->Inspect("survivor");
  ASSERT_TRUE(info->last_exit.has_value());
  EXPECT_FALSE(info->last_exit->unknown) << "we are its parent now, so its status is known";
  EXPECT_EQ(info->last_exit->signal, SIGKILL);
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

// A sandbox dies while no runtime watches it, and its pid is "recycled" by an unrelated
// process; adoption must not take that process for the sandbox (nor Destroy kill it). With
// GetParam() the newcomer also has the recorded start time: start times count in clock ticks
// (10 ms), so a pid reused within the tick the sandbox started in matches on time alone, and
// only where the process sits tells them apart.
class RecycledPidTest : public SandboxTest, public ::testing::WithParamInterface<bool> {};

TEST_P(RecycledPidTest, IsNeverMistakenForTheSandbox) {
  ASSERT_OK(rt_->Create(ShellSpec("victim", "sleep 1000")));
  ASSERT_OK(rt_->Start("victim"));
  pid_t pid = *rt_->Pid("victim");
  rt_.reset();
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  pid_t unrelated = fork();
  if (unrelated == 0) {
    execl("/bin/sleep", "sleep", "1000", nullptr);
    _exit(1);
  }
  auto reap = base::ScopeExit([&] {
    kill(unrelated, SIGKILL);
    waitpid(unrelated, nullptr, 0);
  });
  std::string record_path = state_dir_ + "/victim/state.json";
  auto record = base::ReadSmallFile(record_path);
  ASSERT_TRUE(record.ok());
  auto json = nlohmann::json::parse(*record);
  json["pid"] = unrelated;
  if (GetParam()) {
    auto unrelated_start = os::ProcessStartTime(unrelated);
    ASSERT_TRUE(unrelated_start.ok()) << unrelated_start.status();
    json["start_time"] = *unrelated_start;
  }
  ASSERT_TRUE(base::WriteFileAtomically(record_path, json.dump(2)).ok());

  rt_ = NewRuntime();
  auto report = rt_->Adopt();
  ASSERT_TRUE(report.ok()) << report.status();
  const SandboxInfo* victim = Find(*report, "victim");
  ASSERT_NE(victim, nullptr);
  EXPECT_EQ(victim->state, SandboxState::kStopped);
  EXPECT_TRUE(victim->last_exit->unknown);
  ASSERT_OK(rt_->Destroy("victim"));
  EXPECT_EQ(kill(unrelated, 0), 0) << "the unrelated process must survive";
}

INSTANTIATE_TEST_SUITE_P(StartTime, RecycledPidTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "SameClockTick" : "Later"; });

TEST_F(SandboxTest, OrphansAreReportedAndRemovable) {
  auto h = os::CgroupHierarchies::Detect();
  ASSERT_TRUE(h.ok());
  // A cgroup with no record, a record that cannot be read, a stray directory.
  auto ghost = os::Cgroup::Create(*h, cgroup_parent_ + "/ghost");
  ASSERT_TRUE(ghost.ok());
  ghost->Release();
  ASSERT_EQ(mkdir((state_dir_ + "/broken").c_str(), 0711), 0);
  ASSERT_TRUE(base::WriteFileAtomically(state_dir_ + "/broken/state.json", "{not json").ok());
  ASSERT_EQ(mkdir((state_dir_ + "/Not_An_Id").c_str(), 0711), 0);
  ASSERT_OK(rt_->Create(ShellSpec("real", "true")));

  rt_ = NewRuntime();
  auto report = rt_->Adopt();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->adopted.size(), 1u);
  EXPECT_EQ(report->adopted[0].id, "real");
  ASSERT_EQ(report->orphans.size(), 3u);
  std::map<std::string, std::string> reasons;
  for (const Orphan& o : report->orphans) reasons[o.id] = o.reason;
  EXPECT_THAT(reasons["ghost"], HasSubstr("cgroup without a state record"));
  EXPECT_THAT(reasons["broken"], HasSubstr("unreadable state record"));
  EXPECT_THAT(reasons["Not_An_Id"], HasSubstr("not a sandbox id"));
  EXPECT_EQ(rt_->RemoveOrphan(Orphan{"real", "", ""}).code(), StatusCode::kFailedPrecondition);
  for (const Orphan& o : report->orphans) ASSERT_OK(rt_->RemoveOrphan(o));
  auto clean = rt_->Adopt();
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(clean->orphans.empty());
  std::vector<std::string> left;
  for (const std::string& e : base::DirNames(state_dir_)) {
    if (e != ".idmap") left.push_back(e);
  }
  EXPECT_THAT(left, ::testing::ElementsAre("real"));
  for (const std::string& d : h->DirsFor(cgroup_parent_ + "/ghost")) {
    struct stat st;
    EXPECT_NE(stat(d.c_str(), &st), 0) << d;
  }
}

}  // namespace
}  // namespace warren::runtime::testing
