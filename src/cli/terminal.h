#pragma once

#include <termios.h>

#include <cstdint>
#include <optional>

#include "base/result.h"

namespace warren::cli {

struct TerminalSize {
  uint32_t cols = 80;
  uint32_t rows = 24;
};

// The window size of the terminal on `fd` (TIOCGWINSZ), nullopt when `fd` is not a terminal
// or reports 0x0 (a pty nobody sized).
std::optional<TerminalSize> SizeOf(int fd);

// Puts the terminal on `fd` in raw mode (no echo, no line editing, no signals from ^C/^Z, no
// output processing) and puts the saved settings back when destroyed or Restore()d, so every
// way out of `warren exec -it` — return, error, a signal turned into a return — leaves the
// user's terminal as it found it. Restore() is idempotent and uses only tcsetattr, so it is safe
// to call from any thread. Move-only; not thread-safe against concurrent Restore() calls.
class RawTerminal {
 public:
  // FailedPrecondition when `fd` is not a terminal; the errno error when it cannot be set.
  static Result<RawTerminal> Enter(int fd);
  RawTerminal(RawTerminal&& other) noexcept;
  RawTerminal& operator=(RawTerminal&&) = delete;
  RawTerminal(const RawTerminal&) = delete;
  ~RawTerminal() { Restore(); }

  void Restore();

 private:
  RawTerminal(int fd, const termios& saved) : fd_(fd), saved_(saved) {}
  int fd_ = -1;  // -1 once restored (or moved from)
  termios saved_{};
};

}  // namespace warren::cli
