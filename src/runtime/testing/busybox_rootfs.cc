#include "runtime/testing/busybox_rootfs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "base/check.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "runtime/native/dir_tree.h"

namespace warren::runtime::testing {

TempDir::TempDir(const std::string& prefix, const std::string& parent) {
  std::string tmpl = fmt::format("{}/{}-XXXXXX", parent, prefix);
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  CHECK_MSG(mkdtemp(buf.data()) != nullptr, "mkdtemp " << tmpl << ": " << strerror(errno));
  path_ = buf.data();
  CHECK(chmod(path_.c_str(), 0711) == 0);
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}

TempDir::~TempDir() {
  if (!path_.empty()) native::RemoveTree(path_).IgnoreError();
}

namespace {

Status Mkdir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return ErrnoError(fmt::format("mkdir {}", path), errno);
  }
  if (chmod(path.c_str(), mode) != 0) return ErrnoError(fmt::format("chmod {}", path), errno);
  return Status::Ok();
}

Status CopyFile(const std::string& from, const std::string& to, mode_t mode) {
  ASSIGN_OR_RETURN(std::string data, base::ReadSmallFile(from, 64 << 20));
  int fd = open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoError(fmt::format("create {}", to), errno);
  ssize_t n = write(fd, data.data(), data.size());
  close(fd);
  if (n != static_cast<ssize_t>(data.size())) return ErrnoError(fmt::format("write {}", to), errno);
  if (chmod(to.c_str(), mode) != 0) return ErrnoError(fmt::format("chmod {}", to), errno);
  return Status::Ok();
}

Result<std::vector<std::string>> Applets() {
  FILE* p = popen("/bin/busybox --list", "r");
  if (p == nullptr) return ErrnoError("popen busybox --list", errno);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  if (rc != 0) return NotFoundError("/bin/busybox --list failed: is busybox-static installed?");
  std::vector<std::string> names;
  for (std::string_view s : base::SplitNonEmpty(out, '\n')) names.emplace_back(s);
  return names;
}

}  // namespace

Status MakeBusyboxLayer(const std::string& dir) {
  RETURN_IF_ERROR(Mkdir(dir, 0755));
  for (const char* d : {"bin", "etc", "proc", "sys", "dev", "root", "home", "usr", "var"}) {
    RETURN_IF_ERROR(Mkdir(fmt::format("{}/{}", dir, d), 0755));
  }
  RETURN_IF_ERROR(Mkdir(dir + "/tmp", 01777));
  RETURN_IF_ERROR(Mkdir(dir + "/root", 0700));
  RETURN_IF_ERROR(Mkdir(dir + "/home/user", 0755));
  if (chown((dir + "/home/user").c_str(), 1000, 1000) != 0) {
    return ErrnoError("chown home/user", errno);
  }
  RETURN_IF_ERROR(CopyFile("/bin/busybox", dir + "/bin/busybox", 0755));
  ASSIGN_OR_RETURN(auto applets, Applets());
  for (const std::string& a : applets) {
    if (a == "busybox") continue;
    std::string link = fmt::format("{}/bin/{}", dir, a);
    if (symlink("busybox", link.c_str()) != 0 && errno != EEXIST) {
      return ErrnoError(fmt::format("symlink {}", link), errno);
    }
  }
  RETURN_IF_ERROR(base::WriteFileAtomically(
      dir + "/etc/passwd",
      "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n"
      "nobody:x:65534:65534:nobody:/:/bin/false\n"));
  RETURN_IF_ERROR(
      base::WriteFileAtomically(dir + "/etc/group", "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n"));
  return Status::Ok();
}

}  // namespace warren::runtime::testing
