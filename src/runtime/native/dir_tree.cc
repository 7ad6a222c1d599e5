#include "runtime/native/dir_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <vector>

#include "base/unique_fd.h"

namespace warren::runtime::native {
namespace {

constexpr size_t kMaxDepth = 64;

// Owns a DIR* over an fd.
struct Dir {
  DIR* d = nullptr;
  explicit Dir(int fd) : d(fdopendir(fd)) {
    if (d == nullptr) close(fd);
  }
  ~Dir() {
    if (d != nullptr) closedir(d);
  }
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;
  int fd() const { return dirfd(d); }
};

int OpenDirAt(int parent, const char* name) {
  return openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// Empties the directory `top_fd` (not removing it). Returns true when a pass removed
// everything; false when subtrees were moved up to the top and another pass is needed.
Result<bool> EmptyOnce(int top_fd, const std::string& top_path, uint64_t* flatten_counter) {
  std::vector<std::unique_ptr<Dir>> stack;
  int dup_fd = fcntl(top_fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return ErrnoError("dup", errno);
  stack.push_back(std::make_unique<Dir>(dup_fd));
  if (stack.back()->d == nullptr) return ErrnoError(fmt::format("opendir {}", top_path), errno);
  rewinddir(stack.back()->d);
  bool complete = true;
  while (!stack.empty()) {
    Dir& cur = *stack.back();
    errno = 0;
    dirent* e = readdir(cur.d);
    if (e == nullptr) {
      if (errno != 0) return ErrnoError(fmt::format("readdir under {}", top_path), errno);
      // Done with this directory: remove it from its parent (the top stays).
      stack.pop_back();
      if (!stack.empty()) {
        // We do not know our own name here; the parent removes empty dirs on its next
        // readdir pass (see the unlinkat(AT_REMOVEDIR) below), so rewind it.
        rewinddir(stack.back()->d);
      }
      continue;
    }
    const char* name = e->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st;
      if (fstatat(cur.fd(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;
        return ErrnoError(fmt::format("stat {} under {}", name, top_path), errno);
      }
      is_dir = S_ISDIR(st.st_mode);
    }
    if (!is_dir) {
      if (unlinkat(cur.fd(), name, 0) != 0 && errno != ENOENT) {
        return ErrnoError(fmt::format("unlink {} under {}", name, top_path), errno);
      }
      continue;
    }
    if (unlinkat(cur.fd(), name, AT_REMOVEDIR) == 0 || errno == ENOENT) continue;
    if (errno != ENOTEMPTY && errno != EEXIST) {
      return ErrnoError(fmt::format("rmdir {} under {}", name, top_path), errno);
    }
    if (stack.size() >= kMaxDepth) {
      // Too deep to hold open: move this subtree to the top and deal with it in another pass.
      std::string flat = fmt::format(".warren-flatten-{}", (*flatten_counter)++);
      if (renameat(cur.fd(), name, top_fd, flat.c_str()) != 0) {
        return ErrnoError(fmt::format("move deep dir {} under {}", name, top_path), errno);
      }
      complete = false;
      continue;
    }
    int child = OpenDirAt(cur.fd(), name);
    if (child < 0) {
      if (errno == ENOENT) continue;
      return ErrnoError(fmt::format("open dir {} under {}", name, top_path), errno);
    }
    // Writable layers of sandboxes may hold dirs without write permission for the owner;
    // we are root, so permissions do not stop us — except the immutable flag, which the
    // sandbox cannot set (no CAP_LINUX_IMMUTABLE).
    auto next = std::make_unique<Dir>(child);
    if (next->d == nullptr) return ErrnoError(fmt::format("opendir {}", name), errno);
    stack.push_back(std::move(next));
  }
  return complete;
}

}  // namespace

Status RemoveTree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoError(fmt::format("stat {}", path), errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError(fmt::format("unlink {}", path), errno);
    }
    return Status::Ok();
  }
  base::UniqueFd top(OpenDirAt(AT_FDCWD, path.c_str()));
  if (!top) return ErrnoError(fmt::format("open {}", path), errno);
  uint64_t counter = 0;
  for (int pass = 0; pass < 1'000'000; ++pass) {
    ASSIGN_OR_RETURN(bool done, EmptyOnce(top.get(), path, &counter));
    if (done && rmdir(path.c_str()) == 0) return Status::Ok();
    if (done && errno != ENOTEMPTY && errno != EEXIST) {
      return ErrnoError(fmt::format("rmdir {}", path), errno);
    }
  }
  return InternalError(fmt::format("could not empty {}", path));
}

Result<uint64_t> DiskUsage(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return ErrnoError(fmt::format("stat {}", path), errno);
  uint64_t total = static_cast<uint64_t>(st.st_blocks) * 512;
  if (!S_ISDIR(st.st_mode)) return total;
  int top = OpenDirAt(AT_FDCWD, path.c_str());
  if (top < 0) return ErrnoError(fmt::format("open {}", path), errno);
  std::vector<std::unique_ptr<Dir>> stack;
  stack.push_back(std::make_unique<Dir>(top));
  if (stack.back()->d == nullptr) return ErrnoError(fmt::format("opendir {}", path), errno);
  while (!stack.empty()) {
    Dir& cur = *stack.back();
    dirent* e = readdir(cur.d);
    if (e == nullptr) {
      stack.pop_back();
      continue;
    }
    const char* name = e->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
    if (fstatat(cur.fd(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    total += static_cast<uint64_t>(st.st_blocks) * 512;
    if (S_ISDIR(st.st_mode) && stack.size() < 256) {
      int child = OpenDirAt(cur.fd(), name);
      if (child < 0) continue;
      auto next = std::make_unique<Dir>(child);
      if (next->d != nullptr) stack.push_back(std::move(next));
    }
  }
  return total;
}

}  // namespace warren::runtime::native
