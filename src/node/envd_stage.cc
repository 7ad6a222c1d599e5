#include "node/envd_stage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/scope_guard.h"
#include "base/unique_fd.h"
#include "os/tmpfs.h"

namespace warren::node {

Result<std::string> StageEnvd(const std::string& envd_path, const EnvdStage& stage) {
  if (stage.name.empty() || stage.name.find('/') != std::string::npos || stage.name[0] == '.') {
    return InvalidArgumentError(fmt::format("envd stage: bad name \"{}\"", stage.name));
  }
  base::UniqueFd src(open(envd_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!src) return ErrnoError(fmt::format("open {}", envd_path), errno);
  struct stat st {};
  if (fstat(src.get(), &st) != 0) return ErrnoError(fmt::format("stat {}", envd_path), errno);
  if (!S_ISREG(st.st_mode)) {
    return FailedPreconditionError(fmt::format("{} is not a regular file", envd_path));
  }
  if (st.st_size > stage.max_bytes) {
    return FailedPreconditionError(fmt::format(
        "{} is {} MiB, over the {} MiB a copy in memory may take (built with its debug info?)",
        envd_path, st.st_size >> 20, stage.max_bytes >> 20));
  }
  // within_size: huge pages only where the file covers them whole, so the tail costs no more
  // than its size; the copy is sized first for that.
  RETURN_IF_ERROR(
      os::EnsureOwnTmpfs(stage.dir, 0755, "mode=0755,size=256m,huge=within_size").status());
  const std::string dir = stage.dir + "/" + stage.name;
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError(fmt::format("mkdir {}", dir), errno);
  }
  const std::string path = dir + "/warren-envd";
  const std::string temp = fmt::format("{}/.warren-envd.{}", dir, getpid());
  base::UniqueFd dst(open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755));
  if (!dst) return ErrnoError(fmt::format("create {}", temp), errno);
  auto unlink_temp = base::ScopeExit([&] { unlink(temp.c_str()); });
  if (ftruncate(dst.get(), st.st_size) != 0) {
    return ErrnoError(fmt::format("size {}", temp), errno);
  }
  off_t offset = 0;
  while (offset < st.st_size) {
    ssize_t n = sendfile(dst.get(), src.get(), &offset, static_cast<size_t>(st.st_size - offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("copy {} to {}", envd_path, temp), errno);
    if (n == 0) return DataLossError(fmt::format("{} ended early while it was copied", envd_path));
  }
  if (fchmod(dst.get(), 0755) != 0) return ErrnoError(fmt::format("chmod {}", temp), errno);
  if (rename(temp.c_str(), path.c_str()) != 0) {
    return ErrnoError(fmt::format("rename {} to {}", temp, path), errno);
  }
  unlink_temp.Dismiss();
  return path;
}

void UnstageEnvd(const EnvdStage& stage) {
  if (stage.name.empty()) return;
  const std::string dir = stage.dir + "/" + stage.name;
  unlink((dir + "/warren-envd").c_str());
  rmdir(dir.c_str());
}

}  // namespace warren::node
