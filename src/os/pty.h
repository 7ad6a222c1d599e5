#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::os {

// A pseudo-terminal pair. The master stays with the agent (it reads the terminal's output and
// writes its input); the slave becomes the child's controlling terminal and is closed in the
// parent once the child has it. Move-only; not thread-safe.
struct Pty {
  base::UniqueFd master;
  base::UniqueFd slave;
};

// Opens a new pty (posix_openpt) of the given size. Both ends are close-on-exec; the master is
// non-blocking when `nonblocking_master`.
Result<Pty> OpenPty(uint16_t cols, uint16_t rows, bool nonblocking_master = false);

// TIOCSWINSZ on either end; the foreground process group gets SIGWINCH from the kernel.
Status SetPtySize(int fd, uint16_t cols, uint16_t rows);

}  // namespace warren::os
