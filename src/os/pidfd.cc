#include "os/pidfd.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "base/small_file.h"
#include "base/strings.h"

namespace warren::os {

Result<Pidfd> Pidfd::Open(pid_t pid) {
  // glibc 2.36 declares pidfd_open without C linkage; call the kernel directly.
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return ErrnoError(fmt::format("pidfd_open({})", pid), errno);
  return Pidfd(pid, base::UniqueFd(fd));
}

Status Pidfd::SendSignal(int sig) const {
  if (syscall(SYS_pidfd_send_signal, fd_.get(), sig, nullptr, 0) == 0 || errno == ESRCH)
    return Status::Ok();
  return ErrnoError(fmt::format("signal {} to pid {}", sig, pid_), errno);
}

bool Pidfd::HasExited() const {
  struct pollfd p = {fd_.get(), POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

Status Pidfd::WaitForExit(std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    struct pollfd p = {fd_.get(), POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (n == 1) return Status::Ok();
    if (n < 0 && errno != EINTR) return ErrnoError(fmt::format("poll pidfd of {}", pid_), errno);
    if (n == 0 && left.count() <= 0) {
      return DeadlineExceededError(
          fmt::format("pid {} still runs after {} ms", pid_, timeout.count()));
    }
  }
}

Result<std::optional<ProcessExit>> Pidfd::TryReap() const {
  siginfo_t info{};
  if (waitid(P_PIDFD, static_cast<id_t>(fd_.get()), &info, WEXITED | WNOHANG) != 0) {
    if (errno == ECHILD) {
      return FailedPreconditionError(fmt::format("pid {} is not a child of this process", pid_));
    }
    return ErrnoError(fmt::format("waitid pid {}", pid_), errno);
  }
  if (info.si_pid == 0) return std::optional<ProcessExit>();
  ProcessExit exit;
  if (info.si_code == CLD_EXITED) {
    exit.exit_code = info.si_status;
  } else {
    exit.signal = info.si_status;
  }
  return std::optional<ProcessExit>(exit);
}

Result<uint64_t> ParseStatStartTime(std::string_view stat) {
  // "pid (comm) state ppid ..." — comm is arbitrary, so fields count from the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return InvalidArgumentError("stat: no ')' after comm");
  auto fields = base::SplitNonEmpty(stat.substr(close + 1), ' ');
  // After comm: field 3 (state) is fields[0]; starttime is field 22 → fields[19].
  if (fields.size() < 20) return InvalidArgumentError("stat: too few fields");
  auto v = base::ParseUint64(fields[19]);
  if (!v) return InvalidArgumentError(fmt::format("stat: bad starttime '{}'", fields[19]));
  return *v;
}

Result<uint64_t> ProcessStartTime(pid_t pid) {
  ASSIGN_OR_RETURN(std::string stat, base::ReadSmallFile(fmt::format("/proc/{}/stat", pid)));
  return ParseStatStartTime(stat);
}

Result<std::string> BootId() {
  ASSIGN_OR_RETURN(std::string id, base::ReadSmallFile("/proc/sys/kernel/random/boot_id"));
  return std::string(base::TrimSpace(id));
}

}  // namespace warren::os
