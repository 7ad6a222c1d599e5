#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox_fixture.h"

namespace warren::runtime::testing {

// A loop block device backed by a small file of one repeated byte: the "disk" the device
// attacks aim at. It stands in for the host's root disk (same kind of node, a block device)
// so that an attack that works on a broken build overwrites a scratch file, not the machine.
// Detached on destruction (and autoclear: the kernel detaches it when the last fd closes).
// Not thread-safe.
class LoopDisk {
 public:
  static Result<std::unique_ptr<LoopDisk>> Create(const std::string& backing_file);
  ~LoopDisk();
  dev_t dev() const { return dev_; }
  const std::string& path() const { return path_; }  // /dev/loopN
  // Whether the backing file still holds only the fill byte (nothing was written through).
  bool Pristine() const;

 private:
  LoopDisk() = default;
  base::UniqueFd loop_;
  std::string backing_;
  std::string path_;
  dev_t dev_ = 0;
};

// How a sandbox runs: with or without a user namespace, cgroup v1 or v2.
struct SandboxMode {
  bool user_namespace = false;
  bool cgroup_v2 = false;
};
std::string ModeName(const SandboxMode& mode);  // "userns_v1", "rootful_v2", ...

// SandboxTest with a chosen cgroup version and the static probe binary at hand.
class AttackTest : public SandboxTest {
 protected:
  // Replaces the fixture's runtime with one on cgroup v2 (skips the test when no cgroup2 is
  // mounted). Call at the start of a test, before any sandbox exists.
  void UseCgroupV2();
  // ShellSpec in `mode`, with the probe bind-mounted at /probe.
  SandboxSpec Spec(const std::string& id, const std::string& script, const SandboxMode& mode);
  // Create + Start + Wait, the log; unlike Run, a failed Start is returned, not a test failure.
  Result<std::string> TryRun(const SandboxSpec& spec);
};

}  // namespace warren::runtime::testing
