#include "os/overlay.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/unique_fd.h"

namespace warren::os {

Status CheckLayerDir(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return NotFoundError(fmt::format("image layer dir {} does not exist", path));
    return ErrnoError(fmt::format("image layer dir {}", path), errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return FailedPreconditionError(fmt::format("image layer {} is not a directory", path));
  }
  return Status::Ok();
}

Status ClearVolatileMarker(const std::string& work) {
  // What ovl_create_volatile_dirty makes inside the workdir's own "work" directory.
  const std::string incompat = work + "/work/incompat";
  const std::string marker = incompat + "/volatile";
  if (unlink((marker + "/dirty").c_str()) != 0 && errno != ENOENT) {
    return ErrnoError(fmt::format("overlay workdir {}: remove {}/dirty", work, marker), errno);
  }
  for (const std::string& dir : {marker, incompat}) {
    if (rmdir(dir.c_str()) == 0 || errno == ENOENT) continue;
    if (errno == ENOTEMPTY) {
      return FailedPreconditionError(fmt::format(
          "overlay workdir {}: {} holds a marker this runtime does not know; the kernel will "
          "refuse to mount it",
          work, dir));
    }
    return ErrnoError(fmt::format("overlay workdir {}: remove {}", work, dir), errno);
  }
  return Status::Ok();
}

Status SyncUpper(const std::string& upper) {
  base::UniqueFd fd(open(upper.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || syncfs(fd.get()) != 0) {
    return ErrnoError(fmt::format("sync upper layer {}", upper), errno);
  }
  return Status::Ok();
}

int MountOverlayRaw(const OverlayLayers& layers, const char* target) noexcept {
  int fs = fsopen("overlay", FSOPEN_CLOEXEC);
  if (fs < 0) return -errno;
  auto fail = [fs]() {
    int err = errno;
    close(fs);
    return -err;
  };
  for (const std::string& lower : layers.lower_top_first) {
    if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", lower.c_str(), 0) != 0) return fail();
  }
  if (fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", layers.upper.c_str(), 0) != 0) return fail();
  if (fsconfig(fs, FSCONFIG_SET_STRING, "workdir", layers.work.c_str(), 0) != 0) return fail();
  if (layers.userxattr && fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", nullptr, 0) != 0) {
    return fail();
  }
  if (layers.volatile_upper && fsconfig(fs, FSCONFIG_SET_FLAG, "volatile", nullptr, 0) != 0) {
    return fail();
  }
  if (fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) return fail();
  int mnt = fsmount(fs, FSMOUNT_CLOEXEC, layers.attrs);
  if (mnt < 0) return fail();
  close(fs);
  if (move_mount(mnt, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    int err = errno;
    close(mnt);
    return -err;
  }
  return mnt;
}

}  // namespace warren::os
