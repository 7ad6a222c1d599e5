#include "os/inotify.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace warren::os {

Result<Inotify> Inotify::Create() {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return ErrnoError("inotify_init1", errno);
  return Inotify(base::UniqueFd(fd));
}

Result<int> Inotify::AddWatch(const std::string& path, uint32_t mask) {
  int wd = inotify_add_watch(fd_.get(), path.c_str(), mask);
  if (wd < 0) return ErrnoError(fmt::format("watch '{}'", path), errno);
  return wd;
}

void Inotify::RemoveWatch(int wd) { inotify_rm_watch(fd_.get(), wd); }

Result<std::vector<InotifyEvent>> Inotify::ReadEvents() {
  std::vector<InotifyEvent> out;
  alignas(inotify_event) char buf[64 * 1024];
  for (;;) {
    ssize_t n = read(fd_.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return out;
      return ErrnoError("read inotify", errno);
    }
    if (n == 0) return out;
    auto events = ParseInotifyBuffer(buf, static_cast<size_t>(n));
    for (auto& e : events) out.push_back(std::move(e));
  }
}

std::vector<InotifyEvent> ParseInotifyBuffer(const char* data, size_t len) {
  std::vector<InotifyEvent> out;
  size_t off = 0;
  while (len - off >= sizeof(inotify_event)) {
    inotify_event header;
    std::memcpy(&header, data + off, sizeof header);
    size_t total = sizeof header + header.len;
    if (total > len - off) break;
    InotifyEvent e;
    e.wd = header.wd;
    e.mask = header.mask;
    e.cookie = header.cookie;
    const char* name = data + off + sizeof header;
    e.name.assign(name, strnlen(name, header.len));
    out.push_back(std::move(e));
    off += total;
  }
  return out;
}

}  // namespace warren::os
