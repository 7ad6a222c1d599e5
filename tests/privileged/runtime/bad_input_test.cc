// Bad specs get a clear error that names what is wrong, with a code a controller can act on,
// and leave nothing behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "base/dir_names.h"
#include "base/small_file.h"
#include "census.h"
#include "os/cgroup.h"
#include "sandbox_fixture.h"

namespace warren::runtime::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class BadInputTest : public SandboxTest {
 protected:
  void ExpectNothingLeftFor(const SandboxSpec& spec) {
    struct stat st;
    EXPECT_NE(stat((state_dir_ + "/" + spec.id).c_str(), &st), 0) << "state dir left";
    EXPECT_NE(stat(spec.writable_dir.c_str(), &st), 0) << "writable dir left";
    auto h = os::CgroupHierarchies::Detect();
    ASSERT_TRUE(h.ok());
    for (const std::string& d : h->DirsFor(cgroup_parent_ + "/" + spec.id)) {
      EXPECT_NE(stat(d.c_str(), &st), 0) << "cgroup left: " << d;
    }
    EXPECT_EQ(rt_->Inspect(spec.id).status().code(), StatusCode::kNotFound);
  }
};

TEST_F(BadInputTest, MissingLayerDirIsNotFoundNamingIt) {
  SandboxSpec spec = ShellSpec("nolayer", "true");
  spec.layers.push_back(dir_->path() + "/no-such-layer");
  Status st = rt_->Create(spec);
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st;
  EXPECT_THAT(st.message(), HasSubstr("no-such-layer"));
  EXPECT_THAT(st.message(), HasSubstr("nolayer"));
  ExpectNothingLeftFor(spec);
}

TEST_F(BadInputTest, LayerThatIsAFileIsFailedPrecondition) {
  SandboxSpec spec = ShellSpec("filelayer", "true");
  spec.layers.push_back(layer_ + "/bin/busybox");
  Status st = rt_->Create(spec);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(st.message(), HasSubstr("not a directory"));
  ExpectNothingLeftFor(spec);
}

TEST_F(BadInputTest, ImpossibleLimitsAreInvalidArgument) {
  struct Case {
    Resources r;
    const char* says;
  };
  for (const Case& c : {Case{{0, 1000, 0}, "memory limit 1000"}, Case{{5, 0, 0}, "cpu limit 5m"},
                        Case{{0, 0, 1}, "pids limit 1"}, Case{{-1, 0, 0}, "cpu limit -1m"},
                        Case{{0, -5, 0}, "memory limit -5"}}) {
    SandboxSpec spec = ShellSpec("limits", "true");
    spec.resources = c.r;
    Status st = rt_->Create(spec);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    EXPECT_THAT(st.message(), HasSubstr(c.says));
    ExpectNothingLeftFor(spec);
  }
}

TEST_F(BadInputTest, MalformedSpecsAreInvalidArgument) {
  auto expect_invalid = [&](SandboxSpec spec, const char* says) {
    Status st = rt_->Create(spec);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    EXPECT_THAT(st.message(), HasSubstr(says));
  };
  SandboxSpec s = ShellSpec("ok", "true");
  s.id = "Bad_Id";
  expect_invalid(s, "sandbox id 'Bad_Id'");
  s = ShellSpec("rel", "true");
  s.layers = {"relative/layer"};
  expect_invalid(s, "image layer 'relative/layer' must be an absolute path");
  s = ShellSpec("env", "true");
  s.env.push_back("NOEQUALS");
  expect_invalid(s, "environment entry 'NOEQUALS'");
  s = ShellSpec("dots", "true");
  s.mounts.push_back(BindMount{layer_, "/a/../../etc", true});
  expect_invalid(s, "must not contain '..'");
  s = ShellSpec("empty", "true");
  s.command.clear();
  expect_invalid(s, "empty command");
  s = ShellSpec("uns", "true");
  s.user_namespace = true;
  s.user.uid = 70000;
  expect_invalid(s, "outside the user namespace");
  s = ShellSpec("rl", "true");
  s.rlimits.push_back(os::Rlimit{RLIMIT_NOFILE, 10, 5});
  expect_invalid(s, "soft limit 10 exceeds hard limit 5");
  EXPECT_THAT(base::DirNames(state_dir_), ::testing::IsEmpty());
}

