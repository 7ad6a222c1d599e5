#include "base/unique_fd.h"

#include <unistd.h>

namespace warren::base {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) {
    // close() must not be retried on EINTR on Linux: the descriptor is already gone.
    ::close(fd_);
  }
  fd_ = fd;
}

}  // namespace warren::base
