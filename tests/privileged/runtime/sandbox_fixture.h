#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/testing/status_macros.h"
#include "runtime/native/native_runtime.h"
#include "runtime/testing/busybox_rootfs.h"

namespace warren::runtime::testing {

// Each test gets its own busybox image layer, state dir, writable dirs and cgroup parent
// ("warren-test-<pid>-<n>"), so tests can run in parallel and never touch a real node's
// sandboxes. Skips unless root.
class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  native::NativeRuntimeOptions Options() const;
  std::unique_ptr<native::NativeRuntime> NewRuntime() const;

  // A spec running `script` with busybox sh as pid 1, logging to log_path(id).
  SandboxSpec ShellSpec(const std::string& id, const std::string& script) const;
  std::string LogPath(const std::string& id) const { return dir_->path() + "/" + id + ".log"; }
  std::string ReadLog(const std::string& id) const;

  // Create + Start + Wait (up to `timeout`) and the log. Fails the test on error.
  std::string Run(const SandboxSpec& spec,
                  std::chrono::milliseconds timeout = std::chrono::seconds(30));

  std::unique_ptr<TempDir> dir_;
  std::string layer_;
  std::string state_dir_;
  std::string cgroup_parent_;
  std::unique_ptr<native::NativeRuntime> rt_;
};

}  // namespace warren::runtime::testing
