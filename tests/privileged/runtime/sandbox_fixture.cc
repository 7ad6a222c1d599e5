#include "sandbox_fixture.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <atomic>

#include "base/small_file.h"
#include "os/cgroup.h"

namespace warren::runtime::testing {

void SandboxTest::SetUp() {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  static std::atomic<int> counter{0};
  dir_ = std::make_unique<TempDir>("warren-priv");
  layer_ = dir_->path() + "/layer";
  ASSERT_TRUE(MakeBusyboxLayer(layer_).ok());
  state_dir_ = dir_->path() + "/state";
  cgroup_parent_ = fmt::format("warren-test-{}-{}", getpid(), counter++);
  auto rt = native::NativeRuntime::Create(Options());
  ASSERT_TRUE(rt.ok()) << rt.status();
  rt_ = std::move(rt).value();
}

void SandboxTest::TearDown() {
  if (rt_ != nullptr) {
    for (const SandboxInfo& info : rt_->List()) {
      Status st = rt_->Destroy(info.id);
      EXPECT_TRUE(st.ok()) << st;
    }
    rt_.reset();
  }
  if (!cgroup_parent_.empty()) {
    auto v2 = os::CgroupHierarchies::Detect(os::CgroupVersion::kV2);
    if (v2.ok()) {
      for (const std::string& d : v2->DirsFor(cgroup_parent_)) rmdir(d.c_str());
    }
    auto h = os::CgroupHierarchies::Detect();
    if (h.ok()) {
      for (const std::string& d : h->DirsFor(cgroup_parent_)) rmdir(d.c_str());
      for (const std::string& d : h->DirsFor(cgroup_parent_)) {
        struct stat st;
        EXPECT_NE(stat(d.c_str(), &st), 0) << "cgroup left behind: " << d;
      }
    }
  }
  dir_.reset();
}

native::NativeRuntimeOptions SandboxTest::Options() const {
  native::NativeRuntimeOptions o;
  o.state_dir = state_dir_;
  o.cgroup_parent = cgroup_parent_;
  return o;
}

std::unique_ptr<native::NativeRuntime> SandboxTest::NewRuntime() const {
  auto rt = native::NativeRuntime::Create(Options());
  EXPECT_TRUE(rt.ok()) << rt.status();
  return rt.ok() ? std::move(rt).value() : nullptr;
}

SandboxSpec SandboxTest::ShellSpec(const std::string& id, const std::string& script) const {
  SandboxSpec spec;
  spec.id = id;
  spec.layers = {layer_};
  spec.writable_dir = dir_->path() + "/rw-" + id;
  spec.command = {"/bin/sh", "-c", script};
  spec.env = {"PATH=/bin", "HOME=/root"};
  spec.log_path = LogPath(id);
  return spec;
}

std::string SandboxTest::ReadLog(const std::string& id) const {
  auto text = base::ReadSmallFile(LogPath(id), 16 << 20);
  return text.ok() ? *text : std::string();
}

std::string SandboxTest::Run(const SandboxSpec& spec, std::chrono::milliseconds timeout) {
  Status st = rt_->Create(spec);
  EXPECT_TRUE(st.ok()) << st;
  if (!st.ok()) return "";
  st = rt_->Start(spec.id);
  EXPECT_TRUE(st.ok()) << st;
  if (!st.ok()) return "";
  auto exit = rt_->Wait(spec.id, timeout);
  EXPECT_TRUE(exit.ok()) << exit.status();
  return ReadLog(spec.id);
}

}  // namespace warren::runtime::testing
