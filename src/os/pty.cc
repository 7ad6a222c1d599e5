#include "os/pty.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace warren::os {

Result<Pty> OpenPty(uint16_t cols, uint16_t rows, bool nonblocking_master) {
  int flags = O_RDWR | O_NOCTTY | O_CLOEXEC | (nonblocking_master ? O_NONBLOCK : 0);
  Pty pty;
  pty.master.reset(posix_openpt(flags));
  if (!pty.master) return ErrnoError("posix_openpt", errno);
  if (grantpt(pty.master.get()) != 0) return ErrnoError("grantpt", errno);
  if (unlockpt(pty.master.get()) != 0) return ErrnoError("unlockpt", errno);
  // TIOCGPTPEER opens the slave through the master, so no path lookup in /dev/pts can race.
  int slave = ioctl(pty.master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) {
    char name[128];
    if (ptsname_r(pty.master.get(), name, sizeof name) != 0) return ErrnoError("ptsname", errno);
    slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) return ErrnoError("open pty slave", errno);
  }
  pty.slave.reset(slave);
  RETURN_IF_ERROR(SetPtySize(pty.master.get(), cols, rows));
  return pty;
}

Status SetPtySize(int fd, uint16_t cols, uint16_t rows) {
  winsize ws{};
  ws.ws_col = cols;
  ws.ws_row = rows;
  if (ioctl(fd, TIOCSWINSZ, &ws) != 0) return ErrnoError("TIOCSWINSZ", errno);
  return Status::Ok();
}

}  // namespace warren::os
