#include "security_fixture.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>

#include "base/small_file.h"
#include "os/cgroup.h"

namespace warren::runtime::testing {
namespace {

constexpr size_t kDiskBytes = 64 * 1024;
constexpr char kFill = 'D';

}  // namespace

Result<std::unique_ptr<LoopDisk>> LoopDisk::Create(const std::string& backing_file) {
  RETURN_IF_ERROR(base::WriteFileAtomically(backing_file, std::string(kDiskBytes, kFill)));
  base::UniqueFd backing(open(backing_file.c_str(), O_RDWR | O_CLOEXEC));
  if (!backing) return ErrnoError("open " + backing_file, errno);
  base::UniqueFd control(open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) return ErrnoError("open /dev/loop-control", errno);
  // Other processes take loop devices too: a free one may be gone by the time we configure it.
  for (int attempt = 0; attempt < 20; ++attempt) {
    int index = ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (index < 0) return ErrnoError("LOOP_CTL_GET_FREE", errno);
    std::string path = fmt::format("/dev/loop{}", index);
    base::UniqueFd loop(open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) return ErrnoError("open " + path, errno);
    loop_config config;
    memset(&config, 0, sizeof config);
    config.fd = static_cast<uint32_t>(backing.get());
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (ioctl(loop.get(), LOOP_CONFIGURE, &config) != 0) {
      if (errno == EBUSY) continue;
      return ErrnoError("LOOP_CONFIGURE " + path, errno);
    }
    struct stat st;
    if (fstat(loop.get(), &st) != 0) return ErrnoError("fstat " + path, errno);
    auto disk = std::unique_ptr<LoopDisk>(new LoopDisk);
    disk->loop_ = std::move(loop);
    disk->backing_ = backing_file;
    disk->path_ = path;
    disk->dev_ = st.st_rdev;
    return disk;
  }
  return UnavailableError("no free loop device");
}

LoopDisk::~LoopDisk() {
  if (loop_) ioctl(loop_.get(), LOOP_CLR_FD, 0);
}

bool LoopDisk::Pristine() const {
  auto text = base::ReadSmallFile(backing_, 2 * kDiskBytes);
  return text.ok() && *text == std::string(kDiskBytes, kFill);
}

std::string ModeName(const SandboxMode& mode) {
  return fmt::format("{}_{}", mode.user_namespace ? "userns" : "rootful",
                     mode.cgroup_v2 ? "v2" : "v1");
}

void AttackTest::UseCgroupV2() {
  auto v2 = os::CgroupHierarchies::Detect(os::CgroupVersion::kV2);
  if (!v2.ok()) GTEST_SKIP() << "no cgroup2 mount: " << v2.status();
  rt_.reset();
  native::NativeRuntimeOptions o = Options();
  o.cgroup_version = os::CgroupVersion::kV2;
  auto rt = native::NativeRuntime::Create(o);
  ASSERT_TRUE(rt.ok()) << rt.status();
  rt_ = std::move(rt).value();
}

SandboxSpec AttackTest::Spec(const std::string& id, const std::string& script,
                             const SandboxMode& mode) {
  SandboxSpec spec = ShellSpec(id, script);
  spec.user_namespace = mode.user_namespace;
  spec.mounts.push_back(BindMount{WARREN_SANDBOX_PROBE, "/probe", true});
  return spec;
}

Result<std::string> AttackTest::TryRun(const SandboxSpec& spec) {
  RETURN_IF_ERROR(rt_->Create(spec));
  RETURN_IF_ERROR(rt_->Start(spec.id));
  ASSIGN_OR_RETURN(ExitStatus exit, rt_->Wait(spec.id, std::chrono::seconds(30)));
  (void)exit;
  return ReadLog(spec.id);
}

}  // namespace warren::runtime::testing
