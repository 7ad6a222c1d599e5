#include "os/freezer.h"

#include <fmt/format.h>

#include <thread>

#include "base/small_file.h"
#include "base/strings.h"

namespace warren::os {
namespace {

using Clock = std::chrono::steady_clock;

template <typename Probe>
Status PollUntil(Probe probe, std::chrono::milliseconds timeout, const std::string& what) {
  auto deadline = Clock::now() + timeout;
  auto nap = std::chrono::microseconds(50);
  for (;;) {
    ASSIGN_OR_RETURN(bool done, probe());
    if (done) return Status::Ok();
    if (Clock::now() >= deadline) {
      return DeadlineExceededError(
          fmt::format("{} not reached after {} ms", what, timeout.count()));
    }
    std::this_thread::sleep_for(nap);
    nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::microseconds(1000));
  }
}

Result<std::string> ReadV1State(const std::string& dir) {
  ASSIGN_OR_RETURN(std::string s, base::ReadSmallFile(dir + "/freezer.state"));
  return std::string(base::TrimSpace(s));
}

}  // namespace

Result<bool> IsFrozenV1(const std::string& freezer_dir) {
  ASSIGN_OR_RETURN(std::string state, ReadV1State(freezer_dir));
  return state == "FROZEN";
}

Result<bool> IsFrozenV2(const std::string& cgroup_dir) {
  ASSIGN_OR_RETURN(std::string events, base::ReadSmallFile(cgroup_dir + "/cgroup.events"));
  for (std::string_view line : base::Split(events, '\n')) {
    if (base::TrimSpace(line) == "frozen 1") return true;
  }
  return false;
}

Status SetFrozenV1(const std::string& freezer_dir, bool frozen, std::chrono::milliseconds timeout) {
  const char* want = frozen ? "FROZEN" : "THAWED";
  RETURN_IF_ERROR(base::WriteKernelFile(freezer_dir + "/freezer.state", want));
  return PollUntil(
      [&]() -> Result<bool> {
        ASSIGN_OR_RETURN(std::string state, ReadV1State(freezer_dir));
        if (state == want) return true;
        // A freeze can stall in FREEZING when a task will not stop (e.g. in an uninterruptible
        // sleep); writing FROZEN again retries it, as runc does.
        if (frozen && state == "FREEZING") {
          RETURN_IF_ERROR(base::WriteKernelFile(freezer_dir + "/freezer.state", want));
        }
        return false;
      },
      timeout, fmt::format("{} in {}", want, freezer_dir));
}

Status SetFrozenV2(const std::string& cgroup_dir, bool frozen, std::chrono::milliseconds timeout) {
  RETURN_IF_ERROR(base::WriteKernelFile(cgroup_dir + "/cgroup.freeze", frozen ? "1" : "0"));
  return PollUntil(
      [&]() -> Result<bool> {
        ASSIGN_OR_RETURN(bool is_frozen, IsFrozenV2(cgroup_dir));
        return is_frozen == frozen;
      },
      timeout, fmt::format("{} in {}", frozen ? "frozen" : "thawed", cgroup_dir));
}

}  // namespace warren::os
