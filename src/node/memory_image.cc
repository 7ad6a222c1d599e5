#include "node/memory_image.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "base/unique_fd.h"
#include "node/checkpoint_agent.h"

namespace warren::node {
namespace {

MemoryImagePaths Under(std::string dir) {
  MemoryImagePaths p;
  p.image = dir + "/image";
  p.logs = dir + "/logs";
  p.secret = dir + "/envd-secret";
  p.dir = std::move(dir);
  return p;
}

Status CopyFile(int from_dir, const char* name, int to_dir, const std::string& where) {
  base::UniqueFd in(openat(from_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in) return ErrnoError(fmt::format("open {}/{}", where, name), errno);
  struct stat st {};
  if (fstat(in.get(), &st) != 0) return ErrnoError(fmt::format("stat {}/{}", where, name), errno);
  base::UniqueFd out(openat(to_dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                            st.st_mode & 07777));
  if (!out) return ErrnoError(fmt::format("create a copy of {}/{}", where, name), errno);
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = read(in.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("read {}/{}", where, name), errno);
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(out.get(), buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return ErrnoError(fmt::format("copy {}/{}", where, name), errno);
      done += w;
    }
  }
  if (fchown(out.get(), st.st_uid, st.st_gid) != 0 || fchmod(out.get(), st.st_mode & 07777) != 0) {
    return ErrnoError(fmt::format("keep the owner and mode of {}/{}", where, name), errno);
  }
  return Status::Ok();
}

}  // namespace

MemoryImagePaths MemoryImagePaths::For(const std::string& root, std::string_view image_name) {
  std::string_view uid = image_name;
  if (IsCheckpointImageName(uid)) uid.remove_prefix(uid.find('/') + 1);
  return Under(fmt::format("{}/memory/{}", root, uid));
}

MemoryImagePaths MemoryImagePaths::Staging() const { return Under(dir + ".partial"); }

Status CopyFlatDir(const std::string& from, const std::string& to) {
  if (mkdir(to.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError(fmt::format("mkdir {}", to), errno);
  }
  base::UniqueFd from_fd(open(from.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!from_fd) return ErrnoError(fmt::format("open {}", from), errno);
  base::UniqueFd to_fd(open(to.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!to_fd) return ErrnoError(fmt::format("open {}", to), errno);
  // fdopendir takes the fd it is given; a duplicate keeps from_fd for openat.
  int listed = fcntl(from_fd.get(), F_DUPFD_CLOEXEC, 0);
  if (listed < 0) return ErrnoError(fmt::format("dup {}", from), errno);
  std::unique_ptr<DIR, int (*)(DIR*)> dir(fdopendir(listed), closedir);
  if (!dir) {
    close(listed);
    return ErrnoError(fmt::format("list {}", from), errno);
  }
  while (dirent* e = readdir(dir.get())) {
    if (e->d_type != DT_REG) continue;
    RETURN_IF_ERROR(CopyFile(from_fd.get(), e->d_name, to_fd.get(), from));
  }
  return Status::Ok();
}

}  // namespace warren::node
