#include "cli/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

namespace warren::cli {

std::optional<TerminalSize> SizeOf(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) return std::nullopt;
  return TerminalSize{ws.ws_col, ws.ws_row};
}

Result<RawTerminal> RawTerminal::Enter(int fd) {
  if (!::isatty(fd)) return FailedPreconditionError("not a terminal");
  termios saved{};
  if (::tcgetattr(fd, &saved) != 0) return ErrnoError("tcgetattr", errno);
  termios raw = saved;
  ::cfmakeraw(&raw);
  // TCSADRAIN: what was already written keeps the settings it was written under.
  if (::tcsetattr(fd, TCSADRAIN, &raw) != 0) return ErrnoError("tcsetattr", errno);
  return RawTerminal(fd, saved);
}

RawTerminal::RawTerminal(RawTerminal&& other) noexcept : fd_(other.fd_), saved_(other.saved_) {
  other.fd_ = -1;
}

void RawTerminal::Restore() {
  if (fd_ < 0) return;
  ::tcsetattr(fd_, TCSADRAIN, &saved_);
  fd_ = -1;
}

}  // namespace warren::cli