TEST_F(BadInputTest, MissingCommandIsFailedPreconditionNamingThePath) {
  SandboxSpec spec = ShellSpec("nocmd", "");
  spec.command = {"/usr/bin/python3", "-c", "print(1)"};
  ASSERT_OK(rt_->Create(spec));
  Status st = rt_->Start("nocmd");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(st.message(), HasSubstr("'/usr/bin/python3' not found"));
  // Nothing runs; the sandbox is still there to be fixed or destroyed.
  auto info = rt_->Inspect("nocmd");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state, SandboxState::kCreated);
  EXPECT_EQ(info->pid, 0);
  auto stats = rt_->Stats("nocmd");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->pids, 0u);

  spec = ShellSpec("nocmd2", "");
  spec.command = {"python3"};
  ASSERT_OK(rt_->Create(spec));
  st = rt_->Start("nocmd2");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(st.message(), HasSubstr("'python3' not found in the sandbox (tried /bin/python3)"));

  ASSERT_OK(rt_->Destroy("nocmd"));
  ASSERT_OK(rt_->Destroy("nocmd2"));
  ExpectNothingLeftFor(spec);
}

TEST_F(BadInputTest, UnexecutableCommandAndMissingWorkingDirNameTheProblem) {
  SandboxSpec spec = ShellSpec("noexec", "");
  spec.command = {"/etc/passwd"};
  ASSERT_OK(rt_->Create(spec));
  Status st = rt_->Start("noexec");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(st.message(), HasSubstr("cannot execute '/etc/passwd': Permission denied"));

  spec = ShellSpec("nowd", "true");
  spec.working_dir = "/no/such/dir";
  ASSERT_OK(rt_->Create(spec));
  st = rt_->Start("nowd");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(st.message(), HasSubstr("working directory '/no/such/dir'"));
}

TEST_F(BadInputTest, MissingBindSourceIsNotFound) {
  SandboxSpec spec = ShellSpec("nobind", "true");
  spec.mounts.push_back(BindMount{"/no/such/warren-envd", "/usr/bin/warren-envd", true});
  Status st = rt_->Create(spec);
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st;
  EXPECT_THAT(st.message(), HasSubstr("/no/such/warren-envd"));
  ExpectNothingLeftFor(spec);
}

TEST_F(BadInputTest, DuplicateIdIsAlreadyExists) {
  SandboxSpec spec = ShellSpec("dup", "true");
  ASSERT_OK(rt_->Create(spec));
  EXPECT_EQ(rt_->Create(spec).code(), StatusCode::kAlreadyExists);
}

TEST_F(BadInputTest, FailureHalfwayThroughCreateUndoesEveryStep) {
  // A cgroup of that name already exists (an orphan): Create fails after it made the state dir
  // and the writable layer, and must undo both.
  auto h = os::CgroupHierarchies::Detect();
  ASSERT_TRUE(h.ok());
  SandboxSpec spec = ShellSpec("halfway", "true");
  auto blocker = os::Cgroup::Create(*h, cgroup_parent_ + "/halfway");
  ASSERT_TRUE(blocker.ok());
  Status st = rt_->Create(spec);
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st;
  EXPECT_THAT(st.message(), HasSubstr("cgroup"));
  struct stat sst;
  EXPECT_NE(stat((state_dir_ + "/halfway").c_str(), &sst), 0);
  EXPECT_NE(stat(spec.writable_dir.c_str(), &sst), 0);
  for (const std::string& d : h->DirsFor(cgroup_parent_ + "/halfway")) {
    EXPECT_EQ(stat(d.c_str(), &sst), 0) << "someone else's cgroup must stay: " << d;
  }
  ASSERT_OK(blocker->Remove(5s));
  // And with the obstacle gone the same spec works.
  ASSERT_OK(rt_->Create(spec));
}

TEST_F(BadInputTest, ExistingWritableLayerIsKeptOnFailureAndReusedOnSuccess) {
  SandboxSpec spec = ShellSpec("keep", "cat /root/saved");
  ASSERT_EQ(mkdir(spec.writable_dir.c_str(), 0711), 0);
  ASSERT_EQ(mkdir((spec.writable_dir + "/upper").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((spec.writable_dir + "/upper/root").c_str(), 0700), 0);
  ASSERT_TRUE(base::WriteFileAtomically(spec.writable_dir + "/upper/root/saved", "saved\n").ok());
  SandboxSpec bad = spec;
  bad.resources.memory_bytes = 1;
  EXPECT_EQ(rt_->Create(bad).code(), StatusCode::kInvalidArgument);
  struct stat st;
  EXPECT_EQ(stat((spec.writable_dir + "/upper/root/saved").c_str(), &st), 0)
      << "a failed Create must not delete a writable layer it did not make";
  EXPECT_THAT(Run(spec), HasSubstr("saved\n"));
}

}  // namespace
}  // namespace warren::runtime::testing
