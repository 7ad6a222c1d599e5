#include "envd/command_supervisor.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "base/log.h"
#include "envd/process_messages.h"
#include "os/spawn_reaper.h"

namespace warren::envd {

Status CommandSupervisor::Start(os::SpawnOptions options) {
  options.stdin_pipe = false;
  options.new_session = true;
  auto child = os::ChildReaper::Get().Spawn(options, [state = state_](int status) {
    // Logged before the exit is published: whoever waits for it may end the process at once
    // (--exit-with-command), and the loggers are static objects that go with it; a log line
    // after the notify crashed a test at its exit.
    base::Logger("envd")->info("template command exited status=\"{}\"",
                               ProcessExitFromWaitStatus(status).status);
    {
      std::lock_guard lock(state->mu);
      state->running = false;
      state->wait_status = status;
    }
    state->exited_cv.notify_all();
  });
  if (!child.ok()) return child.status();
  {
    std::lock_guard lock(state_->mu);
    state_->pid = child->pid;
    // A command that ends at once may have been reaped (and its exit recorded) already.
    state_->running = !state_->wait_status.has_value();
    state_->output_open = true;
  }
  base::Logger("envd")->info("template command started pid={}", child->pid);
  // Both pipes go into the one log, in the order the bytes arrive. The log is only touched
  // before output_open turns false, which is what its owner waits for.
  std::thread(
      [state = state_, &log = log_](base::UniqueFd out, base::UniqueFd err) {
        const int err_fd = err.get();
        std::vector<pollfd> fds = {{out.get(), POLLIN, 0}, {err_fd, POLLIN, 0}};
        char buf[16 * 1024];
        while (!fds.empty()) {
          if (poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR) continue;
            break;
          }
          for (size_t i = 0; i < fds.size();) {
            if (fds[i].revents == 0) {
              ++i;
              continue;
            }
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
              const auto stream =
                  fds[i].fd == err_fd ? base::LogStream::kStderr : base::LogStream::kStdout;
              log.Append(std::string_view(buf, static_cast<size_t>(n)), stream);
              ++i;
            } else if (n < 0 && errno == EINTR) {
              ++i;
            } else {
              fds.erase(fds.begin() + static_cast<long>(i));
            }
          }
        }
        {
          std::lock_guard lock(state->mu);
          state->output_open = false;
        }
        state->exited_cv.notify_all();
      },
      std::move(child->stdout_r), std::move(child->stderr_r))
      .detach();
  return Status::Ok();
}

void CommandSupervisor::Signal(int signal) {
  std::lock_guard lock(state_->mu);
  if (!state_->running) return;
  if (kill(-state_->pid, signal) != 0) kill(state_->pid, signal);
}

bool CommandSupervisor::WaitExited(std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mu);
  return state_->exited_cv.wait_for(lock, timeout, [&] { return !state_->running; });
}

bool CommandSupervisor::WaitOutputDrained(std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mu);
  return state_->exited_cv.wait_for(lock, timeout, [&] { return !state_->output_open; });
}

std::optional<int> CommandSupervisor::wait_status() const {
  std::lock_guard lock(state_->mu);
  return state_->wait_status;
}

}  // namespace warren::envd
