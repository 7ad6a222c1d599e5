// Volume sources are resolved at every Start without following symlinks the sandbox could have
// planted: a sandbox that swaps its subPath (or a directory on its volume's path) for a
// symlink to / or to another sandbox's files gets a Start that fails and says why, never a
// bind of the symlink's target — after a restart and after another runtime adopted it.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/small_file.h"
#include "security_fixture.h"

namespace warren::runtime::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class VolumeTest : public AttackTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    AttackTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    volume_ = dir_->path() + "/volume";
    ASSERT_EQ(mkdir(volume_.c_str(), 0777), 0);
    ASSERT_EQ(chmod(volume_.c_str(), 0777), 0);
    // Another sandbox's files, which this one must never see.
    other_ = dir_->path() + "/other-sandbox";
    ASSERT_EQ(mkdir(other_.c_str(), 0755), 0);
    ASSERT_TRUE(base::WriteFileAtomically(other_ + "/secret", "SECRET-OF-ANOTHER-SANDBOX\n").ok());
  }
  SandboxMode Mode() const { return SandboxMode{GetParam(), false}; }
  std::string Id(const std::string& what) const {
    return what + (GetParam() ? "-userns" : "-rootful");
  }
  // The volume whole at /whole (the sandbox may write anything in it) and `sub_path` of it at
  // /sub. The script plants `link` → `target` on the first run and lists /sub on later ones.
  SandboxSpec PlantingSpec(const std::string& id, const std::string& sub_path,
                           const std::string& link, const std::string& target) {
    std::string script = fmt::format(
        "if [ -L /whole/{0} ]; then echo later-run; ls /sub; cat /sub/secret; "
        "else echo first-run; ls /sub; rm -rf /whole/{0}; ln -s {1} /whole/{0}; "
        "ls -l /whole/{0}; fi",
        link, target);
    SandboxSpec spec = Spec(id, script, Mode());
    spec.mounts.push_back(BindMount{volume_, "/whole", false});
    spec.mounts.push_back(BindMount{volume_, "/sub", false, sub_path});
    return spec;
  }
  // Runs the planting sandbox once, then checks that Start refuses the planted symlink.
  void ExpectRestartRefused(const std::string& id, const std::string& sub_path,
                            const std::string& link, const std::string& target) {
    std::string out = Run(PlantingSpec(id, sub_path, link, target));
    ASSERT_THAT(out, HasSubstr("first-run")) << out;
    struct stat st;
    ASSERT_EQ(lstat((volume_ + "/" + link).c_str(), &st), 0);
    ASSERT_TRUE(S_ISLNK(st.st_mode)) << "the sandbox did not plant its symlink: " << out;

    Status restart = rt_->Start(id);
    if (restart.ok()) {
      // Binding the real directory would be acceptable; the symlink's target never is.
      auto exit = rt_->Wait(id, std::chrono::seconds(30));
      ASSERT_TRUE(exit.ok()) << exit.status();
      std::string later = ReadLog(id);
      EXPECT_THAT(later, Not(HasSubstr("SECRET-OF-ANOTHER-SANDBOX")));
      EXPECT_THAT(later, Not(HasSubstr("vmlinuz")));
      FAIL() << "Start followed or ignored the planted symlink:\n" << later;
    }
    EXPECT_EQ(restart.code(), StatusCode::kFailedPrecondition) << restart;
    EXPECT_THAT(restart.message(), HasSubstr("symlink")) << restart;
    EXPECT_THAT(restart.message(), HasSubstr(volume_)) << restart;
    EXPECT_THAT(ReadLog(id), Not(HasSubstr("SECRET-OF-ANOTHER-SANDBOX")));
  }
  std::string volume_;
  std::string other_;
};

TEST_P(VolumeTest, SubPathSwappedForASymlinkToRootIsRefusedOnRestart) {
  ExpectRestartRefused(Id("root"), "data", "data", "/");
}

