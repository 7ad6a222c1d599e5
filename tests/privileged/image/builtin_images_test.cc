// The images scripts/setup.d/10-images builds, imported and started in a chroot over a real
// overlay: what the E2B tests will rely on. Skipped when the setup step has not run.

#include "image/builtin_images.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include "image/testing/oci_builder.h"
#include "mount_ns.h"

namespace warren::image {
namespace {

using ::warren::image::testing::OverlayMount;
using ::warren::image::testing::TempDir;

// Runs argv chrooted into `root` as uid/gid, returns its stdout (and the exit status).
std::pair<int, std::string> RunInRoot(const std::string& root, std::vector<std::string> argv,
                                      uid_t uid = 0, gid_t gid = 0) {
  int pipefd[2];
  CHECK(pipe(pipefd) == 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(pipefd[1], 1);
    close(pipefd[0]);
    if (chroot(root.c_str()) != 0 || chdir("/") != 0) _exit(120);
    if (gid != 0 && setgid(gid) != 0) _exit(121);
    if (uid != 0 && setuid(uid) != 0) _exit(122);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const char* env[] = {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", nullptr};
    execve(args[0], args.data(), const_cast<char* const*>(env));
    _exit(127);
  }
  close(pipefd[1]);
  std::string out;
  std::array<char, 4096> buf;
  ssize_t n;
  while ((n = read(pipefd[0], buf.data(), buf.size())) > 0) out.append(buf.data(), n);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

class BuiltinImagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::EnterPrivateMountNamespace()) GTEST_SKIP() << "needs root";
    ImageStoreOptions options;
    options.root = tmp_.Sub("store");
    store_ = std::move(ImageStore::Open(options)).value();
  }

  // Mounts the image read-write over a scratch upper dir at tmp/<name>.
  std::unique_ptr<OverlayMount> Mount(const std::string& image) {
    auto resolved = store_->Resolve(image);
    CHECK_OK(resolved.status());
    std::string dir = tmp_.Sub(image.substr(0, image.find(':')));
    for (const char* sub : {"/upper", "/work", "/merged"})
      std::filesystem::create_directories(dir + sub);
    auto m = std::make_unique<OverlayMount>(
        dir + "/merged", "lowerdir=" + resolved->OverlayLowerDirs() + ",upperdir=" + dir +
                             "/upper,workdir=" + dir + "/work");
    CHECK_MSG(m->ok(), "mount: " << strerror(m->error()));
    return m;
  }

  TempDir tmp_;
  std::unique_ptr<ImageStore> store_;
};

TEST_F(BuiltinImagesTest, BusyboxImageRuns) {
  std::string cache = DefaultImageCacheDir();
  if (!std::filesystem::exists(cache + "/busybox/oci/index.json")) {
    GTEST_SKIP() << "busybox not built (scripts/setup.d/10-images)";
  }
  auto results = ImportBuiltinImages(*store_, cache);
  ASSERT_TRUE(results.ok()) << results.status();
  auto again = ImportBuiltinImages(*store_, cache);
  ASSERT_TRUE(again.ok());
  for (const auto& r : *again) EXPECT_NE(r.action, "imported") << r.name;

  auto mount = Mount("busybox:latest");
  std::string root = tmp_.Sub("busybox/merged");
  auto [code, out] = RunInRoot(root, {"/bin/sh", "-c", "echo hello from $(id -un) in $(pwd)"});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, "hello from root in /\n");
  auto [code2, out2] =
      RunInRoot(root, {"/bin/sh", "-c", "id -u; touch /tmp/x && echo ok"}, 1000, 1000);
  EXPECT_EQ(code2, 0);
  EXPECT_EQ(out2, "1000\nok\n");
  auto config = store_->Get("busybox");
  ASSERT_TRUE(config.ok());
  EXPECT_THAT(config->config.env, ::testing::Contains(::testing::StartsWith("PATH=")));
}

TEST_F(BuiltinImagesTest, BaseImageHasWhatTheE2bTestsNeed) {
  std::string cache = DefaultImageCacheDir();
  if (!std::filesystem::exists(cache + "/base/oci/index.json")) {
    GTEST_SKIP() << "base not built (scripts/setup.d/10-images)";
  }
  auto results = ImportBuiltinImages(*store_, cache);
  ASSERT_TRUE(results.ok()) << results.status();
  auto mount = Mount("base:latest");
  std::string root = tmp_.Sub("base/merged");
  auto [code, out] = RunInRoot(
      root, {"/bin/bash", "-c",
             "for t in bash cat sleep touch ln kill curl python3 python git sudo; do "
             "command -v $t >/dev/null || echo missing $t; done; "
             "python -c 'print(6*7)'; id user; umask; test -u /usr/bin/sudo && echo setuid"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "42\nuid=1000(user) gid=1000(user) groups=1000(user)\n0022\nsetuid\n");
  // sudo as user: no password, and no "unable to resolve host" noise on stderr whatever the
  // sandbox's hostname (the runtime sets it; the image cannot know it). The image's /dev is
  // empty (the runtime mounts one), so nothing here may use /dev/null.
  ASSERT_EQ(::mount("proc", (root + "/proc").c_str(), "proc", 0, nullptr), 0) << strerror(errno);
  auto [sudo_code, sudo_out] =
      RunInRoot(root,
                {"/bin/sh", "-c",
                 "sudo -n id -u 2>&1; getent hosts \"$(cat /proc/sys/kernel/hostname)\" | "
                 "grep -q . && echo resolves"},
                1000, 1000);
  umount2((root + "/proc").c_str(), MNT_DETACH);
  EXPECT_EQ(sudo_code, 0);
  EXPECT_EQ(sudo_out, "0\nresolves\n");

  struct stat st;
  ASSERT_EQ(stat((root + "/etc/sudoers.d/user").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0440u);
  ASSERT_EQ(stat((root + "/home/user").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_FALSE(std::filesystem::exists(root + "/var/lib/apt/lists/lock"));
}

}  // namespace
}  // namespace warren::image