TEST_P(VolumeTest, SubPathSwappedForASymlinkToAnotherSandboxIsRefusedOnRestart) {
  ExpectRestartRefused(Id("other"), "data", "data", other_);
}

TEST_P(VolumeTest, ADirectoryOnTheSubPathSwappedForASymlinkIsRefused) {
  ExpectRestartRefused(Id("mid"), "a/b", "a", other_);
}

TEST_P(VolumeTest, ASourceDirectorySwappedForASymlinkIsRefused) {
  // The bind's own source (a hostPath below a volume the sandbox also has) is checked too.
  std::string id = Id("src");
  ASSERT_EQ(mkdir((volume_ + "/inner").c_str(), 0777), 0);
  std::string script =
      "if [ -L /whole/inner ]; then echo later-run; cat /in/secret; "
      "else echo first-run; rm -rf /whole/inner; ln -s " +
      other_ + " /whole/inner; fi";
  SandboxSpec spec = Spec(id, script, Mode());
  spec.mounts.push_back(BindMount{volume_, "/whole", false});
  spec.mounts.push_back(BindMount{volume_ + "/inner", "/in", false});
  ASSERT_THAT(Run(spec), HasSubstr("first-run"));
  Status restart = rt_->Start(id);
  EXPECT_EQ(restart.code(), StatusCode::kFailedPrecondition) << restart;
  EXPECT_THAT(restart.message(), HasSubstr("symlink"));
  if (restart.ok()) (void)rt_->Wait(id, std::chrono::seconds(30));
  EXPECT_THAT(ReadLog(id), Not(HasSubstr("SECRET-OF-ANOTHER-SANDBOX")));
}

TEST_P(VolumeTest, AnAdoptingRuntimeRefusesThePlantedSymlinkToo) {
  std::string id = Id("adopt");
  std::string out = Run(PlantingSpec(id, "data", "data", other_));
  ASSERT_THAT(out, HasSubstr("first-run"));
  rt_ = NewRuntime();
  ASSERT_NE(rt_, nullptr);
  auto report = rt_->Adopt();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->adopted.size(), 1u);
  Status restart = rt_->Start(id);
  EXPECT_EQ(restart.code(), StatusCode::kFailedPrecondition) << restart;
  EXPECT_THAT(restart.message(), HasSubstr("symlink"));
  if (restart.ok()) (void)rt_->Wait(id, std::chrono::seconds(30));
  EXPECT_THAT(ReadLog(id), Not(HasSubstr("SECRET-OF-ANOTHER-SANDBOX")));
}

TEST_P(VolumeTest, AMissingSubPathIsMadeAndKeptAcrossRestarts) {
  std::string id = Id("keep");
  SandboxSpec spec = Spec(
      id, "cat /sub/note 2>/dev/null || echo none; echo kept > /sub/note; ln -sf / /sub/inside",
      Mode());
  spec.mounts.push_back(BindMount{volume_, "/sub", false, "x/y"});
  EXPECT_THAT(Run(spec), HasSubstr("none"));
  // Made as the volume's directory is: its mode, its owner.
  struct stat vol, made;
  ASSERT_EQ(stat(volume_.c_str(), &vol), 0);
  ASSERT_EQ(lstat((volume_ + "/x/y").c_str(), &made), 0);
  EXPECT_TRUE(S_ISDIR(made.st_mode));
  EXPECT_EQ(made.st_mode & 07777, vol.st_mode & 07777);
  EXPECT_EQ(made.st_uid, vol.st_uid);
  // A symlink inside the subPath is the sandbox's own content, not on the path: restarts work.
  ASSERT_TRUE(rt_->Start(id).ok());
  ASSERT_TRUE(rt_->Wait(id, std::chrono::seconds(30)).ok());
  EXPECT_THAT(ReadLog(id), HasSubstr("kept"));
}

INSTANTIATE_TEST_SUITE_P(Modes, VolumeTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "userns" : "rootful"; });

}  // namespace
}  // namespace warren::runtime::testing
